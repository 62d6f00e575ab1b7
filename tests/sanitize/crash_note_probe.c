/* Dies on purpose, for tests/sanitize/test_crash_note.sh: "abort" calls abort(), "segv" raises
 * SIGSEGV, "use-after-free" writes to a freed heap block (an ASan report, then abort). "asan" exits 0 in an
 * AddressSanitizer build and 1 otherwise. Linked with tests/common/crash_note.c. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define PROBE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PROBE_ASAN 1
#endif
#endif
#ifndef PROBE_ASAN
#define PROBE_ASAN 0
#endif

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "asan")) return PROBE_ASAN ? 0 : 1;
  if (!strcmp(mode, "abort")) abort();
  if (!strcmp(mode, "segv")) raise(SIGSEGV);
  if (!strcmp(mode, "use-after-free")) {
    void *volatile block = malloc(8); /* read back through a volatile: the store below stays */
    free(block);
    ((volatile char *)block)[argc] = 1; /* ASan reports it and aborts (abort_on_error=1) */
  }
  fprintf(stderr, "crash_note_probe: unknown mode '%s' or no crash (modes: asan, abort, segv, use-after-free)\n", mode);
  return 2;
}
