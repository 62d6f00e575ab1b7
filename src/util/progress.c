/* Progress lines of long phases (scaffold/progress.h): a \r-updated line on a terminal, a plain line
 * at a steady interval off one, each with the count, the rate, the elapsed time and the ETA. */
#include <stdio.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/progress.h"

static double g_interval = 30.0;

void sf_progress_set_interval(double seconds) { g_interval = seconds > 0 ? seconds : 0; }

double sf_progress_interval(void) { return g_interval; }

void sf_progress_begin(sf_progress *p, const char *what, long total)
{
  snprintf(p->what, sizeof p->what, "%s", what);
  p->total = total;
  p->t0 = sf_now();
  p->last = p->t0;
  p->tty = isatty(1);
}

static void fmt_clock(double s, char *buf, size_t len)
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

static void print_line(const sf_progress *p, long done, const char *note, double now)
{
  double el = now - p->t0, rate = el > 0 ? (double)done / el : 0;
  char eta[32], elapsed[32];
  fmt_clock(rate > 0 ? (double)(p->total - done) / rate : -1, eta, sizeof eta);
  fmt_clock(el, elapsed, sizeof elapsed);
  double pct = p->total ? 100.0 * (double)done / (double)p->total : 100.0;
  if (p->tty)
    printf("\r%s: %ld/%ld (%.0f%%) %.2f/s ETA %s%s%s   ", p->what, done, p->total, pct, rate, eta, note ? " | " : "",
           note ? note : "");
  else
    printf("progress: %s: %ld/%ld (%.0f%%), %.3g/s, elapsed %s, ETA %s%s%s\n", p->what, done, p->total, pct, rate,
           elapsed, eta, note ? " | " : "", note ? note : "");
  fflush(stdout);
}

void sf_progress_update_note(sf_progress *p, long done, const char *note)
{
  double now = sf_now();
  if (p->tty) {
    if (done < p->total && now - p->last < 0.2) return;
  } else if (g_interval <= 0 || now - p->last < g_interval) {
    return;
  }
  p->last = now;
  print_line(p, done, note, now);
}

void sf_progress_update(sf_progress *p, long done) { sf_progress_update_note(p, done, NULL); }

void sf_progress_end(sf_progress *p, long done)
{
  if (!p->tty) return;
  print_line(p, done, NULL, sf_now());
  printf("\n");
  fflush(stdout);
}

void sf_progress_clear(sf_progress *p)
{
  if (!p->tty) return;
  fputs("\r\033[K", stdout);
  fflush(stdout);
}
