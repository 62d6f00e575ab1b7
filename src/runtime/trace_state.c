/* The trace's state (trace_internal.h) and its view of StarPU's machine, shared by trace.c and
 * trace_stats.c: what kind each worker is, the names of the memory nodes, and the bytes moved on
 * every bus since the trace began. */
#include <stdio.h>

#include "trace_internal.h"

sf_trace_state sf_trace_g;
sf_trace_summary sf_trace_g_summary;

void sf_trace_last_summary(sf_trace_summary *out) { *out = sf_trace_g_summary; }

/* Adds what StarPU's bus statistics counted since the last call (reading them resets them). */
void sf_trace_bus_poll(void)
{
  int nb = starpu_bus_get_count();
  if (nb > SF_TRACE_MAX_BUS) nb = SF_TRACE_MAX_BUS;
  if (nb > T.nbus) T.nbus = nb;
  for (int b = 0; b < nb; b++) {
    struct starpu_profiling_bus_info bi;
    if (starpu_bus_get_profiling_info(b, &bi) != 0) continue;
    T.bus_bytes[b] += bi.transferred_bytes;
    T.bus_count[b] += bi.transfer_count;
  }
}

long long sf_trace_bus_total(long *count)
{
  long long bytes = 0;
  long n = 0;
  for (int b = 0; b < T.nbus; b++) {
    bytes += T.bus_bytes[b];
    n += T.bus_count[b];
  }
  if (count) *count = n;
  return bytes;
}

/* "CPU" / "OpenCL" / "CUDA" for a worker, "RAM" / "OpenCL" / "CUDA" ... for a memory node */
const char *sf_trace_worker_kind(int w)
{
  switch (starpu_worker_get_type(w)) {
  case STARPU_CPU_WORKER: return "CPU";
  case STARPU_CUDA_WORKER: return "CUDA";
  case STARPU_OPENCL_WORKER: return "OpenCL";
  default: return "other";
  }
}

void sf_trace_node_name(int node, char *buf, size_t len)
{
  if (starpu_memory_node_get_name((unsigned)node, buf, len) < 0 || !buf[0]) snprintf(buf, len, "node %d", node);
}
