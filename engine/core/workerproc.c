/* workerproc.c: see workerproc.h. */
#include "workerproc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"
#include "util.h"

const char *at_self_exe(void) {
  static char path[4096];
  if (!path[0]) {
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n > 0)
      path[n] = 0;
    else
      snprintf(path, sizeof path, "autotune");
  }
  return path;
}

static int spawn(const char *const *args, at_worker *w) {
  int req[2], rep[2];
  if (pipe2(req, O_CLOEXEC) != 0) return at_fail(AT_ERR_RUNTIME, "pipe: %s", strerror(errno));
  if (pipe2(rep, O_CLOEXEC) != 0) {
    close(req[0]), close(req[1]);
    return at_fail(AT_ERR_RUNTIME, "pipe: %s", strerror(errno));
  }
  signal(SIGPIPE, SIG_IGN); /* a dead worker is an EPIPE to handle, not a reason to die */
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int rc = at_fail(AT_ERR_RUNTIME, "fork: %s", strerror(errno));
    close(req[0]), close(req[1]), close(rep[0]), close(rep[1]);
    return rc;
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    /* fds 3 and 4 are the protocol; dup2 clears CLOEXEC on the copies. */
    int in = dup(req[0]), out = dup(rep[1]);
    dup2(in, 3);
    dup2(out, 4);
    execv(at_self_exe(), (char *const *)args);
    static const char msg[] = "autotune: cannot start a worker: exec failed\n";
    (void)!write(2, msg, sizeof msg - 1); /* only async-signal-safe calls after fork */
    _exit(127);
  }
  close(req[0]);
  close(rep[1]);
  memset(w, 0, sizeof *w);
  w->pid = pid;
  w->to_fd = req[1];
  w->from_fd = rep[0];
  return AT_OK;
}

static void reap(at_worker *w, int do_kill) {
  if (w->pid <= 0) return;
  if (do_kill) kill(w->pid, SIGKILL);
  int st = 0;
  if (waitpid(w->pid, &st, 0) == w->pid) {
    if (WIFSIGNALED(st))
      snprintf(w->exit_reason, sizeof w->exit_reason, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
      snprintf(w->exit_reason, sizeof w->exit_reason, "exit status %d", WEXITSTATUS(st));
  }
  close(w->to_fd);
  close(w->from_fd);
  w->pid = 0;
}

int at_worker_alive(const at_worker *w) { return w->pid > 0; }

void at_worker_kill(at_worker *w) { reap(w, 1); }

void at_worker_stop(at_worker *w) {
  if (w->pid <= 0) return;
  at_msg_send(w->to_fd, AT_MSG_QUIT, NULL, 0);
  for (int i = 0; i < 100; i++) {
    int st;
    if (waitpid(w->pid, &st, WNOHANG) == w->pid) {
      close(w->to_fd);
      close(w->from_fd);
      w->pid = 0;
      snprintf(w->exit_reason, sizeof w->exit_reason, "stopped");
      return;
    }
    usleep(10000);
  }
  reap(w, 1);
}

int at_worker_start(int gpu, at_worker *w) { return at_worker_start_mode(gpu, NULL, w); }

int at_worker_start_mode(int gpu, const char *mode, at_worker *w) {
  char gpu_s[16];
  snprintf(gpu_s, sizeof gpu_s, "%d", gpu);
  const char *args[] = {"autotune", "worker", "--gpu", gpu_s, mode, NULL};
  AT_TRY(spawn(args, w));
  w->gpu = gpu;
  uint32_t type;
  void *p;
  size_t len;
  int rc = at_msg_recv(w->from_fd, 120.0, &type, &p, &len);
  if (rc == AT_OK && type == AT_MSG_HELLO && len == sizeof(at_device_info)) {
    memcpy(&w->info, p, sizeof w->info);
    free(p);
    return AT_OK;
  }
  char msg[600];
  if (rc == AT_OK && type == AT_MSG_ERROR)
    snprintf(msg, sizeof msg, "%s", (char *)p);
  else
    snprintf(msg, sizeof msg, "no hello from the worker (%s)", rc == AT_PROTO_TIMEOUT ? "timed out" : "it died");
  free(p);
  reap(w, 1);
  return at_fail(AT_ERR_RUNTIME, "GPU %d: %s", gpu, msg);
}

int at_worker_call(at_worker *w, uint32_t type, const void *a, size_t alen, const void *b, size_t blen,
                   double timeout_s, uint32_t want, void **reply, size_t *len) {
  *reply = NULL;
  *len = 0;
  if (w->pid <= 0) return AT_PROTO_EOF;
  int rc = at_msg_send2(w->to_fd, type, a, alen, b, blen);
  uint32_t got = 0;
  if (rc == AT_OK) rc = at_msg_recv(w->from_fd, timeout_s, &got, reply, len);
  if (rc == AT_PROTO_TIMEOUT) {
    reap(w, 1);
    snprintf(w->exit_reason, sizeof w->exit_reason, "killed after %.1f s without a reply", timeout_s);
    return AT_PROTO_TIMEOUT;
  }
  if (rc == AT_PROTO_EOF) {
    reap(w, 0);
    return AT_PROTO_EOF;
  }
  if (rc) return rc;
  if (got == AT_MSG_ERROR) {
    int r = at_fail(AT_ERR_RUNTIME, "GPU %d: %s", w->gpu, (char *)*reply);
    free(*reply);
    *reply = NULL;
    return r;
  }
  if (got != want) {
    free(*reply);
    *reply = NULL;
    reap(w, 1);
    return at_fail(AT_ERR_RUNTIME, "GPU %d: protocol error (reply %u to request %u)", w->gpu, got, type);
  }
  return AT_OK;
}

int at_probe_devices(at_device_info **out, int *n, char *why, size_t why_len) {
  *out = NULL;
  *n = 0;
  const char *args[] = {"autotune", "worker", "--probe", NULL};
  at_worker w;
  AT_TRY(spawn(args, &w));
  for (;;) {
    uint32_t type;
    void *p;
    size_t len;
    int rc = at_msg_recv(w.from_fd, 60.0, &type, &p, &len);
    if (rc != AT_OK) {
      if (*n == 0) snprintf(why, why_len, "the device probe %s", rc == AT_PROTO_TIMEOUT ? "timed out" : "found no GPU");
      break;
    }
    if (type == AT_MSG_ERROR) {
      snprintf(why, why_len, "%s", (char *)p);
      free(p);
      break;
    }
    if (type == AT_MSG_HELLO && len == sizeof(at_device_info)) {
      *out = at_xrealloc(*out, sizeof(at_device_info) * (size_t)(*n + 1));
      memcpy(&(*out)[(*n)++], p, sizeof(at_device_info));
    }
    free(p);
  }
  reap(&w, 1);
  return AT_OK;
}
