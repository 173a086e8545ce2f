/* shapefile.c: see shapefile.h. The YAML form is the space loader's own shapes parser
 * (at_space_load_shapes), so the two cannot drift apart; the CSV form and the choice of groups are
 * here. */
#include "shapefile.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shapeset.h"
#include "space.h"
#include "util.h"

enum { CSV_MAX_BYTES = 64u << 20, CSV_MAX_FIELDS = 256 };

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

void at_shape_list_free(at_shape_list *l) {
  for (size_t i = 0; l->names && i < l->n; i++) free(l->names[i]);
  free(l->names);
  free(l->shapes);
  memset(l, 0, sizeof *l);
}

/* ---- CSV -------------------------------------------------------------------------------------- */

typedef struct span {
  const char *b, *e;
} span;

/* Trims spaces and tabs at both ends. */
static span trim(span s) {
  while (s.b < s.e && (*s.b == ' ' || *s.b == '\t')) s.b++;
  while (s.e > s.b && (s.e[-1] == ' ' || s.e[-1] == '\t')) s.e--;
  return s;
}

static int span_is(span s, const char *word) {
  size_t n = strlen(word);
  return (size_t)(s.e - s.b) == n && strncasecmp(s.b, word, n) == 0;
}

/* Splits a line at its commas into trimmed fields (at most cap kept); returns how many there are. */
static int split(span line, span *f, int cap) {
  int nf = 0;
  for (const char *p = line.b;;) {
    const char *c = memchr(p, ',', (size_t)(line.e - p));
    if (nf < cap) f[nf] = trim((span){p, c ? c : line.e});
    nf++;
    if (!c) return nf;
    p = c + 1;
  }
}

/* The columns of M, N, K and name (-1: none) from the header. */
static int read_header(const char *path, int lineno, span line, const span *f, int nf, int col[4]) {
  static const char *const NAMES[4] = {"M", "N", "K", "name"};
  for (int d = 0; d < 4; d++) col[d] = -1;
  for (int i = 0; i < nf && i < CSV_MAX_FIELDS; i++)
    for (int d = 0; d < 4; d++)
      if (span_is(f[i], NAMES[d])) {
        if (col[d] >= 0)
          return at_fail(AT_ERR_INPUT, "%s:%d: the header names the column %s twice", path, lineno, NAMES[d]);
        col[d] = i;
      }
  if (col[0] < 0 || col[1] < 0 || col[2] < 0)
    return at_fail(AT_ERR_INPUT,
                   "%s:%d: the first line must be the header M,N,K (the columns in any order; a name column and"
                   " others may follow), got '%.*s'",
                   path, lineno, (int)(line.e - line.b), line.b);
  if (nf > CSV_MAX_FIELDS)
    return at_fail(AT_ERR_INPUT, "%s:%d: the header has %d columns; at most %d are read", path, lineno, nf,
                   CSV_MAX_FIELDS);
  return AT_OK;
}

/* One data line: its shape checked against the op and against the shapes before it. */
static int read_row(const char *path, int lineno, const span *f, const int col[4], const at_op *op,
                    at_shape_list *out, int **line_of, size_t *cap, at_shapeset *seen) {
  int64_t v[3];
  for (int d = 0; d < 3; d++) {
    char text[64];
    span s = f[col[d]];
    snprintf(text, sizeof text, "%.*s", (int)(s.e - s.b), s.b);
    if ((size_t)(s.e - s.b) >= sizeof text || at_parse_i64(text, &v[d]) != 0)
      return at_fail(AT_ERR_INPUT, "%s:%d: %c must be an integer, got '%.*s'", path, lineno, "MNK"[d],
                     (int)(s.e - s.b), s.b);
  }
  char *name = NULL;
  if (col[3] >= 0 && f[col[3]].e > f[col[3]].b) {
    name = at_xstrndup(f[col[3]].b, (size_t)(f[col[3]].e - f[col[3]].b));
    if (!at_shape_name_ok(name)) {
      int rc = at_fail(AT_ERR_INPUT, "%s:%d: name '%s' must be 1 to 63 letters, digits and _ - . + /, starting with"
                       " a letter or digit", path, lineno, name);
      free(name);
      return rc;
    }
  }
  at_shape sh = {v[0], v[1], v[2]};
  int dim = 0, rc = AT_OK;
  if (op->check_shape(&sh, &dim)) rc = at_fail(AT_ERR_INPUT, "%s:%d: %s", path, lineno, at_errmsg());
  if (rc == AT_OK && out->n == *cap) {
    *cap = *cap ? 2 * *cap : 64;
    out->shapes = at_xrealloc(out->shapes, sizeof *out->shapes * *cap);
    out->names = at_xrealloc(out->names, sizeof *out->names * *cap);
    *line_of = at_xrealloc(*line_of, sizeof **line_of * *cap);
  }
  if (rc == AT_OK) out->shapes[out->n] = sh; /* in place for the set; counted only once it is new */
  long first = rc == AT_OK ? at_shapeset_add(seen, out->shapes, out->n) : -1;
  if (first >= 0)
    rc = at_fail(AT_ERR_INPUT, "%s:%d: shape M=%lld N=%lld K=%lld is listed twice (first on line %d)", path, lineno,
                 (long long)sh.m, (long long)sh.n, (long long)sh.k, (*line_of)[first]);
  if (rc) {
    free(name);
    return rc;
  }
  (*line_of)[out->n] = lineno;
  out->names[out->n] = name;
  out->shapes[out->n++] = sh;
  return AT_OK;
}

int at_shapes_parse_csv(const char *path, const char *text, const at_op *op, at_shape_list *out) {
  memset(out, 0, sizeof *out);
  int col[4], nheader = 0, lineno = 0, rc = AT_OK;
  int *line_of = NULL; /* the line of each shape, for "listed twice" */
  size_t cap = 0;
  at_shapeset seen = {0};
  span *f = at_xcalloc(CSV_MAX_FIELDS, sizeof *f);
  if (strncmp(text, "\xEF\xBB\xBF", 3) == 0) text += 3; /* the byte-order mark some spreadsheets write */
  for (const char *p = text; *p && rc == AT_OK;) {
    const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
    span line = {p, end};
    p = nl ? nl + 1 : end;
    lineno++;
    if (line.e > line.b && line.e[-1] == '\r') line.e--;
    line = trim(line);
    if (line.b == line.e || *line.b == '#') continue; /* blank lines and comments */
    int nf = split(line, f, CSV_MAX_FIELDS);
    if (!nheader) {
      rc = read_header(path, lineno, line, f, nf, col);
      nheader = nf;
    } else if (nf != nheader) {
      rc = at_fail(AT_ERR_INPUT, "%s:%d: %d comma-separated field%s where the header has %d", path, lineno, nf,
                   nf == 1 ? "" : "s", nheader);
    } else {
      rc = read_row(path, lineno, f, col, op, out, &line_of, &cap, &seen);
    }
  }
  if (rc == AT_OK && out->n == 0)
    rc = at_fail(AT_ERR_INPUT, "%s:%d: no shapes: a CSV shapes file is the header M,N,K and one line per shape", path,
                 lineno ? lineno : 1);
  free(line_of);
  at_shapeset_free(&seen);
  free(f);
  if (rc) at_shape_list_free(out);
  return rc;
}

int at_shapes_load(const char *path, const at_op *op, at_shape_list *out) {
  memset(out, 0, sizeof *out);
  if (!ends_with(path, ".csv")) return at_space_load_shapes(path, op, &out->shapes, &out->names, &out->n);
  char *text;
  size_t size;
  AT_TRY(at_read_file(path, CSV_MAX_BYTES, &text, &size));
  int rc = memchr(text, 0, size) ? at_fail(AT_ERR_INPUT, "%s: a NUL byte: not a text file", path)
                                 : at_shapes_parse_csv(path, text, op, out);
  free(text);
  return rc;
}

/* ---- choosing groups -------------------------------------------------------------------------- */

/* NAME chooses the group NAME and the groups under it (NAME/...); wildcards as in the shell. */
static int chooses(const char *pattern, const char *name) {
  if (!name) return 0;
  if (fnmatch(pattern, name, 0) == 0) return 1;
  char *under = at_xasprintf("%s/*", pattern);
  int yes = fnmatch(under, name, 0) == 0;
  free(under);
  return yes;
}

/* "a, b, c" (the distinct group names, at most 12), for messages. */
static void group_names(const at_shape_list *l, char *out, size_t cap) {
  out[0] = 0;
  int shown = 0;
  for (size_t i = 0; i < l->n; i++) {
    if (!l->names[i]) continue;
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++) seen = l->names[j] && strcmp(l->names[j], l->names[i]) == 0;
    if (seen) continue;
    if (shown++ == 12) {
      strncat(out, ", ...", cap - strlen(out) - 1);
      return;
    }
    if (shown > 1) strncat(out, ", ", cap - strlen(out) - 1);
    strncat(out, l->names[i], cap - strlen(out) - 1);
  }
}

int at_shapes_select(at_shape_list *l, const char *only, const char *source) {
  if (!only) return AT_OK;
  char known[1024];
  group_names(l, known, sizeof known);
  if (!known[0]) return at_fail(AT_ERR_INPUT, "--only: %s has no named shape groups to choose from", source);
  uint8_t *keep = at_xcalloc(l->n ? l->n : 1, 1);
  char *copy = at_xstrdup(only), *save = NULL;
  int rc = AT_OK, any = 0;
  for (char *tok = strtok_r(copy, ",", &save); tok && rc == AT_OK; tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ') tok++;
    int hit = 0;
    for (size_t i = 0; i < l->n; i++)
      if (chooses(tok, l->names[i])) keep[i] = 1, hit = 1;
    if (!hit) rc = at_fail(AT_ERR_INPUT, "--only: '%s' names no shape group of %s (its groups: %s)", tok, source, known);
    any = 1;
  }
  if (rc == AT_OK && !any) rc = at_fail(AT_ERR_INPUT, "--only: empty list (the groups of %s: %s)", source, known);
  if (rc == AT_OK) {
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) {
      if (keep[i]) {
        l->shapes[n] = l->shapes[i];
        l->names[n++] = l->names[i];
      } else {
        free(l->names[i]);
      }
    }
    l->n = n;
  }
  free(copy);
  free(keep);
  return rc;
}

int at_space_use_shapes(at_space *s, const char *path, const char *only) {
  if (!path && !only) return AT_OK;
  at_shape_list l = {0};
  if (path) {
    int rc = at_shapes_load(path, s->op, &l);
    if (rc) {
      at_errctx("--shapes");
      return rc;
    }
  } else { /* the space's own shapes, handed over */
    l = (at_shape_list){s->shapes, s->shape_names, s->nshapes};
    s->shapes = NULL, s->shape_names = NULL, s->nshapes = 0;
  }
  int rc = at_shapes_select(&l, only, path ? path : s->path);
  if (rc) {
    if (!path) { /* give them back */
      s->shapes = l.shapes, s->shape_names = l.names, s->nshapes = l.n;
      return rc;
    }
    at_shape_list_free(&l);
    return rc;
  }
  for (size_t i = 0; i < s->nshapes; i++) free(s->shape_names ? s->shape_names[i] : NULL);
  free(s->shape_names);
  free(s->shapes);
  s->shapes = l.shapes, s->shape_names = l.names, s->nshapes = l.n;
  return AT_OK;
}
