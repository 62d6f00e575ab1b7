/* Fuzz target: the YAML configuration loader (src/config), fed the input as a config file.
 * sf_config_init + sf_config_load_file + sf_config_finalize run inside sf_fuzz_try: an error must
 * end in sf_die with status 2 (SF_EXIT_USAGE) and a message that names the file. A config that
 * loads goes through the whole public round trip: print, value/origin strings, write the YAML,
 * read it back (which must not die), and the two configurations must compare equal (config.h
 * promises that); then both are freed, and any leak is reported. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "scaffold/common.h"
#include "scaffold/config.h"

typedef struct {
  sf_config *c;
  const char *path;
} load_args;

static void init_load_finalize(void *arg)
{
  load_args *a = arg;
  sf_config_init(a->c); /* inside the try: a dying load's memory is all recorded and freed */
  sf_config_load_file(a->c, a->path);
  sf_config_finalize(a->c);
}

/* Our own output must load back to the same values. */
static void round_trip(sf_config *c)
{
  sf_config back;
  sf_config_print(c, sf_fuzz_devnull());
  for (int k = 0; k < sf_config_nkeys(); k++) {
    const char *name = sf_config_key_name(k);
    char *v = sf_config_value_string(c, name), *o = sf_config_origin_string(c, name);
    SF_FUZZ_ASSERT(v && o, "key %s: value or origin string is NULL", name);
    free(v);
    free(o);
  }
  const char *out = sf_fuzz_tmp_path("roundtrip.yml");
  SF_FUZZ_ASSERT(sf_config_write_yaml(c, out) == 0, "sf_config_write_yaml(%s) failed", out);
  sf_config_init(&back);
  sf_config_load_file(&back, out); /* outside sf_fuzz_try: an sf_die here aborts */
  sf_config_finalize(&back);
  int ndiff = sf_config_compare(c, &back, stderr);
  SF_FUZZ_ASSERT(ndiff == 0, "%d key(s) differ after write_yaml + load_file (listed above)", ndiff);
  SF_FUZZ_ASSERT(sf_config_write_overrides_yaml(c, out) == 0, "sf_config_write_overrides_yaml failed");
  sf_config_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = sf_fuzz_memfd_path(data, size);
  sf_config c;
  load_args a = {&c, path};
  int status = sf_fuzz_try(init_load_finalize, &a);
  if (status != 0) {
    SF_FUZZ_ASSERT(status == SF_EXIT_USAGE, "a bad config file exited with status %d, expected %d: %s", status,
                   SF_EXIT_USAGE, sf_fuzz_die.msg);
    SF_FUZZ_ASSERT(strstr(sf_fuzz_die.msg, path) != NULL, "the error does not name the file %s: %s", path,
                   sf_fuzz_die.msg);
    return 0;
  }
  round_trip(&c);
  sf_config_free(&c);
  return 0;
}
