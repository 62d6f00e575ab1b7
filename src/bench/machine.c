/* The machine as the harness sees it, through hwloc: the cores this process may use (for the
 * per-device and progression partitions), a topology summary for result files (packages,
 * cores, PUs, NUMA nodes, L3), and whether CUDA workers can exist (for `requires: cuda`). */
#include <dirent.h>
#include <hwloc.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/switches.h"

#if __has_include(<starpu_config.h>)
#include <starpu_config.h>
#endif

/* NVIDIA GPUs the driver lists (/proc/driver/nvidia/gpus/<bus id>), and the StarPU build the
 * harness was compiled against: version and the features its starpu_config.h enables. */
static void add_gpus_and_starpu(cJSON *j)
{
  int ngpu = 0;
  DIR *d = opendir("/proc/driver/nvidia/gpus");
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) ngpu += e->d_name[0] != '.';
    closedir(d);
  }
  cJSON_AddNumberToObject(j, "nvidia_gpus", ngpu);
#ifdef STARPU_MAJOR_VERSION
  char v[48];
  snprintf(v, sizeof v, "%d.%d.%d", STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION, STARPU_RELEASE_VERSION);
  cJSON_AddStringToObject(j, "starpu_version", v);
  cJSON *f = cJSON_AddArrayToObject(j, "starpu_features");
#ifdef STARPU_USE_CPU
  cJSON_AddItemToArray(f, cJSON_CreateString("CPU"));
#endif
#ifdef STARPU_USE_OPENCL
  cJSON_AddItemToArray(f, cJSON_CreateString("OpenCL"));
#endif
#ifdef STARPU_USE_CUDA
  cJSON_AddItemToArray(f, cJSON_CreateString("CUDA"));
#endif
#ifdef STARPU_USE_MPI
  cJSON_AddItemToArray(f, cJSON_CreateString("MPI"));
#endif
#ifdef STARPU_HAVE_GLPK_H
  cJSON_AddItemToArray(f, cJSON_CreateString("GLPK"));
#endif
#ifdef STARPU_USE_FXT
  cJSON_AddItemToArray(f, cJSON_CreateString("FxT"));
#endif
#ifdef STARPU_MAXCPUS
  cJSON_AddNumberToObject(j, "starpu_maxcpus", STARPU_MAXCPUS);
#endif
#endif
}

static hwloc_topology_t load_topology(void)
{
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0)
    sf_die(SF_EXIT_FAILURE, "hwloc could not load the machine topology");
  return t;
}

void sf_machine_cores_get(sf_machine_cores *m)
{
  memset(m, 0, sizeof *m);
  hwloc_topology_t t = load_topology();
  hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
  if (hwloc_get_cpubind(t, allowed, HWLOC_CPUBIND_PROCESS) != 0)
    hwloc_bitmap_copy(allowed, hwloc_topology_get_allowed_cpuset(t));
  int ncores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  int use_pus = ncores <= 0; /* some virtual machines expose PUs only */
  int nobj = use_pus ? hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU) : ncores;
  m->pu_logical = sf_calloc((size_t)nobj + 1, sizeof(int), "cores");
  m->pu_os = sf_calloc((size_t)nobj + 1, sizeof(int), "cores");
  m->core_pus_os = sf_calloc((size_t)nobj + 1, sizeof(int *), "cores");
  for (int i = 0; i < nobj; i++) {
    hwloc_obj_t core = hwloc_get_obj_by_type(t, use_pus ? HWLOC_OBJ_PU : HWLOC_OBJ_CORE, (unsigned)i);
    hwloc_bitmap_t set = hwloc_bitmap_dup(core->cpuset);
    hwloc_bitmap_and(set, set, allowed);
    if (hwloc_bitmap_iszero(set)) {
      hwloc_bitmap_free(set);
      continue;
    }
    hwloc_obj_t pu = hwloc_get_next_obj_inside_cpuset_by_type(t, set, HWLOC_OBJ_PU, NULL);
    int npu = hwloc_bitmap_weight(set);
    int *pus = sf_malloc(((size_t)npu + 1) * sizeof(int), "core PUs"), k = 0, id;
    hwloc_bitmap_foreach_begin(id, set) { pus[k++] = id; }
    hwloc_bitmap_foreach_end();
    pus[k] = -1;
    m->pu_logical[m->ncores] = (int)pu->logical_index;
    m->pu_os[m->ncores] = (int)pu->os_index;
    m->core_pus_os[m->ncores] = pus;
    m->ncores++;
    hwloc_bitmap_free(set);
  }
  m->npackages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  m->nnuma = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  if (m->npackages < 1) m->npackages = 1;
  if (m->nnuma < 1) m->nnuma = 1;
  hwloc_bitmap_free(allowed);
  hwloc_topology_destroy(t);
}

void sf_machine_cores_free(sf_machine_cores *m)
{
  for (int i = 0; i < m->ncores; i++) free(m->core_pus_os[i]);
  free(m->core_pus_os);
  free(m->pu_logical);
  free(m->pu_os);
  memset(m, 0, sizeof *m);
}

cJSON *sf_machine_json(void)
{
  hwloc_topology_t t = load_topology();
  cJSON *j = cJSON_CreateObject();
  hwloc_obj_t pkg = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
  const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
  if (!model) model = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "CPUModel");
  cJSON_AddStringToObject(j, "cpu_model", model ? model : "unknown");
  cJSON_AddNumberToObject(j, "packages", hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE));
  cJSON_AddNumberToObject(j, "numa_nodes", hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE));
  cJSON_AddNumberToObject(j, "cores", hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE));
  cJSON_AddNumberToObject(j, "pus", hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU));
  hwloc_bitmap_t bound = hwloc_bitmap_alloc();
  char *list = NULL;
  if (hwloc_get_cpubind(t, bound, HWLOC_CPUBIND_PROCESS) == 0 && hwloc_bitmap_list_asprintf(&list, bound) >= 0) {
    cJSON_AddStringToObject(j, "allowed_pus", list);
    free(list);
  }
  hwloc_bitmap_free(bound);
  int nl3 = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_L3CACHE);
  cJSON_AddNumberToObject(j, "l3_caches", nl3);
  hwloc_obj_t l3 = nl3 > 0 ? hwloc_get_obj_by_type(t, HWLOC_OBJ_L3CACHE, 0) : NULL;
  cJSON_AddNumberToObject(j, "l3_kib", l3 ? (double)(l3->attr->cache.size / 1024) : 0);
  hwloc_uint64_t mem = hwloc_get_root_obj(t)->total_memory;
  cJSON_AddNumberToObject(j, "memory_mib", (double)(mem / (1024 * 1024)));
  hwloc_topology_destroy(t);
  add_gpus_and_starpu(j);
  return j;
}

int sf_machine_has_cuda(char *why, size_t n)
{
  const char *force = sf_switch("SF_HAVE_CUDA");
  if (force) {
    int yes = strcmp(force, "0") != 0;
    snprintf(why, n, "SF_HAVE_CUDA=%s", force);
    return yes;
  }
#ifndef STARPU_USE_CUDA
  snprintf(why, n, "this StarPU build has no CUDA support (STARPU_USE_CUDA undefined)");
  return 0;
#else
  const char *ncuda = getenv("STARPU_NCUDA");
  if (ncuda && !strcmp(ncuda, "0")) {
    snprintf(why, n, "STARPU_NCUDA=0");
    return 0;
  }
  int found = sf_file_exists("/dev/nvidia0");
  DIR *dir = opendir("/proc/driver/nvidia/gpus");
  if (dir) {
    struct dirent *e;
    while ((e = readdir(dir)))
      if (e->d_name[0] != '.') found = 1;
    closedir(dir);
  }
  if (!found) {
    snprintf(why, n, "no NVIDIA GPU found (/dev/nvidia0, /proc/driver/nvidia/gpus)");
    return 0;
  }
  snprintf(why, n, "CUDA-enabled StarPU and an NVIDIA GPU");
  return 1;
#endif
}

int sf_machine_max_cpu_workers(void)
{
#ifdef STARPU_MAXCPUS
  return STARPU_MAXCPUS;
#else
  return 1 << 20;
#endif
}
