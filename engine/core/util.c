/* util.c: see util.h. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void oom(size_t n) {
  fprintf(stderr, "autotune: out of memory (%zu bytes)\n", n);
  abort();
}

void *at_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) oom(n);
  return p;
}

void *at_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) oom(n * size);
  return p;
}

void *at_xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) oom(n);
  return p;
}

char *at_xstrdup(const char *s) { return at_xstrndup(s, strlen(s)); }

char *at_xstrndup(const char *s, size_t n) {
  char *p = at_xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *at_xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = at_xmalloc((size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

static void buf_reserve(at_buf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra + 1) cap *= 2;
  b->data = at_xrealloc(b->data, cap);
  b->cap = cap;
}

void at_buf_append(at_buf *b, const void *data, size_t n) {
  buf_reserve(b, n);
  memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = 0;
}

void at_buf_puts(at_buf *b, const char *s) { at_buf_append(b, s, strlen(s)); }

void at_buf_printf(at_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  buf_reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void at_buf_json_string(at_buf *b, const char *s) {
  at_buf_puts(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': at_buf_puts(b, "\\\""); break;
    case '\\': at_buf_puts(b, "\\\\"); break;
    case '\n': at_buf_puts(b, "\\n"); break;
    case '\r': at_buf_puts(b, "\\r"); break;
    case '\t': at_buf_puts(b, "\\t"); break;
    default:
      if (*p < 0x20)
        at_buf_printf(b, "\\u%04x", *p);
      else
        at_buf_append(b, p, 1);
    }
  }
  at_buf_puts(b, "\"");
}

void at_buf_free(at_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

char *at_buf_steal(at_buf *b) {
  char *s = b->data ? b->data : at_xstrdup("");
  b->data = NULL;
  b->len = b->cap = 0;
  return s;
}

/* What a non-regular file is, for a message that says why it was refused. */
static const char *file_kind(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "a special file";
}

int at_read_file(const char *path, size_t max_size, char **data, size_t *size) {
  *data = NULL;
  *size = 0;
  /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. The type is
   * checked on the open descriptor, so a file swapped in between cannot slip past. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  /* A file that cannot be opened is the caller's input problem (missing, unreadable). */
  if (fd < 0) return at_fail(AT_ERR_INPUT, "%s: %s", path, strerror(errno));
  struct stat st;
  int rc = AT_OK;
  if (fstat(fd, &st) != 0)
    rc = at_fail(AT_ERR_RUNTIME, "%s: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    rc = at_fail(AT_ERR_INPUT, "%s: %s, not a regular file; refusing to read it", path, file_kind(st.st_mode));
  if (rc) {
    close(fd);
    return rc;
  }
  if (max_size && (size_t)st.st_size > max_size) {
    close(fd);
    return at_fail(AT_ERR_INPUT, "%s:1:1: file is %lld bytes, over the limit of %zu bytes", path,
                   (long long)st.st_size, max_size);
  }
  size_t n = (size_t)st.st_size, got = 0;
  char *p = at_xmalloc(n + 1);
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (got != n) {
    free(p);
    return at_fail(AT_ERR_RUNTIME, "%s: read failed (%zu of %zu bytes)", path, got, n);
  }
  p[n] = 0;
  *data = p;
  *size = n;
  return AT_OK;
}

/* The process's own stdout or stderr named as a path: written to that descriptor, where a redirect
 * (`> log`, `>> log`) put it; /dev/stdout resolves to the log file itself, which an atomic write
 * would replace and a reopen would write from its start. -1 for any other path. */
static int std_stream_fd(const char *path) {
  static const char *const NAMES[2][3] = {{"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"},
                                          {"/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"}};
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < 3; i++)
      if (strcmp(path, NAMES[s][i]) == 0) return s + 1;
  return -1;
}

static int write_all(int fd, const char *path, const char *p, size_t size) {
  while (size) {
    ssize_t w = write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return at_fail(AT_ERR_RUNTIME, "%s: write: %s", path, strerror(errno));
    p += w;
    size -= (size_t)w;
  }
  return AT_OK;
}

/* A device or FIFO (/dev/null, a pipe), or anything under /dev or /proc, is written in place: a
 * rename over it would put a regular file where the node was (as root, /dev/null itself). */
static int write_in_place(const char *path, const void *data, size_t size) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return at_fail(AT_ERR_RUNTIME, "%s: %s", path, strerror(errno));
  int rc = write_all(fd, path, data, size);
  close(fd);
  return rc;
}

/* A new file (or one replaced) whole: a temporary file beside it, fsync, then a rename over it. */
static int write_new(const char *path, const void *data, size_t size) {
  /* Unique per host, process and call: threads, and processes on several nodes sharing a cache on
   * a network filesystem, may write the same path at once (the last rename wins, and every version
   * is whole). The host name keeps two nodes whose processes have the same pid apart; O_EXCL makes
   * sure that no two writers ever share a temporary file. */
  static _Atomic unsigned long counter;
  char host[64] = "";
  if (gethostname(host, sizeof host - 1) != 0 || strchr(host, '/')) snprintf(host, sizeof host, "host");
  char *tmp = at_xasprintf("%s.tmp.%s.%ld.%lu", path, host, (long)getpid(), (unsigned long)atomic_fetch_add(&counter, 1));
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) { /* left by a dead process that had this pid: nobody writes it now */
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) {
    int rc = at_fail(AT_ERR_RUNTIME, "%s: %s", tmp, strerror(errno));
    free(tmp);
    return rc;
  }
  int rc = write_all(fd, tmp, data, size);
  if (rc) {
    close(fd);
    unlink(tmp);
    free(tmp);
    return rc;
  }
  if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
    rc = at_fail(AT_ERR_RUNTIME, "%s: %s", path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return rc;
  }
  free(tmp);
  return AT_OK;
}

int at_write_file_atomic(const char *path, const void *data, size_t size) {
  const int sfd = std_stream_fd(path);
  if (sfd >= 0) {
    fflush(sfd == 1 ? stdout : stderr); /* what the process printed before comes first */
    return write_all(sfd, path, data, size);
  }
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return at_fail(AT_ERR_INPUT, "%s: is a directory", path);
    if (!S_ISREG(st.st_mode) || strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0)
      return write_in_place(path, data, size);
    char *real = realpath(path, NULL); /* a link to a file: the file is replaced, the link stays */
    if (real && strcmp(real, path) != 0) {
      int rc = at_write_file_atomic(real, data, size);
      free(real);
      return rc;
    }
    free(real);
  }
  return write_new(path, data, size);
}

int at_mkdirs(const char *path) {
  char *p = at_xstrdup(path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      int rc = at_fail(AT_ERR_RUNTIME, "mkdir %s: %s", p, strerror(errno));
      free(p);
      return rc;
    }
    *s = '/';
  }
  int rc = AT_OK;
  if (mkdir(p, 0755) != 0 && errno != EEXIST) rc = at_fail(AT_ERR_RUNTIME, "mkdir %s: %s", p, strerror(errno));
  free(p);
  return rc;
}

char *at_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return at_xstrdup(".");
  if (slash == path) return at_xstrdup("/");
  return at_xstrndup(path, (size_t)(slash - path));
}

char *at_path_join(const char *dir, const char *name) {
  if (name[0] == '/' || !dir || !dir[0]) return at_xstrdup(name);
  size_t n = strlen(dir);
  return at_xasprintf("%s%s%s", dir, (n && dir[n - 1] == '/') ? "" : "/", name);
}

int at_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The canonical spelling of a path that may not exist yet: realpath() of the file, else of its
 * directory followed by its name. malloc'd; NULL when not even the directory resolves. */
static char *canonical_path(const char *path) {
  char *r = realpath(path, NULL);
  if (r) return r;
  char *dir = at_dirname(path), *rdir = realpath(dir, NULL);
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  char *out = rdir ? at_path_join(rdir, base) : NULL;
  free(dir);
  free(rdir);
  return out;
}

int at_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  /* One of them does not exist yet (a DB a run is about to create): compare the spellings. */
  char *ca = canonical_path(a), *cb = canonical_path(b);
  int same = ca && cb ? strcmp(ca, cb) == 0 : strcmp(a, b) == 0;
  free(ca);
  free(cb);
  return same;
}

int at_check_output(const char *opt, const char *path, const char *const *inputs, int makes_dirs) {
  if (!path[0]) return at_fail(AT_ERR_INPUT, "%s: the path is empty", opt);
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return at_fail(AT_ERR_INPUT, "%s %s: is a directory", opt, path);
  char *dir = at_dirname(path);
  int dir_ok = makes_dirs || (stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
  int rc = dir_ok ? AT_OK : at_fail(AT_ERR_INPUT, "%s %s: no directory %s to write it in", opt, path, dir);
  free(dir);
  static const char *const COMPANIONS[] = {"", "-wal", "-shm", "-journal"}; /* a DB's files */
  for (size_t i = 0; inputs && inputs[i] && rc == AT_OK; i++)
    for (int c = 0; c < 4 && rc == AT_OK; c++) {
      char *in = at_xasprintf("%s%s", inputs[i], COMPANIONS[c]);
      if (at_same_file(path, in))
        rc = at_fail(AT_ERR_INPUT, "%s %s is %s, an input of the run; it would be overwritten", opt, path, in);
      free(in);
    }
  return rc;
}

double at_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

char *at_utc_now_iso(void) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  char s[32];
  strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return at_xstrdup(s);
}

int at_debug(void) {
  /* Read at each call (it is asked on slow paths only), so that a program may turn it on for a
   * while: the runtime stress test does, around a prepare. */
  const char *e = getenv("AUTOTUNE_DEBUG");
  return e && *e && strcmp(e, "0") != 0;
}

int at_cpu_count(void) {
  /* The CPUs this process may run on (taskset, a container's cpuset), as nproc counts them. */
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

int at_parse_i64(const char *s, int64_t *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

int at_switch_env(const char *var) {
  const char *v = getenv(var);
  if (!v || !*v || strcmp(v, "on") == 0) return 1;
  return strcmp(v, "off") == 0 ? 0 : -1;
}

int at_pdl_env(void) { return at_switch_env("AUTOTUNE_PDL"); }

int at_tail_env(void) { return at_switch_env("AUTOTUNE_TAIL"); }

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double at_median(double *v, int n) {
  if (n <= 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
