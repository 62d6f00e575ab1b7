/* AddressSanitizer builds only: register blocks whose inner loops are left uninstrumented check, once
 * on entry, every byte range those loops read or write (their footprint) instead.
 *
 * Why: ASan checks each vector load and store of a register block inline (a shadow load, a compare
 * and a branch per access, and the spills they force), which made the direct convolutions ~10x
 * slower under ASan than in the normal build (graph_batch_sequential: 23.6 s against 2.2 s, 88 % of
 * it in the conv tiles) and the sanitizer suite the largest part of .ci/run. Checking the footprint
 * computed from the same expressions as the loops' extents finds the same out-of-bounds accesses:
 * a poisoned byte anywhere in a range is reported as a standard ASan error (__asan_report_error,
 * with the allocation's stack) at the block's entry, before any of its accesses.
 * tests/sanitize/test_footprint_overflow.c checks that a short buffer is reported.
 * Outside ASan builds SF_NO_ASAN is empty and SF_FOOTPRINT() does nothing. */
#ifndef SF_SANITIZE_FOOTPRINT_H
#define SF_SANITIZE_FOOTPRINT_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define SF_FOOTPRINT_CHECKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SF_FOOTPRINT_CHECKS 1
#endif
#endif

#ifdef SF_FOOTPRINT_CHECKS
#include <sanitizer/asan_interface.h>
#define SF_NO_ASAN __attribute__((no_sanitize_address))
/* Reports the first poisoned byte of [p, p + nfloats) as an ASan error (which aborts the process). */
static __attribute__((noinline, unused)) void sf_footprint_check(const float *p, size_t nfloats, int is_write)
{
  if (!nfloats) return;
  void *bad = __asan_region_is_poisoned((void *)p, nfloats * sizeof(float));
  if (bad)
    __asan_report_error(__builtin_return_address(0), __builtin_frame_address(0), __builtin_frame_address(0), bad,
                        is_write, sizeof(float));
}
#define SF_FOOTPRINT(p, nfloats, is_write) sf_footprint_check((p), (nfloats), (is_write))
#else
#define SF_NO_ASAN
#define SF_FOOTPRINT(p, nfloats, is_write) ((void)(p), (void)(nfloats), (void)(is_write))
#endif

#endif
