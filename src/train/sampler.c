/* The training and validation samplers of `scaffold benchmark` (spec §6.6), with upstream's
 * DistributedSampler semantics: the training list is a fresh permutation every epoch (seed
 * SF_SAMPLER_SEED + epoch, our RNG - torch.randperm's stream cannot be bit-matched), padded to a
 * multiple of the replica count by repeating its head, then strided by rank; validation is a
 * contiguous, unpadded block per replica. Replicas are the data-parallel rank groups of a
 * distributed run (scaffold/dist.h: world size / spatial_ranks); one in a single process. */
#include "scaffold/common.h"
#include "scaffold/rng.h"
#include "scaffold/trainer.h"

int sf_sampler_per_replica(int n, int replicas)
{
  SF_ASSERT(n >= 0 && replicas >= 1);
  return sf_ceil_div(n, replicas);
}

int sf_sampler_steps(int n, int replicas, int batch)
{
  SF_ASSERT(batch >= 1);
  return sf_ceil_div(sf_sampler_per_replica(n, replicas), batch);
}

int sf_sampler_train_order(int n, int replicas, int rank, long epoch, int *out)
{
  SF_ASSERT(rank >= 0 && rank < replicas);
  int per = sf_sampler_per_replica(n, replicas);
  if (n == 0) return 0;
  int total = per * replicas;
  int *perm = sf_malloc((size_t)total * sizeof *perm, "sampler permutation");
  for (int i = 0; i < n; i++) perm[i] = i;
  sf_rng r;
  sf_rng_seed(&r, (uint64_t)(SF_SAMPLER_SEED + epoch), SF_SAMPLER_STREAM);
  for (int i = n - 1; i > 0; i--) { /* Fisher-Yates from the top */
    int j = (int)sf_rng_below(&r, (uint64_t)i + 1);
    int t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int i = n; i < total; i++) perm[i] = perm[(i - n) % n]; /* padding: repeat the head */
  int k = 0;
  for (int i = rank; i < total; i += replicas) out[k++] = perm[i];
  free(perm);
  SF_ASSERT(k == per);
  return per;
}

void sf_sampler_val_range(int n, int replicas, int rank, int *start, int *count)
{
  SF_ASSERT(n >= 0 && rank >= 0 && rank < replicas);
  int base = n / replicas, extra = n % replicas;
  *start = rank * base + (rank < extra ? rank : extra);
  *count = base + (rank < extra ? 1 : 0);
}
