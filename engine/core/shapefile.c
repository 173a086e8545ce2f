/* shapefile.c: see shapefile.h. The YAML form is the space loader's own shapes parser
 * (at_space_load_shapes), so the two cannot drift apart; the CSV form is here. */
#include "shapefile.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "space.h"
#include "util.h"

enum { CSV_MAX_BYTES = 16u << 20 };

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

/* Trims spaces and tabs at both ends of [*b, *e). */
static void trim(const char **b, const char **e) {
  while (*b < *e && (**b == ' ' || **b == '\t')) (*b)++;
  while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t')) (*e)--;
}

/* Splits one line into exactly 3 comma-separated fields, trimmed, copied into out. Returns the
 * number of fields found (so that the caller can say what is wrong). */
static int split3(const char *line, const char *end, char out[3][64]) {
  int nf = 0;
  const char *p = line;
  for (;;) {
    const char *c = memchr(p, ',', (size_t)(end - p));
    const char *fe = c ? c : end, *fb = p;
    trim(&fb, &fe);
    if (nf < 3) snprintf(out[nf], sizeof out[nf], "%.*s", (int)(fe - fb), fb);
    nf++;
    if (!c) break;
    p = c + 1;
  }
  return nf;
}

int at_shapes_parse_csv(const char *path, const char *text, const at_op *op, at_shape **shapes, size_t *n) {
  *shapes = NULL;
  *n = 0;
  int col_of[3] = {-1, -1, -1}; /* the column of M, N and K */
  int *line_of = NULL;          /* the line of each shape, for "listed twice" */
  int lineno = 0, have_header = 0, rc = AT_OK;
  size_t cap = 0;
  if (strncmp(text, "\xEF\xBB\xBF", 3) == 0) text += 3; /* the byte-order mark some spreadsheets write */
  for (const char *p = text; *p && rc == AT_OK;) {
    const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
    const char *next = nl ? nl + 1 : end;
    lineno++;
    if (end > p && end[-1] == '\r') end--;
    const char *b = p, *e = end;
    p = next;
    trim(&b, &e);
    if (b == e || *b == '#') continue; /* blank lines and comments */
    char f[3][64];
    int nf = split3(b, e, f);
    if (!have_header) {
      static const char NAMES[3] = {'M', 'N', 'K'};
      for (int i = 0; i < nf && i < 3; i++)
        for (int d = 0; d < 3; d++)
          if (strlen(f[i]) == 1 && toupper((unsigned char)f[i][0]) == NAMES[d] && col_of[d] < 0) col_of[d] = i;
      if (nf != 3 || col_of[0] < 0 || col_of[1] < 0 || col_of[2] < 0)
        rc = at_fail(AT_ERR_INPUT, "%s:%d: the first line must be the header M,N,K (the columns in any order), got '%.*s'",
                     path, lineno, (int)(e - b), b);
      have_header = 1;
      continue;
    }
    if (nf != 3) {
      rc = at_fail(AT_ERR_INPUT, "%s:%d: a shape is 3 comma-separated integers (M, N and K), got %d field%s", path,
                   lineno, nf, nf == 1 ? "" : "s");
      break;
    }
    int64_t v[3];
    for (int d = 0; d < 3 && rc == AT_OK; d++) {
      const char *s = f[col_of[d]];
      if (at_parse_i64(s, &v[d]) != 0)
        rc = at_fail(AT_ERR_INPUT, "%s:%d: %c must be an integer, got '%s'", path, lineno, "MNK"[d], s);
    }
    if (rc) break;
    at_shape sh = {v[0], v[1], v[2]};
    int dim = 0;
    if (op->check_shape(&sh, &dim)) {
      rc = at_fail(AT_ERR_INPUT, "%s:%d: %s", path, lineno, at_errmsg());
      break;
    }
    for (size_t i = 0; i < *n && rc == AT_OK; i++)
      if ((*shapes)[i].m == sh.m && (*shapes)[i].n == sh.n && (*shapes)[i].k == sh.k)
        rc = at_fail(AT_ERR_INPUT, "%s:%d: shape M=%lld N=%lld K=%lld is listed twice (first on line %d)", path, lineno,
                     (long long)sh.m, (long long)sh.n, (long long)sh.k, line_of[i]);
    if (rc) break;
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      *shapes = at_xrealloc(*shapes, sizeof **shapes * cap);
      line_of = at_xrealloc(line_of, sizeof *line_of * cap);
    }
    line_of[*n] = lineno;
    (*shapes)[(*n)++] = sh;
  }
  if (rc == AT_OK && *n == 0)
    rc = at_fail(AT_ERR_INPUT, "%s:%d: no shapes: a CSV shapes file is the header M,N,K and one line per shape", path,
                 lineno ? lineno : 1);
  free(line_of);
  if (rc) {
    free(*shapes);
    *shapes = NULL;
    *n = 0;
  }
  return rc;
}

int at_shapes_load(const char *path, const at_op *op, at_shape **shapes, size_t *n) {
  *shapes = NULL;
  *n = 0;
  if (!ends_with(path, ".csv")) return at_space_load_shapes(path, op, shapes, n);
  char *text;
  size_t size;
  AT_TRY(at_read_file(path, CSV_MAX_BYTES, &text, &size));
  int rc = memchr(text, 0, size) ? at_fail(AT_ERR_INPUT, "%s: a NUL byte: not a text file", path)
                                 : at_shapes_parse_csv(path, text, op, shapes, n);
  free(text);
  return rc;
}
