/* Progress line for the datagen task graphs (scaffold/datagen.h): on a terminal, a \r-updated
 * "what: done/total (pct) rate/s ETA" line at most 5 times a second; off a terminal, silence
 * (the generators print one summary line when they finish). */
#include <stdio.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/datagen.h"

void sf_progress_begin(sf_progress *p, const char *what, long total)
{
  p->what = what;
  p->total = total;
  p->t0 = sf_now();
  p->last = 0;
  p->tty = isatty(1);
}

static void fmt_eta(double s, char *buf, size_t len)
{
  if (!(s >= 0) || s > 359999) {
    snprintf(buf, len, "--:--");
    return;
  }
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(buf, len, "%02ld:%02ld", t / 60, t % 60);
}

void sf_progress_update(sf_progress *p, long done)
{
  if (!p->tty) return;
  double now = sf_now();
  if (done < p->total && now - p->last < 0.2) return;
  p->last = now;
  double el = now - p->t0, rate = el > 0 ? (double)done / el : 0;
  char eta[32];
  fmt_eta(rate > 0 ? (double)(p->total - done) / rate : -1, eta, sizeof eta);
  printf("\r%s: %ld/%ld (%.0f%%) %.1f/s ETA %s   ", p->what, done, p->total,
         p->total ? 100.0 * (double)done / (double)p->total : 100.0, rate, eta);
  fflush(stdout);
}

void sf_progress_end(sf_progress *p, long done)
{
  if (!p->tty) return;
  p->last = 0;
  sf_progress_update(p, done);
  printf("\n");
  fflush(stdout);
}
