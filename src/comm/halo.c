/* The halo exchange of spatially distributed tensors (scaffold/comm.h): at every boundary between
 * slabs of different shards, one plane-copy task per direction (codelets/halo_plane.c) fills the
 * one-plane halo handles the runtime registered (sf_tensor_init_dist), so StarPU-MPI moves a plane,
 * not a slab. A graph-level step above the codelets; the tasks go through StarPU-MPI (sf_topt.mpi = 1)
 * and run on the owner of each plane. */
#include "scaffold/comm.h"

#include "scaffold/tasks.h"

void sf_halo_exchange(sf_tensor *t)
{
  /* halo planes exist only between the slabs of different ranks (a distributed tensor); the
   * neighbours wait for these copies, hence the high priority */
  static const sf_topt border = {.prio = 2, .mpi = 1};
  for (int k = 1; k < t->nslabs; k++)
    if (t->plane_lo[k]) {
      insert_task_plane_copy(&border, t->plane_lo[k], t->slab[k - 1], 1);
      insert_task_plane_copy(&border, t->plane_hi[k - 1], t->slab[k], 0);
    }
}
