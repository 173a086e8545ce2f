/* proc.h: running the autotune binary from a test: argv in, exit status and output out, with a
 * time limit, or in the background to be killed. */
#ifndef AT_TEST_PROC_H
#define AT_TEST_PROC_H

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Starts argv with stdout and stderr to out_path (may be NULL: inherited). Returns the pid. */
static inline pid_t proc_start(char *const argv[], const char *out_path) {
  pid_t pid = fork();
  if (pid == 0) {
    if (out_path) {
      int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
    }
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

/* Waits at most timeout_s; kills on overrun. Returns the exit status, 128+signal, or -1. */
static inline int proc_wait(pid_t pid, double timeout_s) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    usleep(10000);
  }
}

static inline int proc_run(char *const argv[], const char *out_path, double timeout_s) {
  return proc_wait(proc_start(argv, out_path), timeout_s);
}

/* Fills argv with exe, the arguments in pre up to a NULL (pre may be NULL), then those in ap up to a
 * NULL, at most 30 in all, and the NULL that ends it. */
static inline void proc_argv(char *argv[32], const char *exe, const char *const *pre, va_list ap) {
  int n = 0;
  argv[n++] = (char *)exe;
  for (; pre && *pre && n < 31; pre++) argv[n++] = (char *)*pre;
  for (const char *a; n < 31 && (a = va_arg(ap, const char *));) argv[n++] = (char *)a;
  argv[n] = NULL;
}

/* Runs exe with the arguments in ap up to a NULL (at most 30). */
static inline int proc_run_va(const char *exe, const char *out_path, double timeout_s, va_list ap) {
  char *argv[32];
  proc_argv(argv, exe, NULL, ap);
  return proc_run(argv, out_path, timeout_s);
}

/* The whole of a (small) file, malloc'd; "" when missing. */
static inline char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  return s;
}

/* Runs exe with the arguments up to a NULL, stdout and stderr to dir/out.txt; the exit status. */
static inline int proc_run_in(const char *exe, const char *dir, double timeout_s, ...) {
  char out[4200];
  snprintf(out, sizeof out, "%s/out.txt", dir);
  va_list ap;
  va_start(ap, timeout_s);
  int rc = proc_run_va(exe, out, timeout_s, ap);
  va_end(ap);
  return rc;
}

/* Runs exe with the arguments in pre (a subcommand and the options every call of a test shares) and
 * then those in ap, as proc_argv, stdout and stderr to dir/out.txt; the exit status, and what it
 * printed in *out (malloc'd). */
static inline int proc_run_pre(const char *exe, const char *const *pre, const char *dir, double timeout_s, char **out,
                               va_list ap) {
  char *argv[32], path[4200];
  proc_argv(argv, exe, pre, ap);
  snprintf(path, sizeof path, "%s/out.txt", dir);
  int rc = proc_run(argv, path, timeout_s);
  *out = slurp(path);
  return rc;
}

/* What the last proc_run_in in dir printed; malloc'd. */
static inline char *proc_output(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/out.txt", dir);
  return slurp(path);
}

/* How many times needle occurs in hay, without overlaps. */
static inline int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* A fresh scratch directory under $AT_TEST_TMP (or /tmp) for one test. malloc'd. */
static inline char *scratch_dir(const char *name) {
  const char *base = getenv("AT_TEST_TMP");
  char *p = malloc(4096);
  snprintf(p, 4096, "%s/%s.%d", base && *base ? base : "/tmp", name, (int)getpid());
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", p, p);
  if (system(cmd) != 0) fprintf(stderr, "cannot make %s\n", p);
  return p;
}

/* Processes alive now whose command line contains every one of the NULL-terminated needles: how
 * many, and the pid of the first in *first (0 when none; first may be NULL). */
static inline int proc_find(const char *const needles[], pid_t *first) {
  int n = 0;
  if (first) *first = 0;
  DIR *d = opendir("/proc");
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], buf[512] = {0};
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < len; i++)
      if (!buf[i]) buf[i] = ' ';
    int all = len > 0;
    for (const char *const *k = needles; *k && all; k++) all = strstr(buf, *k) != NULL;
    if (!all) continue;
    if (first && !*first) *first = (pid_t)atoi(e->d_name);
    n++;
  }
  if (d) closedir(d);
  return n;
}

/* Exits 77 (meson's "skipped") unless `exe devices` sees a GPU; its output goes to dir. */
static inline void proc_require_gpu(const char *exe, const char *dir) {
  char out[4200];
  snprintf(out, sizeof out, "%s/devices.txt", dir);
  char *argv[] = {(char *)exe, "devices", NULL};
  proc_run(argv, out, 120);
  char *text = slurp(out);
  int none = strncmp(text, "GPU 0:", 6) != 0;
  free(text);
  if (none) {
    fprintf(stderr, "skipped: no GPU\n");
    exit(77);
  }
}

#endif
