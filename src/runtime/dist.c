/* Distribution over MPI ranks (scaffold/dist.h): launch detection and MPI start-up, the
 * replicas x spatial-shards layout, the StarPU-MPI tag scheme, data registration and point-to-point
 * requests (what src/comm's all-reduce is built from), and host-side collectives on private
 * communicators. Without SF_HAVE_MPI every function answers "one rank". */
#include "scaffold/dist.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include <unistd.h>
#include <fcntl.h>

#include "scaffold/common.h"
#include "scaffold/switches.h"

#ifdef SF_HAVE_MPI
#include <mpi.h>
#include <starpu_mpi.h>
#endif

static int g_active;          /* MPI initialised by us, world > 1 */
static int g_rank, g_size = 1;
static int g_spatial = 1, g_replicas = 1;
static int g_finalized __attribute__((unused));
static int g_starpu_mpi __attribute__((unused)); /* without MPI only written; StarPU started through starpu_mpi_init_conf */

#ifdef SF_HAVE_MPI
static MPI_Comm g_world = MPI_COMM_NULL; /* dup of MPI_COMM_WORLD for host collectives */
static MPI_Comm g_group = MPI_COMM_NULL; /* the shards of this rank's replica */
#endif

int sf_dist_launcher_size(void)
{
  static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "PMIX_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) {
      long n = strtol(v, NULL, 10);
      if (n >= 1) return (int)n;
    }
  }
  return 1;
}

int sf_dist_active(void) { return g_active; }
int sf_dist_rank(void) { return g_rank; }
int sf_dist_size(void) { return g_size; }
int sf_dist_is_root(void) { return g_rank == 0; }
int sf_dist_spatial(void) { return g_spatial; }
int sf_dist_replicas(void) { return g_replicas; }
int sf_dist_replica(void) { return g_rank / g_spatial; }
int sf_dist_shard(void) { return g_rank % g_spatial; }
int sf_dist_group_rank(int q) { return sf_dist_replica() * g_spatial + q; }

int64_t sf_dist_tag(int cls, int scope, int obj, int sub)
{
  SF_ASSERT(cls > 0 && cls < 128 && scope >= 0 && scope < (1 << 20) && obj >= 0 && obj < (1 << 24) && sub >= 0 &&
            sub < (1 << 12));
  return ((int64_t)cls << 56) | ((int64_t)scope << 36) | ((int64_t)obj << 12) | (int64_t)sub;
}

#ifdef SF_HAVE_MPI

/* A rank leaving early (sf_die, a failed start) takes the job down instead of leaving the others
 * blocked in a collective. */
static void on_exit_abort(int status, void *arg)
{
  (void)arg;
  if (!g_active || g_finalized) return;
  if (status != 0) {
    fprintf(stderr, "scaffold: rank %d of %d exits with status %d: aborting the other ranks\n", g_rank, g_size,
            status);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
  }
  if (!g_starpu_mpi) {
    g_finalized = 1;
    MPI_Finalize();
  } else {
    MPI_Abort(MPI_COMM_WORLD, 0); /* StarPU-MPI still running: cannot finalize cleanly */
  }
}

/* Under SimGrid's SMPI (a StarPU built by scripts/build-starpu --simgrid-mpi, launched by starpu_smpirun)
 * StarPU-MPI initialises MPI before the program's main, which then runs in a SimGrid actor of its own, not
 * an MPI process: only StarPU-MPI's calls work there, so the rank comes from StarPU-MPI and the host-side
 * collectives are skipped (every rank runs the same config; the values they would agree on, losses and
 * flags, are not computed in a simulation). Every rank shares the process and its stdout, and MPI is
 * StarPU's to finalize. */
static int g_smpi;

static int smpi_init(void)
{
#ifdef STARPU_SIMGRID
  int size = starpu_mpi_world_size(); /* 0 when not launched by starpu_smpirun */
  if (size < 1) return 0;
  g_smpi = 1;
  g_rank = starpu_mpi_world_rank();
  g_size = size;
  g_replicas = size;
  g_active = size > 1;
  g_finalized = 1;
  return 1;
#else
  return 0;
#endif
}

void sf_dist_init(void)
{
  if (g_active || smpi_init() || sf_dist_launcher_size() <= 1) return;
  int provided = 0;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    sf_die(SF_EXIT_FAILURE, "MPI_Init_thread failed");
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_size <= 1) { /* a world of one: behave as a single process */
    MPI_Finalize();
    g_rank = 0;
    g_size = 1;
    return;
  }
  g_active = 1;
  on_exit(on_exit_abort, NULL);
  if (provided < MPI_THREAD_MULTIPLE)
    sf_die(SF_EXIT_FAILURE,
           "the MPI library provides thread level %d, but distributed training needs MPI_THREAD_MULTIPLE (%d): "
           "host-side collectives run while StarPU-MPI's progress thread communicates",
           provided, MPI_THREAD_MULTIPLE);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_world);
  g_replicas = g_size;
  if (g_rank != 0 && !sf_switch_is("SF_DIST_ALL_STDOUT", "1")) {
    fflush(stdout);
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
      dup2(fd, 1);
      close(fd);
    }
  }
}

void sf_dist_check_config(const sf_config *c)
{
  if (!g_active || g_smpi) return;
  /* every key as "name=value\n", in table order */
  size_t cap = 4096, len = 0;
  char *mine = sf_malloc(cap, "config text");
  mine[0] = '\0';
  for (int i = 0; i < sf_config_nkeys(); i++) {
    const char *k = sf_config_key_name(i);
    char *v = sf_config_value_string(c, k);
    size_t need = strlen(k) + strlen(v ? v : "") + 3;
    if (len + need >= cap) {
      while (len + need >= cap) cap *= 2;
      char *p = realloc(mine, cap);
      if (!p) sf_die(SF_EXIT_FAILURE, "out of memory comparing configurations");
      mine = p;
    }
    len += (size_t)snprintf(mine + len, cap - len, "%s=%s\n", k, v ? v : "");
    free(v);
  }
  char *ref = sf_dist_bcast_string(mine);
  int bad = 0;
  if (strcmp(ref, mine) != 0) {
    /* name each differing key */
    char *a = mine, *b = ref;
    while (*a || *b) {
      char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
      size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
      if (la != lb || memcmp(a, b, la) != 0) {
        const char *eq = memchr(a, '=', la);
        size_t kl = eq ? (size_t)(eq - a) : la;
        const char *eqb = memchr(b, '=', lb);
        fprintf(stderr, "scaffold: error: rank %d: config key '%.*s' is %.*s here but %.*s on rank 0\n", g_rank,
                (int)kl, a, eq ? (int)(la - kl - 1) : 0, eq ? eq + 1 : "", eqb ? (int)(lb - (size_t)(eqb - b) - 1) : 0,
                eqb ? eqb + 1 : "");
        bad++;
      }
      a = ea ? ea + 1 : a + la;
      b = eb ? eb + 1 : b + lb;
    }
    fflush(stderr);
  }
  free(ref);
  free(mine);
  int nbad[1] = {bad};
  sf_dist_allreduce_max(nbad, 1);
  if (nbad[0]) {
    if (g_rank == 0)
      fprintf(stderr, "scaffold: error: the %d ranks were given different configurations (see the keys above): every "
              "rank must run the same config file and --set overrides\n", g_size);
    fflush(stderr);
    g_finalized = 1;
    MPI_Finalize();
    exit(SF_EXIT_USAGE);
  }
}

void sf_dist_configure(long spatial_ranks, const char *key)
{
  if (spatial_ranks < 1) spatial_ranks = 1;
  if (!g_active) {
    if (spatial_ranks > 1)
      sf_die(SF_EXIT_USAGE,
             "config key '%s': %ld ranks per volume, but this is a single process; run it under "
             "`mpirun -np N` with N a multiple of %ld (N = replicas x ranks per volume)",
             key, spatial_ranks, spatial_ranks);
    return;
  }
  if (g_size % spatial_ranks != 0) {
    if (g_rank == 0)
      fprintf(stderr, "scaffold: error: config key '%s': %ld ranks per volume do not divide the %d ranks; expected a "
              "divisor of the world size (ranks = replicas x ranks per volume)\n", key, spatial_ranks, g_size);
    fflush(stderr);
    g_finalized = 1;
    MPI_Finalize();
    exit(SF_EXIT_USAGE);
  }
  g_spatial = (int)spatial_ranks;
  g_replicas = g_size / g_spatial;
  if (g_smpi) return; /* no host collectives under SMPI */
  if (g_group != MPI_COMM_NULL) MPI_Comm_free(&g_group);
  MPI_Comm_split(g_world, sf_dist_replica(), sf_dist_shard(), &g_group);
}

static int same_host_ranks(void)
{
  const char *v = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!v) v = getenv("MPI_LOCALNRANKS");
  return v ? atoi(v) : 1;
}

int sf_dist_starpu_init(void *conf)
{
  if (!g_active && !g_smpi) return starpu_init((struct starpu_conf *)conf);
  if (same_host_ranks() > 1 && !getenv("STARPU_WORKERS_NOBIND") && !getenv("STARPU_WORKERS_GETBIND") &&
      !getenv("STARPU_WORKERS_CPUID"))
    setenv("STARPU_WORKERS_NOBIND", "1", 1); /* else every rank pins its workers to the same first cores */
  int ret = starpu_mpi_init_conf(NULL, NULL, 0, MPI_COMM_WORLD, (struct starpu_conf *)conf);
  if (ret == 0) g_starpu_mpi = 1;
  return ret;
}

void sf_dist_starpu_shutdown(void)
{
  if (!g_starpu_mpi) {
    starpu_shutdown();
    return;
  }
  starpu_mpi_shutdown(); /* waits for pending communications, then starpu_shutdown */
  g_starpu_mpi = 0;
}

void sf_dist_finalize(void)
{
  if (g_smpi) return; /* starpu_mpi_shutdown has finalized SMPI, its communicators with it */
  if (!g_active || g_finalized) return;
  SF_ASSERT(!g_starpu_mpi);
  if (g_group != MPI_COMM_NULL) MPI_Comm_free(&g_group);
  if (g_world != MPI_COMM_NULL) MPI_Comm_free(&g_world);
  fflush(stdout);
  fflush(stderr);
  g_finalized = 1;
  MPI_Finalize();
}

void sf_dist_register(sf_handle h, int64_t tag, int owner)
{
  SF_ASSERT(g_active);
  starpu_mpi_data_register((starpu_data_handle_t)h, tag, owner == SF_DIST_PER_NODE ? STARPU_MPI_PER_NODE : owner);
}

void sf_dist_cache_flush(void)
{
  if (g_spatial > 1) starpu_mpi_cache_flush_all_data(MPI_COMM_WORLD);
}

/* ---- host collectives ---- */

/* Waits for a non-blocking collective, sleeping between tests. */
static void wait_polite(MPI_Request *rq)
{
  int done = 0;
  useconds_t nap = 50;
  for (;;) {
    MPI_Test(rq, &done, MPI_STATUS_IGNORE);
    if (done) return;
    usleep(nap);
    if (nap < 2000) nap *= 2;
  }
}

/* Host collectives run between MPI processes: not under SMPI (see smpi_init). */
static int host_coll(void) { return g_active && !g_smpi; }

void sf_dist_allreduce_sum(double *v, int n)
{
  if (!host_coll()) return;
  MPI_Request rq;
  MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, g_world, &rq);
  wait_polite(&rq);
}

void sf_dist_allreduce_max(int *v, int n)
{
  if (!host_coll()) return;
  MPI_Request rq;
  MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_INT, MPI_MAX, g_world, &rq);
  wait_polite(&rq);
}

void sf_dist_allreduce_max_double(double *v, int n)
{
  if (!host_coll()) return;
  MPI_Request rq;
  MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, g_world, &rq);
  wait_polite(&rq);
}

static void bcast_on(MPI_Comm comm, void *buf, size_t bytes)
{
  char *p = buf;
  while (bytes > 0) { /* counts are int */
    int n = bytes > (1u << 30) ? (1 << 30) : (int)bytes;
    MPI_Request rq;
    MPI_Ibcast(p, n, MPI_BYTE, 0, comm, &rq);
    wait_polite(&rq);
    p += n;
    bytes -= (size_t)n;
  }
}

void sf_dist_bcast(void *buf, size_t bytes)
{
  if (host_coll()) bcast_on(g_world, buf, bytes);
}

void sf_dist_group_bcast(void *buf, size_t bytes)
{
  if (host_coll() && g_spatial > 1) bcast_on(g_group, buf, bytes);
}

char *sf_dist_bcast_string(const char *s)
{
  if (!host_coll()) return sf_strdup(s ? s : "");
  uint64_t len = g_rank == 0 ? (uint64_t)strlen(s) : 0;
  sf_dist_bcast(&len, sizeof len);
  char *out = sf_malloc((size_t)len + 1, "broadcast string");
  if (g_rank == 0) memcpy(out, s, (size_t)len);
  sf_dist_bcast(out, (size_t)len);
  out[len] = '\0';
  return out;
}

int sf_dist_agree(int status)
{
  int v[1] = {status};
  sf_dist_allreduce_max(v, 1);
  return v[0];
}

void sf_dist_barrier(void)
{
  if (!host_coll()) return;
  MPI_Request rq;
  MPI_Ibarrier(g_world, &rq);
  wait_polite(&rq);
}

int sf_dist_check_identical(const void *buf, size_t bytes, char *msg, size_t msglen)
{
  if (msg && msglen) msg[0] = '\0';
  if (!host_coll()) return 0;
  uint64_t h = 0xcbf29ce484222325ULL;
  const unsigned char *p = buf;
  for (size_t i = 0; i < bytes; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  uint64_t *all = sf_malloc((size_t)g_size * sizeof *all, "hashes");
  MPI_Request rq;
  MPI_Iallgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, g_world, &rq);
  wait_polite(&rq);
  int ndiff = 0;
  for (int r = 1; r < g_size; r++) ndiff += all[r] != all[0];
  if (ndiff == 0) {
    free(all);
    return 0;
  }
  /* where: rank 0's copy against ours */
  unsigned char *ref = sf_malloc(bytes ? bytes : 1, "reference copy");
  if (g_rank == 0) memcpy(ref, buf, bytes);
  sf_dist_bcast(ref, bytes);
  long first = -1;
  double maxd = 0;
  const float *a = buf, *b = (const float *)ref;
  for (size_t i = 0; i < bytes / sizeof(float); i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (a[i] != b[i] && first < 0) first = (long)i;
    if (d > maxd || isnan(d)) maxd = d;
  }
  double worst[1] = {maxd};
  long firsts[1] = {first};
  MPI_Allreduce(MPI_IN_PLACE, worst, 1, MPI_DOUBLE, MPI_MAX, g_world);
  MPI_Allreduce(MPI_IN_PLACE, firsts, 1, MPI_LONG, MPI_MAX, g_world);
  if (msg && msglen) {
    size_t k = (size_t)snprintf(msg, msglen, "%d of %d ranks differ from rank 0 (FNV-1a 64:", ndiff, g_size);
    for (int r = 0; r < g_size && k < msglen; r++)
      k += (size_t)snprintf(msg + k, msglen - k, " rank %d %016llx", r, (unsigned long long)all[r]);
    if (k < msglen)
      snprintf(msg + k, msglen - k, "); largest float difference %.9g, a differing float at index %ld", worst[0],
               firsts[0]);
  }
  free(ref);
  free(all);
  return -1;
}

/* ---- StarPU-MPI point-to-point (the all-reduce of src/comm) ---- */

void sf_dist_comm_sent(double *sent)
{
  size_t *amounts = sf_calloc((size_t)g_size, sizeof *amounts, "communication counters");
  if (g_active) starpu_mpi_comm_amounts_retrieve(amounts);
  for (int r = 0; r < g_size; r++) sent[r] = (double)amounts[r];
  free(amounts);
}

int sf_dist_simulated(void) { return g_smpi; }

void sf_dist_isend(sf_handle h, int dest, int64_t tag)
{
  SF_ASSERT(g_active);
  int rc = starpu_mpi_isend_detached((starpu_data_handle_t)h, dest, tag, MPI_COMM_WORLD, NULL, NULL);
  if (rc != 0) SF_ABORT("starpu_mpi_isend_detached to rank %d failed (%d)", dest, rc);
}

void sf_dist_irecv(sf_handle h, int src, int64_t tag)
{
  SF_ASSERT(g_active);
  int rc = starpu_mpi_irecv_detached((starpu_data_handle_t)h, src, tag, MPI_COMM_WORLD, NULL, NULL);
  if (rc != 0) SF_ABORT("starpu_mpi_irecv_detached from rank %d failed (%d)", src, rc);
}

#else /* no MPI in this build */

void sf_dist_init(void)
{
  int n = sf_dist_launcher_size();
  if (n > 1)
    sf_die(SF_EXIT_USAGE, "launched as one of %d MPI ranks, but this build has no MPI (StarPU-MPI and mpi-c were not "
           "found when it was configured): rebuild with libstarpu-dev's starpumpi and Open MPI, or run one process", n);
}
void sf_dist_check_config(const sf_config *c) { (void)c; }
void sf_dist_configure(long spatial_ranks, const char *key)
{
  if (spatial_ranks > 1)
    sf_die(SF_EXIT_USAGE, "config key '%s': %ld ranks per volume need a build with MPI and mpirun", key,
           spatial_ranks);
}
int sf_dist_starpu_init(void *conf) { return starpu_init((struct starpu_conf *)conf); }
void sf_dist_starpu_shutdown(void) { starpu_shutdown(); }
void sf_dist_finalize(void) {}
void sf_dist_register(sf_handle h, int64_t tag, int owner)
{
  (void)h;
  (void)tag;
  (void)owner;
  SF_ABORT("sf_dist_register without MPI");
}
void sf_dist_cache_flush(void) {}
void sf_dist_allreduce_sum(double *v, int n) { (void)v; (void)n; }
void sf_dist_allreduce_max(int *v, int n) { (void)v; (void)n; }
void sf_dist_allreduce_max_double(double *v, int n) { (void)v; (void)n; }
void sf_dist_bcast(void *buf, size_t bytes) { (void)buf; (void)bytes; }
void sf_dist_group_bcast(void *buf, size_t bytes) { (void)buf; (void)bytes; }
char *sf_dist_bcast_string(const char *s) { return sf_strdup(s ? s : ""); }
int sf_dist_agree(int status) { return status; }
void sf_dist_barrier(void) {}
int sf_dist_check_identical(const void *buf, size_t bytes, char *msg, size_t msglen)
{
  (void)buf;
  (void)bytes;
  if (msg && msglen) msg[0] = '\0';
  return 0;
}
void sf_dist_comm_sent(double *sent) { sent[0] = 0; }
int sf_dist_simulated(void) { return 0; }
void sf_dist_isend(sf_handle h, int dest, int64_t tag)
{
  (void)h;
  (void)tag;
  SF_ABORT("sf_dist_isend to rank %d without MPI", dest);
}
void sf_dist_irecv(sf_handle h, int src, int64_t tag)
{
  (void)h;
  (void)tag;
  SF_ABORT("sf_dist_irecv from rank %d without MPI", src);
}

#endif
