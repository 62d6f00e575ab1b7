/* trace: fxt (scaffold/runtime.h): StarPU's FxT trace of a run, with a StarPU built with FxT
 * (scripts/build-starpu --fxt). Before starpu_init, StarPU is told to write its raw trace
 * (prof_file_<user>_<rank>) into a private temporary directory; after shutdown, starpu_fxt_tool (from
 * the same StarPU) converts it in the run directory into paje.trace (ViTE), dag.dot, tasks.rec, data.rec
 * and trace.html (plus activity.data and distrib.data), and the raw file is kept there as fxt.prof.
 * paje.trace is then time-ordered (paje_sort.c), as StarPU's starpu_paje_sort script does, so strict
 * Paje readers (pj_dump) accept it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/fsutil.h"
#include "scaffold/runtime.h"

#include "fxt_internal.h"

#ifndef SF_STARPU_BINDIR
#define SF_STARPU_BINDIR "/usr/bin"
#endif

static char g_fxt_dir[PATH_MAX]; /* the raw trace's directory while a traced runtime runs */

/* What StarPU 1.3's starpu_fxt_tool writes (1.4's also writes sched_tasks.rec, which 1.3.10 has no code for). */
static const char *const fxt_outputs[] = {"paje.trace", "dag.dot", "tasks.rec", "data.rec", "trace.html"};

int sf_runtime_fxt_available(void)
{
#ifdef STARPU_USE_FXT
  return 1;
#else
  return 0;
#endif
}

void sf_runtime_fxt_prepare(const sf_config *c)
{
  g_fxt_dir[0] = 0;
  if (c->trace != SF_TRACE_FXT) return;
  if (!sf_runtime_fxt_available())
    sf_die(SF_EXIT_USAGE, "config key 'trace': fxt needs a StarPU built with FxT; this one is not (scripts/build-fxt "
           "builds one from Debian's source package and the project against it, in build-fxt/)");
  snprintf(g_fxt_dir, sizeof g_fxt_dir, "/tmp/scaffold-fxt-XXXXXX");
  if (!mkdtemp(g_fxt_dir)) sf_die(SF_EXIT_FAILURE, "trace: fxt: cannot create a directory for the raw trace: %s", strerror(errno));
  char prefix[PATH_MAX + 2];
  snprintf(prefix, sizeof prefix, "%s/", g_fxt_dir);
  setenv("STARPU_FXT_PREFIX", prefix, 1);
  setenv("STARPU_FXT_TRACE", "1", 1);
}

/* The raw trace file StarPU wrote (prof_file_*), malloc'ed path or NULL. */
static char *raw_trace(void)
{
  DIR *d = opendir(g_fxt_dir);
  struct dirent *e;
  char *found = NULL;
  while (d && !found && (e = readdir(d)) != NULL)
    if (!strncmp(e->d_name, "prof_file_", 10)) found = sf_path_join(g_fxt_dir, e->d_name);
  if (d) closedir(d);
  return found;
}

/* starpu_fxt_tool -i raw, run in dir (it writes into its working directory), log in dir/fxt_tool.log. */
static int run_fxt_tool(const char *raw, const char *dir, char *err, size_t errlen)
{
  const char *tool = SF_STARPU_BINDIR "/starpu_fxt_tool";
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir) != 0) _exit(126);
    int fd = open("fxt_tool.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execl(tool, "starpu_fxt_tool", "-i", raw, (char *)NULL);
    fprintf(stderr, "cannot run %s: %s\n", tool, strerror(errno));
    _exit(127);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    snprintf(err, errlen, "%s -i %s failed (status %d; see %s/fxt_tool.log)", tool, raw,
             WIFEXITED(st) ? WEXITSTATUS(st) : -1, dir);
    return -1;
  }
  return 0;
}

int sf_runtime_fxt_finish(const char *dir, char *err, size_t errlen)
{
  if (!g_fxt_dir[0]) return 0;
  int rc = -1;
  char *raw = raw_trace();
  if (!raw) snprintf(err, errlen, "StarPU wrote no FxT trace into %s (STARPU_FXT_PREFIX)", g_fxt_dir);
  else if (sf_mkdir_p(dir) != 0) snprintf(err, errlen, "cannot create %s", dir);
  else if (run_fxt_tool(raw, dir, err, errlen) == 0) {
    char *kept = sf_path_join(dir, "fxt.prof"), *paje = sf_path_join(dir, "paje.trace");
    if (sf_file_exists(paje) && sf_paje_sort(paje, err, errlen) != 0) {
      free(paje);
      free(kept);
      free(raw);
      sf_remove_tree(g_fxt_dir);
      g_fxt_dir[0] = 0;
      return -1;
    }
    free(paje);
    rc = rename(raw, kept) == 0 ? 0 : -1;
    if (rc) snprintf(err, errlen, "cannot move the raw trace %s to %s: %s", raw, kept, strerror(errno));
    free(kept);
  }
  for (size_t i = 0; rc == 0 && i < sizeof fxt_outputs / sizeof fxt_outputs[0]; i++) {
    char *p = sf_path_join(dir, fxt_outputs[i]);
    if (!sf_file_exists(p)) {
      snprintf(err, errlen, "starpu_fxt_tool did not write %s (see %s/fxt_tool.log)", p, dir);
      rc = -1;
    }
    free(p);
  }
  free(raw);
  sf_remove_tree(g_fxt_dir);
  g_fxt_dir[0] = 0;
  return rc;
}
