/* Fractal library paths (spec §2.6, scaffold/datagen.h): the seed-keyed layout
 * <fract_base_dir>/var<vt>/seed<seed>/{3DIFS_param,instances}/np<point_num>, the
 * Python-str(float) formatting of <vt>, and the legacy-layout warning. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"

void sf_format_pyfloat(double v, char *buf, size_t len)
{
  if (isnan(v)) {
    snprintf(buf, len, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, len, v < 0 ? "-inf" : "inf");
    return;
  }
  /* Shortest digit string that round-trips. */
  char sci[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(sci, sizeof sci, "%.*e", prec - 1, v);
    if (strtod(sci, NULL) == v) break;
  }
  /* sci = [-]d[.ddd]e±XX -> sign, digits, decimal exponent */
  const char *p = sci;
  int neg = 0;
  if (*p == '-') neg = 1, p++;
  char digits[32];
  int nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p >= '0' && *p <= '9') digits[nd++] = *p;
  int exp10 = atoi(p + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--; /* %.*e may keep trailing zeros */
  digits[nd] = '\0';
  int decpt = exp10 + 1; /* value = 0.DIGITS * 10^decpt */
  if (digits[0] == '0') decpt = 1;
  char out[96];
  size_t k = 0;
  if (neg) out[k++] = '-';
  if (decpt <= -4 || decpt > 16) { /* CPython float_repr_style 'short', mode 'r' */
    out[k++] = digits[0];
    if (nd > 1) {
      out[k++] = '.';
      for (int i = 1; i < nd; i++) out[k++] = digits[i];
    }
    k += (size_t)snprintf(out + k, sizeof out - k, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
  } else if (decpt <= 0) {
    out[k++] = '0';
    out[k++] = '.';
    for (int i = 0; i < -decpt; i++) out[k++] = '0';
    for (int i = 0; i < nd; i++) out[k++] = digits[i];
  } else if (decpt >= nd) {
    for (int i = 0; i < nd; i++) out[k++] = digits[i];
    for (int i = nd; i < decpt; i++) out[k++] = '0';
    out[k++] = '.';
    out[k++] = '0';
  } else {
    for (int i = 0; i < decpt; i++) out[k++] = digits[i];
    out[k++] = '.';
    for (int i = decpt; i < nd; i++) out[k++] = digits[i];
  }
  out[k] = '\0';
  snprintf(buf, len, "%s", out);
}

static char *fmt_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_path(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) sf_die(SF_EXIT_FAILURE, "out of memory building a path");
  va_end(ap);
  return s;
}

static const char *base_dir(const sf_config *c)
{
  return c->fract_base_dir && c->fract_base_dir[0] ? c->fract_base_dir : ".";
}

char *sf_fractal_root_dir(const sf_config *c)
{
  char vt[64];
  sf_format_pyfloat(c->variance_threshold, vt, sizeof vt);
  return fmt_path("%s/var%s/seed%ld", base_dir(c), vt, c->seed);
}

char *sf_fractal_param_dir(const sf_config *c)
{
  char *r = sf_fractal_root_dir(c);
  char *p = fmt_path("%s/3DIFS_param/np%ld", r, c->point_num);
  free(r);
  return p;
}

char *sf_fractal_instances_root(const sf_config *c)
{
  char *r = sf_fractal_root_dir(c);
  char *p = fmt_path("%s/instances", r);
  free(r);
  return p;
}

char *sf_fractal_instance_dir(const sf_config *c)
{
  char *r = sf_fractal_instances_root(c);
  char *p = fmt_path("%s/np%ld", r, c->point_num);
  free(r);
  return p;
}

char *sf_fractal_class_instance_dir(const sf_config *c, int cat)
{
  char *r = sf_fractal_instance_dir(c);
  char *p = fmt_path("%s/%06d", r, cat);
  free(r);
  return p;
}

char *sf_fractal_instance_path(const sf_config *c, int cat, int inst)
{
  char *r = sf_fractal_instance_dir(c);
  char *p = fmt_path("%s/%06d/%06d_%04d.npy", r, cat, cat, inst);
  free(r);
  return p;
}

int sf_fractal_warn_legacy(const sf_config *c)
{
  char vt[64];
  sf_format_pyfloat(c->variance_threshold, vt, sizeof vt);
  char *legacy = fmt_path("%s/var%s/3DIFS_param", base_dir(c), vt);
  int found = sf_dir_exists(legacy);
  if (found) {
    char *now = sf_fractal_param_dir(c);
    sf_warn("legacy fractal library layout found at %s; it is ignored (the seed-keyed layout %s is used)", legacy,
            now);
    free(now);
  }
  free(legacy);
  return found;
}
