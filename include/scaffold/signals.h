/* Process-wide signal policy of the long-running commands (generate_fractals, benchmark):
 *
 *   SIGINT, SIGTERM  the first one only sets a flag (and says so on stderr): the work in flight is
 *                    finished or abandoned at the next safe point (a training step boundary, a
 *                    datagen task boundary), nothing half-written is left, and the command exits
 *                    with SF_EXIT_INTERRUPTED (130). A second one exits at once with 130.
 *   SIGXFSZ          ignored, so a write beyond `ulimit -f` fails with EFBIG and is reported like a
 *                    full disk instead of killing the process.
 *
 * sf_signals_install is idempotent; call it again after starpu_init, which installs its own SIGINT
 * handler (STARPU_CATCH_SIGNALS). Long loops poll sf_stop_requested(). */
#ifndef SF_SIGNALS_H
#define SF_SIGNALS_H

void sf_signals_install(void);
/* The number of the first SIGINT/SIGTERM received, or 0. Async-signal-safe, thread-safe. */
int sf_stop_requested(void);
/* "SIGINT", "SIGTERM", or "signal N" (static storage). */
const char *sf_signal_name(int sig);

#endif
