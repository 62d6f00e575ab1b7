/* Distribution over MPI ranks (docs/architecture.md §6, spec §6.9): `mpirun -np N scaffold benchmark -c CFG`.
 * Ranks = replicas x spatial shards: rank r is shard (r % spatial_ranks) of replica
 * (r / spatial_ranks). A replica trains on its own share of every epoch (upstream's
 * DistributedSampler); the spatial_ranks shards of a replica own contiguous depth slabs of every
 * activation, and their tasks go through starpu_mpi_task_insert (sf_topt.mpi, scaffold/tasks.h), so
 * halos, GroupNorm statistics, loss and Dice partial sums move through StarPU-MPI. Gradients are
 * summed over every rank by an all-reduce built from StarPU-MPI point-to-point requests and combine
 * tasks (scaffold/comm.h: recursive doubling, per parameter tensor, overlapping the backward pass),
 * then scaled by 1/replicas: the sum over spatial shards averaged over replicas, as upstream's DDP +
 * DistConv.
 *
 * This header is the runtime's part (src/runtime/dist.c): start-up and shut-down, layout queries,
 * StarPU-MPI registration and requests, host-side collectives. The graph-level algorithms built on
 * it (all-reduce, halo exchange) are in src/comm.
 *
 * A single process (no mpirun, or a world of one) never touches MPI: every query below answers
 * "one rank" and the task graph takes the path it always took.
 *
 * Host-side collectives (config check, run directory, epoch sums, stop flags, checkpoint
 * broadcast) use raw MPI on private duplicated communicators; MPI is initialised with
 * MPI_THREAD_MULTIPLE so they are legal while StarPU-MPI's progress thread runs. A rank that
 * exits with a non-zero status before sf_dist_finalize aborts the whole job (MPI_Abort), so no
 * rank is left waiting. */
#ifndef SF_DIST_H
#define SF_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "scaffold/config.h"
#include "scaffold/tensor.h"

/* The owner value of data replicated on every rank (STARPU_MPI_PER_NODE). */
#define SF_DIST_PER_NODE (-2)

/* ---- start-up and shut-down ---- */

/* World size announced by the launcher's environment (Open MPI, MPICH/Hydra, MVAPICH), 1 if none. */
int sf_dist_launcher_size(void);
/* Initialises MPI (MPI_THREAD_MULTIPLE) when launched with more than one rank; a no-op otherwise.
 * On non-root ranks stdout is redirected to /dev/null (only rank 0 reports) unless
 * SF_DIST_ALL_STDOUT=1. Dies (status 2) if launched with several ranks by a build without MPI. */
void sf_dist_init(void);
/* Checks that every rank got the same configuration (every key); on a mismatch each differing rank
 * names the keys and values, and every rank exits with status 2. No-op in a single process. */
void sf_dist_check_config(const sf_config *c);
/* Fixes the layout: spatial_ranks shards per replica, world/spatial_ranks replicas. Dies with
 * status 2 (on every rank) if spatial_ranks does not divide the world size. */
void sf_dist_configure(long spatial_ranks, const char *key); /* key: the config key that set it, for messages */
/* Starts StarPU (starpu_mpi_init_conf when distributed, else starpu_init); conf is a
 * struct starpu_conf *. With several ranks on one host and no binding variable set, sets
 * STARPU_WORKERS_NOBIND=1 (threads inherit the launcher's per-rank binding instead of every rank
 * pinning its workers to the first cores). Returns starpu's status. */
int sf_dist_starpu_init(void *conf);
void sf_dist_starpu_shutdown(void);
/* MPI_Finalize (StarPU must be shut down). After it, exits no longer abort the job. */
void sf_dist_finalize(void);

/* ---- layout ---- */
int sf_dist_active(void);   /* world size > 1 */
int sf_dist_rank(void);     /* 0 in a single process */
int sf_dist_size(void);     /* 1 in a single process */
int sf_dist_is_root(void);  /* rank 0: the only rank that writes outputs */
int sf_dist_spatial(void);  /* shards per replica (1 = pure data parallelism) */
int sf_dist_replicas(void); /* size / spatial */
int sf_dist_replica(void);  /* rank / spatial */
int sf_dist_shard(void);    /* rank % spatial */
/* World rank of shard q of this rank's replica (q = 0: the replica's root). */
int sf_dist_group_rank(int q);

/* ---- StarPU-MPI data ----
 * Tag scheme (int64, deterministic, unique per registered handle on a rank):
 *   bits 56..62 class, 36..55 scope (the replica for group data, the world rank for per-rank
 *   data), 12..35 object (tensor or buffer counter, parameter index), 0..11 sub-index (slab,
 *   halo plane 2k / 2k+1). */
enum {
  SF_TAG_SLAB = 1,      /* activation slab: scope replica, object tensor id, sub slab */
  SF_TAG_HALO = 2,      /* halo piece: scope replica, object tensor id, sub (axis * 2 + side) * SF_MAX_SLABS + k */
  SF_TAG_SMALL = 3,     /* partial sums, statistics: scope replica, object counter */
  SF_TAG_GRAD = 4,      /* a rank's gradient tensor: scope world rank, object parameter */
  SF_TAG_GPART = 5,     /* per-slab gradient partial (more_determinism): scope replica, object k*P+p */
  SF_TAG_NODE = 6,      /* per-node replicated data (parameters, class weights): object counter */
  SF_TAG_ALLREDUCE = 7, /* all-reduce receive buffers / messages: object parameter, sub step parity */
};
int64_t sf_dist_tag(int cls, int scope, int obj, int sub);
/* starpu_mpi_data_register(h, tag, owner); owner = a world rank or SF_DIST_PER_NODE. */
void sf_dist_register(sf_handle h, int64_t tag, int owner);
/* After a step has been submitted (spatial runs): forget every cached copy of remote data, so the
 * next step receives fresh halos and partial sums (starpu_mpi_cache_flush_all_data). */
void sf_dist_cache_flush(void);

/* ---- StarPU-MPI point-to-point requests (what src/comm's all-reduce is built from) ----
 * Detached send / receive of a handle's data to / from world rank `dest` / `src` with `tag`
 * (StarPU orders them with the handle's tasks); dies naming the rank if StarPU-MPI refuses. */
void sf_dist_isend(sf_handle h, int dest, int64_t tag);
void sf_dist_irecv(sf_handle h, int src, int64_t tag);

/* ---- host-side collectives (no-ops / identity in a single process) ---- */
void sf_dist_allreduce_sum(double *v, int n);     /* over every rank */
void sf_dist_allreduce_max(int *v, int n);        /* over every rank */
void sf_dist_allreduce_max_double(double *v, int n); /* over every rank */
void sf_dist_bcast(void *buf, size_t bytes);      /* from rank 0 to every rank */
void sf_dist_group_bcast(void *buf, size_t bytes); /* from shard 0 to the shards of its replica */
/* A copy of rank 0's string on every rank (malloc'ed; s may be NULL on other ranks). */
char *sf_dist_bcast_string(const char *s);
/* The largest status over every rank: use it wherever one rank's failure must stop them all. */
int sf_dist_agree(int status);
/* A barrier that sleeps while it waits (a rank waiting for rank 0's data generation must not
 * spin on a core that rank 0 needs). */
void sf_dist_barrier(void);
/* 0 if buf (bytes) is bitwise identical on every rank; otherwise -1, with the ranks that differ
 * from rank 0 and how (FNV-1a 64 hashes, first differing float) in msg. */
int sf_dist_check_identical(const void *buf, size_t bytes, char *msg, size_t msglen);
/* Bytes StarPU-MPI has sent from this rank to each rank so far (sent[0..size-1], all of its traffic:
 * halos, partial sums, the all-reduce), as its STARPU_COMM_STATS=1 counters hold them; zeros when those
 * counters are off or in a single process. */
void sf_dist_comm_sent(double *sent);
/* 1 when the ranks are actors of one process under SimGrid's SMPI (scripts/build-sim --mpi). */
int sf_dist_simulated(void);

#endif
