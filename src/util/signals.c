/* SIGINT/SIGTERM as a stop request and SIGXFSZ ignored (scaffold/signals.h). The handler only
 * stores the signal number and writes a fixed message with write(2); the second signal exits at
 * once with 130 (_exit: no stdio, no atexit handlers from signal context). */
#include "scaffold/signals.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/common.h"

static volatile sig_atomic_t g_stop;

static void say(const char *msg)
{
  ssize_t w = write(2, msg, strlen(msg));
  (void)w;
}

static void on_signal(int sig)
{
  if (g_stop) {
    say("\nscaffold: second signal: exiting now (status 130); files being written are left as they were "
        "(atomic writes: complete or absent)\n");
    _exit(SF_EXIT_INTERRUPTED);
  }
  g_stop = sig;
  say(sig == SIGINT ? "\nscaffold: SIGINT received: finishing the work in flight, then stopping cleanly "
                      "(send it again to exit at once)\n"
                    : "\nscaffold: SIGTERM received: finishing the work in flight, then stopping cleanly "
                      "(send it again to exit at once)\n");
}

void sf_signals_install(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGXFSZ, SIG_IGN);
}

int sf_stop_requested(void) { return (int)g_stop; }

const char *sf_signal_name(int sig)
{
  static char buf[32];
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  snprintf(buf, sizeof buf, "signal %d", sig);
  return buf;
}
