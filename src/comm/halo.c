/* The halo exchange of spatially distributed tensors (scaffold/comm.h): at every boundary between
 * blocks of different shards along an axis, one copy task per direction fills the halo pieces the
 * runtime registered (sf_tensor_init_dist): a plane copy along depth (codelets/halo_plane.c), a row
 * or column layer copy between H/W blocks (codelets/halo_blocks.c), so StarPU-MPI moves one layer,
 * not a block. A graph-level step above the codelets; the tasks go through StarPU-MPI
 * (sf_topt.mpi = 1) and run on the owner of each piece. */
#include "scaffold/comm.h"

#include "scaffold/tasks.h"

void sf_halo_exchange_axis(sf_tensor *t, int axis)
{
  /* the neighbours wait for these copies, hence the high priority */
  static const sf_topt border = {.prio = 2, .mpi = 1};
  for (int k = 0; k < t->nslabs; k++)
    for (int side = SF_SIDE_LO; side <= SF_SIDE_HI; side++) {
      sf_handle piece = t->halo[axis][side][k];
      if (!piece) continue;
      sf_handle from = t->slab[sf_tensor_neighbour(t, k, axis, side)];
      int last = side == SF_SIDE_LO; /* the lower neighbour's last layer, the upper one's first */
      if (axis == SF_AXIS_D) insert_task_plane_copy(&border, piece, from, last);
      else insert_task_layer_copy(&border, piece, from, axis, last, t->C);
    }
}

void sf_halo_exchange(sf_tensor *t) { sf_halo_exchange_axis(t, SF_AXIS_D); }
