/* Sanitizer build with GCC only (cmake/SanitizeUbsanLog.cmake adds this file to every executable).
 * GCC's -fsanitize=address,undefined loads the shared libubsan beside libasan; that libubsan never
 * applies UBSAN_OPTIONS' log_path, so its reports went to stderr and scripts/sanitizer-logs missed
 * them. This constructor hands log_path to libubsan's own copy of __sanitizer_set_report_path (the
 * process-wide symbol of that name is libasan's, whose log_path ASAN_OPTIONS sets already). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

__attribute__((constructor)) static void sf_ubsan_log_path(void) {
  const char *options = getenv("UBSAN_OPTIONS");
  const char *key = options ? strstr(options, "log_path=") : NULL;
  if (!key)
    return;
  key += strlen("log_path=");
  char path[4096];
  size_t len = strcspn(key, ":");
  if (len == 0 || len >= sizeof path)
    return;
  memcpy(path, key, len);
  path[len] = '\0';
  void *ubsan = dlopen("libubsan.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!ubsan)
    return; /* UBSan linked some other way (clang's combined runtime honours log_path itself) */
  void (*set_report_path)(const char *) = (void (*)(const char *))dlsym(ubsan, "__sanitizer_set_report_path");
  if (set_report_path)
    set_report_path(path);
  dlclose(ubsan);
}
