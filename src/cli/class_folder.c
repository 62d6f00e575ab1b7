/* Where `scaffold tune` and `scaffold calibrate` write a machine class (class_folder.h): the user's classes
 * folder by default, perfmodels/ of the source tree with --ship; a new folder gets a MATCH that selects
 * machines like this one (scaffold/machine_class.h). */
#include "class_folder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/machine_class.h"

int sf_class_folder_resolve(const char *name, int ship, sf_class_folder *f, char *err, size_t errlen)
{
  memset(f, 0, sizeof *f);
  if (name) {
    if (!sf_machine_class_name_ok(name)) {
      snprintf(err, errlen, "class name '%s' must be 1-63 characters of [A-Za-z0-9._-], not starting with '.'", name);
      return -1;
    }
    snprintf(f->name, sizeof f->name, "%s", name);
  } else {
    sf_machine_class mc;
    char reasons[1024];
    if (sf_machine_class_find(&mc, NULL, reasons, sizeof reasons)) {
      snprintf(f->name, sizeof f->name, "%s", mc.name);
    } else {
      sf_machine m;
      sf_machine_read(&m);
      sf_machine_class_default_name(&m, f->name, sizeof f->name);
    }
  }
  char root[PATH_MAX];
  int explicit_root;
  if (ship) {
    snprintf(root, sizeof root, "%s", sf_machine_classes_shipped_root(&explicit_root));
  } else if (sf_machine_classes_user_root(root, sizeof root) != 0) {
    snprintf(err, errlen, "no folder for the user's classes: neither XDG_CACHE_HOME nor HOME is set (or use --ship)");
    return -1;
  }
  if (snprintf(f->dir, sizeof f->dir, "%s/%s", root, f->name) >= (int)sizeof f->dir) {
    snprintf(err, errlen, "class folder path under %s is too long", root);
    return -1;
  }
  return 0;
}

char *sf_class_machine_line(char *buf, size_t len)
{
  sf_machine m;
  sf_machine_read(&m);
  snprintf(buf, len, "%s, family %ld model %ld, %d cores%s%s", m.model_name, m.family, m.model, m.cores,
           m.gpu_model[0] ? ", " : "", m.gpu_model);
  return buf;
}

char *sf_class_utc_now(char *buf, size_t len)
{
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int sf_class_folder_prepare(sf_class_folder *f, char *err, size_t errlen)
{
  if (sf_mkdir_p(f->dir) != 0) {
    snprintf(err, errlen, "cannot create the class folder %s: %s", f->dir, strerror(errno));
    return -1;
  }
  char *mp = sf_path_join(f->dir, "MATCH");
  int rc = 0;
  if (!sf_file_exists(mp)) {
    sf_machine m;
    sf_machine_read(&m);
    char head[512], now[32];
    snprintf(head, sizeof head, "Which machines the data of class %s fits; written by scaffold on %s (%s). Edit to "
             "widen or narrow the match.", f->name, sf_class_utc_now(now, sizeof now), m.model_name);
    char *text = sf_machine_match_text(&m, head);
    rc = sf_write_file_atomic(mp, text, strlen(text));
    if (rc) snprintf(err, errlen, "cannot write %s: %s", mp, strerror(errno));
    free(text);
    f->created = rc == 0;
  }
  free(mp);
  return rc;
}
