/* The network of a multi-rank `scaffold simulate` (simulate.h): a named network of configs/networks.txt
 * (latency and bandwidth as numbers, parsed strictly: a bad line stops the command with the file, line and
 * value) or a SimGrid platform file given by the user, and the files starpu_smpirun reads for a run: the
 * platform of the ranks' nodes and the hostfile naming one node per rank. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "simulate.h"

static char *networks_path(const char *file)
{
  return file ? sf_strdup(file) : sf_path_join(SF_SOURCE_DIR, "configs/networks.txt");
}

static int positive(const char *s, double *v)
{
  char *end = NULL;
  *v = strtod(s, &end);
  return end != s && *end == '\0' && isfinite(*v) && *v > 0 ? 0 : -1;
}

/* One line "NAME LATENCY BANDWIDTH DESCRIPTION...": 1 parsed, 0 blank or comment, -1 bad (err says why). */
static int parse_line(char *line, sim_network *n, char *err, size_t errlen)
{
  memset(n, 0, sizeof *n);
  line[strcspn(line, "\r\n")] = '\0';
  char *p = line + strspn(line, " \t");
  if (*p == '\0' || *p == '#') return 0;
  char name[64], lat[64], bw[64];
  int used = 0;
  if (sscanf(p, "%63s %63s %63s %n", name, lat, bw, &used) != 3) {
    snprintf(err, errlen, "'%s': expected NAME LATENCY BANDWIDTH DESCRIPTION", p);
    return -1;
  }
  if (strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(name)) {
    snprintf(err, errlen, "network name '%s': expected [a-z0-9-]+", name);
    return -1;
  }
  if (positive(lat, &n->latency_s) != 0 || n->latency_s > 1) {
    snprintf(err, errlen, "network '%s': latency '%s' is not a number of seconds in (0, 1]", name, lat);
    return -1;
  }
  if (positive(bw, &n->bandwidth_Bps) != 0 || n->bandwidth_Bps < 1e3) {
    snprintf(err, errlen, "network '%s': bandwidth '%s' is not a number of bytes/s >= 1000", name, bw);
    return -1;
  }
  snprintf(n->name, sizeof n->name, "%s", name);
  snprintf(n->what, sizeof n->what, "%s", p + used);
  return 1;
}

/* Every line of the named networks file is checked, whichever network is asked for. */
static int load_named(const char *name, const char *file, sim_network *n, char *err, size_t errlen)
{
  char *path = networks_path(file);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "cannot read the named networks file %s", path);
    free(path);
    return -1;
  }
  char line[1024], why[512], names[1024] = "";
  int lineno = 0, found = 0, rc = 0;
  sim_network x;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    lineno++;
    int r = parse_line(line, &x, why, sizeof why);
    if (r < 0) {
      snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
      rc = -1;
    } else if (r == 1) {
      size_t l = strlen(names);
      snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", x.name);
      if (!strcmp(x.name, name)) *n = x, found = 1;
    }
  }
  fclose(f);
  if (rc == 0 && !found) {
    snprintf(err, errlen, "--network '%s': no such network in %s (it has %s); or give a SimGrid platform file "
             "(a path ending in .xml)", name, path, names[0] ? names : "none");
    rc = -1;
  }
  free(path);
  return rc;
}

/* A user's SimGrid platform: starpu_smpirun drops its first two lines (the XML declaration and the
 * DOCTYPE) and its <platform> tags, so exactly that layout is required; SimGrid checks the rest. */
static int load_file(const char *path, sim_network *n, char *err, size_t errlen)
{
  FILE *f = fopen(path, "r");
  char l1[512] = "", l2[512] = "";
  if (!f) {
    snprintf(err, errlen, "--network %s: cannot read this SimGrid platform file", path);
    return -1;
  }
  if (!fgets(l1, sizeof l1, f) || !fgets(l2, sizeof l2, f)) l1[0] = '\0';
  fclose(f);
  if (strncmp(l1, "<?xml", 5) != 0 || strncmp(l2, "<!DOCTYPE platform", 18) != 0) {
    snprintf(err, errlen, "--network %s: expected a SimGrid platform whose first line is the <?xml ...?> declaration "
             "and whose second is <!DOCTYPE platform ...> (starpu_smpirun drops both)", path);
    return -1;
  }
  memset(n, 0, sizeof *n);
  const char *base = strrchr(path, '/');
  snprintf(n->name, sizeof n->name, "%s", base ? base + 1 : path);
  snprintf(n->file, sizeof n->file, "%s", path);
  snprintf(n->what, sizeof n->what, "SimGrid platform %s (hosts rank0, rank1, ...)", path);
  return 0;
}

int sim_network_load(const char *arg, const char *file, sim_network *n, char *err, size_t errlen)
{
  size_t l = strlen(arg);
  if (l > 4 && !strcmp(arg + l - 4, ".xml")) return load_file(arg, n, err, errlen);
  memset(n, 0, sizeof *n);
  return load_named(arg, file, n, err, errlen);
}

int sim_network_write(const sim_network *n, int ranks, const char *dir, char **platform, char **hostfile)
{
  *platform = n->file[0] ? sf_strdup(n->file) : sf_path_join(dir, "network.xml");
  *hostfile = sf_path_join(dir, "hostfile");
  FILE *h = fopen(*hostfile, "w");
  if (!h) return -1;
  for (int r = 0; r < ranks; r++) fprintf(h, "rank%d\n", r);
  if (fclose(h) != 0) return -1;
  if (n->file[0]) return 0;
  FILE *f = fopen(*platform, "w");
  if (!f) return -1;
  /* each rank's node: its own link to the switch, half the latency each way; SPLITDUPLEX: sending and
   * receiving at full bandwidth at once */
  fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
          "<platform version=\"4\">\n<!-- network %s -->\n<AS id=\"sf-network\" routing=\"Full\">\n"
          "  <cluster id=\"sf-nodes\" prefix=\"rank\" suffix=\"\" radical=\"0-%d\" speed=\"1Gf\" bw=\"%.17gBps\" "
          "lat=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"/>\n</AS>\n</platform>\n",
          n->name, ranks - 1, n->bandwidth_Bps, n->latency_s / 2);
  return fclose(f) == 0 ? 0 : -1;
}
