/* util.h: small helpers every module uses: growable strings, whole-file I/O, atomic writes,
 * directories, clocks. No policy lives here. */
#ifndef AT_UTIL_H
#define AT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define AT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Allocation failure is not recoverable in a tool like this one: these abort with a message. */
void *at_xmalloc(size_t n);
void *at_xcalloc(size_t n, size_t size);
void *at_xrealloc(void *p, size_t n);
char *at_xstrdup(const char *s);
char *at_xstrndup(const char *s, size_t n);
char *at_xasprintf(const char *fmt, ...) AT_PRINTF(1, 2);

/* A growable, always NUL-terminated string. Zero-initialise to start. */
typedef struct at_buf {
  char *data;
  size_t len;
  size_t cap;
} at_buf;

void at_buf_append(at_buf *b, const void *data, size_t n);
void at_buf_puts(at_buf *b, const char *s);
void at_buf_printf(at_buf *b, const char *fmt, ...) AT_PRINTF(2, 3);
void at_buf_json_string(at_buf *b, const char *s); /* appends s as a quoted JSON string */
void at_buf_free(at_buf *b);
char *at_buf_steal(at_buf *b); /* returns the string (never NULL) and resets b */

/* Reads a whole file; fails with "path: reason". max_size 0 means no limit; a larger file fails
 * with AT_ERR_INPUT. The buffer gets one extra NUL byte past *size. */
int at_read_file(const char *path, size_t max_size, char **data, size_t *size);

/* Writes a file atomically: a temporary file in the same directory, fsync, then rename (over the
 * file a symbolic link names, keeping the link). A device or FIFO that exists (/dev/stdout) is
 * written in place; a directory is refused (AT_ERR_INPUT). */
int at_write_file_atomic(const char *path, const void *data, size_t size);

/* mkdir -p. */
int at_mkdirs(const char *path);

/* The directory part of a path ("." when there is none), and a joined path; both malloc'd. */
char *at_dirname(const char *path);
char *at_path_join(const char *dir, const char *name);
int at_file_exists(const char *path);
/* Do two paths name one file? By device and inode when both exist, else by their canonical
 * spelling (realpath of the file, or of its directory when the file does not exist yet). */
int at_same_file(const char *a, const char *b);

/* An output a command is about to write, checked before its work (AT_ERR_INPUT, naming the option
 * opt): not empty, not a directory, in a directory that exists (unless makes_dirs: the command makes
 * it), and none of the NULL-terminated inputs (each with a DB's -wal, -shm and -journal files; NULL
 * for none). */
int at_check_output(const char *opt, const char *path, const char *const *inputs, int makes_dirs);

double at_now_s(void);      /* monotonic seconds */
double at_median(double *v, int n); /* sorts v; 0 for n <= 0 */
char *at_utc_now_iso(void); /* "2026-11-22T05:00:00Z", malloc'd */

int at_cpu_count(void);

/* $AUTOTUNE_DEBUG is set (and not "0"): print what the tuner does, candidate by candidate, and what
 * the runtime library compiles (docs/usage.md, the environment). */
int at_debug(void);

/* Parses a whole decimal integer; returns 0 on success. */
int at_parse_i64(const char *s, int64_t *out);

/* An on/off switch of the environment, on by default: 1 when `var` is unset, empty or "on", 0 for
 * "off", -1 for anything else. */
int at_switch_env(const char *var);
/* $AUTOTUNE_PDL (programmatic dependent launch, docs/runtime.md), which the runtime library and the
 * tuner's workers share. */
int at_pdl_env(void);
/* $AUTOTUNE_TAIL (the runtime's tail launch, docs/runtime.md). */
int at_tail_env(void);

#endif
