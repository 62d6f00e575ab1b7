/* Child processes of `scaffold run` and `scaffold jobs`: fork/exec into a new process group with
 * optional CPU binding, cgroup and environment changes; SIGINT/SIGTERM/SIGHUP on the launcher
 * become SIGTERM to every child group, then SIGKILL after a grace period; waiting forwards the children's
 * stderr pipes and keeps their last lines for failure records. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"

#define MAX_TRACKED 256
static volatile sig_atomic_t g_signal;
static volatile pid_t g_tracked[MAX_TRACKED];
static double g_grace = 5.0;

void sf_launch_set_grace(double seconds) { g_grace = seconds; }

static void on_signal(int sig)
{
  if (!g_signal) g_signal = sig;
  for (int i = 0; i < MAX_TRACKED; i++)
    if (g_tracked[i] > 0) kill(-g_tracked[i], SIGTERM);
}

void sf_launch_signals_install(void)
{
  static int installed;
  if (installed) return;
  installed = 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

int sf_launch_interrupted(void) { return (int)g_signal; }

static void track(pid_t pid, int on)
{
  for (int i = 0; i < MAX_TRACKED; i++) {
    if (on && g_tracked[i] == 0) {
      g_tracked[i] = pid;
      return;
    }
    if (!on && g_tracked[i] == pid) {
      g_tracked[i] = 0;
      return;
    }
  }
}

static void child_fail(const char *what, const char *arg)
{
  /* After fork: only async-signal-safe calls. */
  const char *e = strerror(errno);
  (void)!write(2, "scaffold: error: ", 17);
  (void)!write(2, what, strlen(what));
  (void)!write(2, arg, strlen(arg));
  (void)!write(2, ": ", 2);
  (void)!write(2, e, strlen(e));
  (void)!write(2, "\n", 1);
}

int sf_spawn(sf_proc *p, const sf_spawn_opts *o)
{
  int fds[2] = {-1, -1};
  memset(p, 0, sizeof *p);
  p->err_fd = -1;
  if (o->pipe_stderr && pipe2(fds, O_CLOEXEC) != 0) return -1;
  /* Block the forwarded signals across fork so the child cannot run our handler. */
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  sigprocmask(SIG_BLOCK, &block, &old);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fds[0] >= 0) close(fds[0]), close(fds[1]);
    errno = e;
    return -1;
  }
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (o->cgroup) {
      char path[4096], pidbuf[32];
      snprintf(path, sizeof path, "%s/cgroup.procs", o->cgroup);
      int fd = open(path, O_WRONLY);
      int len = snprintf(pidbuf, sizeof pidbuf, "%ld\n", (long)getpid());
      if (fd < 0 || write(fd, pidbuf, (size_t)len) != len) child_fail("cannot join the cgroup ", o->cgroup);
      if (fd >= 0) close(fd);
    }
    if (o->cpus) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (const int *c = o->cpus; *c >= 0; c++) CPU_SET(*c, &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0) child_fail("cannot bind to the CPUs of ", "this device");
    }
    if (o->env)
      for (char *const *e = o->env; *e; e++) {
        if (strchr(*e, '=')) putenv(*e);
        else unsetenv(*e);
      }
    if (fds[1] >= 0) dup2(fds[1], 2); /* dup2 clears O_CLOEXEC on fd 2 */
    execv(o->argv[0], o->argv);
    child_fail("cannot execute ", o->argv[0]);
    _exit(127);
  }
  setpgid(pid, pid); /* also in the parent, so a kill(-pid) right after fork reaches it */
  p->pid = pid;
  track(pid, 1);
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (fds[1] >= 0) {
    close(fds[1]);
    p->err_fd = fds[0];
  }
  return 0;
}

static void keep_tail(sf_proc *p, const char *buf, size_t n)
{
  const size_t cap = sizeof p->tail - 1;
  if (n > cap) {
    buf += n - cap;
    n = cap;
  }
  if (p->tail_len + n > cap) {
    size_t drop = p->tail_len + n - cap;
    memmove(p->tail, p->tail + drop, p->tail_len - drop);
    p->tail_len -= drop;
  }
  memcpy(p->tail + p->tail_len, buf, n);
  p->tail_len += n;
  p->tail[p->tail_len] = '\0';
}

/* Reads what is available on p's pipe; closes it at EOF. */
static void drain(sf_proc *p)
{
  char buf[4096];
  ssize_t r = read(p->err_fd, buf, sizeof buf);
  if (r > 0) {
    (void)!write(2, buf, (size_t)r);
    keep_tail(p, buf, (size_t)r);
  } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(p->err_fd);
    p->err_fd = -1;
  }
}

void sf_wait_procs(sf_proc *p, size_t n)
{
  double t_int = 0, t_done = 0;
  struct pollfd fds[64];
  for (;;) {
    size_t nf = 0, open_pipes = 0, running = 0;
    for (size_t i = 0; i < n; i++) {
      if (!p[i].done) running++;
      if (p[i].err_fd >= 0 && nf < 64) {
        fds[nf].fd = p[i].err_fd;
        fds[nf].events = POLLIN;
        fds[nf].revents = 0;
        nf++;
        open_pipes++;
      }
    }
    if (!running && !open_pipes) break;
    /* A pipe held open by a stray grandchild must not block forever once the child is gone. */
    if (!running && t_done > 0 && sf_now() - t_done > 2.0) {
      for (size_t i = 0; i < n; i++)
        if (p[i].err_fd >= 0) close(p[i].err_fd), p[i].err_fd = -1;
      break;
    }
    int rc = poll(nf ? fds : NULL, nf, 100);
    if (rc > 0)
      for (size_t k = 0; k < nf; k++)
        if (fds[k].revents)
          for (size_t i = 0; i < n; i++)
            if (p[i].err_fd == fds[k].fd) drain(&p[i]);
    for (size_t i = 0; i < n; i++) {
      if (p[i].done) continue;
      int st;
      struct rusage ru;
      pid_t w = wait4(p[i].pid, &st, WNOHANG, &ru);
      if (w == p[i].pid) {
        p[i].done = 1;
        p[i].status = st;
        p[i].maxrss_mib = ru.ru_maxrss / 1024.0;
        kill(-p[i].pid, SIGKILL); /* whatever is left of its process group */
        track(p[i].pid, 0);
        if (!t_done) t_done = sf_now();
      } else if (w < 0 && errno == ECHILD) {
        p[i].done = 1;
        p[i].status = 0;
        track(p[i].pid, 0);
      }
    }
    if (sf_launch_interrupted()) {
      if (!t_int) t_int = sf_now();
      else if (sf_now() - t_int > g_grace)
        for (size_t i = 0; i < n; i++)
          if (!p[i].done) kill(-p[i].pid, SIGKILL);
    }
  }
}

void sf_describe_status(int status, char *buf, size_t n)
{
  if (WIFEXITED(status)) snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    snprintf(buf, n, "was killed by signal %d (%s)%s", WTERMSIG(status), strsignal(WTERMSIG(status)),
             WCOREDUMP(status) ? ", core dumped" : "");
  else snprintf(buf, n, "ended with wait status 0x%x", status);
}
