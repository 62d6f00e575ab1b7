/* Sanitizer build only: overflows a signed int on purpose (INT_MAX + argc), so that
 * test_ubsan_log.sh can check where UBSan's report goes. */
#include <limits.h>
#include <stdio.h>

int main(int argc, char **argv) {
  (void)argv;
  int x = INT_MAX;
  x += argc; /* undefined behaviour: UBSan reports "signed integer overflow" and halts */
  printf("%d\n", x);
  return 0;
}
