/* The progress lines off a terminal (scaffold/progress.h), with stdout a file: a phase updated
 * continuously for 0.35 s at an interval of 0.1 s prints between 1 and 3 lines (never two closer than
 * the interval), each of the documented form with the count it was given; an interval of 0 prints
 * none; sf_progress_end and sf_progress_clear print nothing off a terminal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/progress.h"
#include "testutil.h"

/* Runs one phase for `secs` with stdout redirected to a file; returns the lines it printed. */
static int run_phase(double interval, double secs, char lines[][160], int max)
{
  char path[] = "/tmp/sf-progress-XXXXXX";
  int fd = mkstemp(path);
  SF_CHECK(fd >= 0, "mkstemp failed");
  fflush(stdout);
  int saved = dup(1);
  dup2(fd, 1);
  sf_progress_set_interval(interval);
  sf_progress p;
  sf_progress_begin(&p, "test phase", 1000000);
  double t0 = sf_now();
  long done = 0;
  while (sf_now() - t0 < secs) sf_progress_update_note(&p, ++done, "note");
  sf_progress_clear(&p);
  sf_progress_end(&p, done);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  FILE *f = fdopen(fd, "r");
  rewind(f);
  int n = 0;
  char buf[160];
  while (fgets(buf, sizeof buf, f))
    if (n < max) snprintf(lines[n++], sizeof lines[0], "%s", buf);
  fclose(f);
  unlink(path);
  return n;
}

int main(void)
{
  char lines[16][160];
  int n = run_phase(0.1, 0.35, lines, 16);
  SF_CHECK(n >= 1 && n <= 3, "interval 0.1 s over 0.35 s printed %d lines, expected 1 to 3", n);
  for (int i = 0; i < n; i++) {
    long done, total;
    char rate[32], tail[64];
    int m = sscanf(lines[i], "progress: test phase: %ld/%ld (%*d%%), %31[^/]/s, elapsed %*d:%*d, ETA %*s | %63s", &done,
                   &total, rate, tail);
    SF_CHECK(m == 4 && total == 1000000 && done >= 1 && !strcmp(tail, "note"),
             "line %d not of the documented form: %s", i + 1, lines[i]);
  }
  n = run_phase(0, 0.15, lines, 16);
  SF_CHECK(n == 0, "interval 0 printed %d lines, expected none (first: %s)", n, n ? lines[0] : "");
  sf_progress_set_interval(30);
  return sf_test_end();
}
