/* Progress of a long phase (fractal classes and instances, volumes, warm-up, training steps,
 * validation): on a terminal, a \r-updated "what: done/total (pct) rate/s ETA" line at most 5 times
 * a second; off a terminal (a cluster job's log file), a plain "progress: ..." line every
 * sf_progress_set_interval() seconds (the progress_interval key; 30 s by default, 0 = none), so a
 * log shows that a run is alive and when it should end. */
#ifndef SCAFFOLD_PROGRESS_H
#define SCAFFOLD_PROGRESS_H

typedef struct {
  char what[96];
  long total;
  double t0;
  double last; /* when the last line was printed */
  int tty;
} sf_progress;

/* Seconds between the plain lines off a terminal (0: none). Process-wide; commands set it from the
 * configuration before any phase starts. */
void sf_progress_set_interval(double seconds);
double sf_progress_interval(void);

void sf_progress_begin(sf_progress *p, const char *what, long total);
void sf_progress_update(sf_progress *p, long done);
/* The same with a note after the counts (e.g. "loss 0.5432, 27.9 samples/s"); note may be NULL. */
void sf_progress_update_note(sf_progress *p, long done, const char *note);
/* The terminal line completed and ended with a newline; off a terminal nothing (the phase's own
 * summary line follows). */
void sf_progress_end(sf_progress *p, long done);
/* On a terminal, erase the line (the phase's own log line replaces it); off a terminal nothing. */
void sf_progress_clear(sf_progress *p);

#endif
