/* Reproduces the LeakSanitizer crash at exit (hetero_mix aborting after all its checks passed)
 * without PoCL: the main thread's dynamic TLS block of a dlopen'ed library (argv[1]) is placed 16
 * bytes into a page, the layout that GCC 12's (and LLVM <= 16's) __tls_get_addr interceptor takes for
 * a glibc <= 2.24 block with a {size, start} header in front. What it reads there is ASan's own chunk
 * header, so LSan's end-of-process scan of that "DTLS range" faults ("Tracer caught signal 11",
 * "LeakSanitizer has encountered a fatal error") unless ASAN_OPTIONS has intercept_tls_get_addr=0.
 * ASan hands out the 32-byte chunks that an 8-byte malloc uses at increasing addresses of a page, so
 * the probe allocates 8-byte blocks until the next one starts a page, then touches the TLS variable.
 * Exits 0 after printing where the block went; 3 when the block did not land 16 bytes into a page
 * (the allocator's layout differs: the probe then shows nothing); 2 on a dlopen error. The leak check
 * (and the crash, if any) comes after main returns. tests/sanitize/test_dtls.sh runs it. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PAGE 4096
#define MAX_BLOCKS 256

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: dtls_probe LIBRARY.so\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "dtls_probe: dlopen %s: %s\n", argv[1], dlerror());
    return 2;
  }
  long *(*addr_of)(void) = (long *(*)(void))dlsym(lib, "sf_dtls_probe_addr");
  if (!addr_of) {
    fprintf(stderr, "dtls_probe: %s has no sf_dtls_probe_addr\n", argv[1]);
    return 2;
  }
  void *kept[MAX_BLOCKS];
  int n = 0;
  while (n < MAX_BLOCKS) {
    kept[n] = malloc(8);
    if (((uintptr_t)kept[n++] + 32) % PAGE == 16) break; /* the next 8-byte block starts a page */
  }
  long *v = addr_of(); /* the main thread's first access: ld.so mallocs the 8-byte TLS block */
  *v = 1;
  unsigned long offset = (unsigned long)((uintptr_t)v % PAGE);
  for (int i = 0; i < n; i++) free(kept[i]);
  printf("dtls_probe: dynamic TLS block of %s at %p, %lu bytes into its page (after %d 8-byte blocks)\n", argv[1],
         (void *)v, offset, n);
  fflush(stdout); /* before the leak check, which may abort */
  if (offset != 16) {
    fprintf(stderr, "dtls_probe: the TLS block is %lu bytes into its page, not 16: this allocator's layout "
                    "differs, the probe cannot set up the crash\n", offset);
    return 3;
  }
  return 0;
}
