/* json.c: see json.h. Recursive descent over the text, positions kept for errors. */
#include "json.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "util.h"

typedef struct jp {
  const char *name, *s, *end, *p;
  int depth;
} jp;

static int jfail(jp *j, const char *msg) {
  int line = 1, col = 1;
  for (const char *q = j->s; q < j->p && q < j->end; q++) {
    if (*q == '\n')
      line++, col = 1;
    else
      col++;
  }
  return at_fail(AT_ERR_INPUT, "%s:%d:%d: %s", j->name, line, col, msg);
}

static void ws(jp *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int value(jp *j, at_json **out);

static void put_utf8(at_buf *b, unsigned cp) {
  char c[4];
  if (cp < 0x80) {
    c[0] = (char)cp;
    at_buf_append(b, c, 1);
  } else if (cp < 0x800) {
    c[0] = (char)(0xC0 | (cp >> 6)), c[1] = (char)(0x80 | (cp & 63));
    at_buf_append(b, c, 2);
  } else if (cp < 0x10000) {
    c[0] = (char)(0xE0 | (cp >> 12)), c[1] = (char)(0x80 | ((cp >> 6) & 63)), c[2] = (char)(0x80 | (cp & 63));
    at_buf_append(b, c, 3);
  } else {
    c[0] = (char)(0xF0 | (cp >> 18)), c[1] = (char)(0x80 | ((cp >> 12) & 63)), c[2] = (char)(0x80 | ((cp >> 6) & 63)),
    c[3] = (char)(0x80 | (cp & 63));
    at_buf_append(b, c, 4);
  }
}

static int hex4(jp *j, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    if (j->p >= j->end || !isxdigit((unsigned char)*j->p)) return jfail(j, "bad \\u escape");
    char c = *j->p++;
    v = v * 16 + (unsigned)(isdigit((unsigned char)c) ? c - '0' : (tolower((unsigned char)c) - 'a' + 10));
  }
  *out = v;
  return AT_OK;
}

static int string(jp *j, char **out) {
  j->p++; /* the opening quote */
  at_buf b = {0};
  while (j->p < j->end && *j->p != '"') {
    unsigned char c = (unsigned char)*j->p++;
    if (c < 0x20) {
      at_buf_free(&b);
      return jfail(j, "control character in a string");
    }
    if (c != '\\') {
      at_buf_append(&b, &c, 1);
      continue;
    }
    if (j->p >= j->end) break;
    char e = *j->p++;
    const char *map = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
    const char *hit = strchr(map, e);
    if (e && hit) {
      at_buf_append(&b, &to[hit - map], 1);
    } else if (e == 'u') {
      unsigned cp;
      int rc = hex4(j, &cp);
      if (rc == AT_OK && cp >= 0xD800 && cp < 0xDC00) {
        unsigned lo = 0;
        if (j->p + 1 < j->end && j->p[0] == '\\' && j->p[1] == 'u') {
          j->p += 2;
          rc = hex4(j, &lo);
        }
        if (rc == AT_OK && (lo < 0xDC00 || lo > 0xDFFF)) rc = jfail(j, "lone surrogate in a \\u escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      } else if (rc == AT_OK && cp >= 0xDC00 && cp <= 0xDFFF) {
        rc = jfail(j, "lone surrogate in a \\u escape");
      }
      if (rc) {
        at_buf_free(&b);
        return rc;
      }
      put_utf8(&b, cp);
    } else {
      at_buf_free(&b);
      return jfail(j, "bad escape in a string");
    }
  }
  if (j->p >= j->end) {
    at_buf_free(&b);
    return jfail(j, "unterminated string");
  }
  j->p++;
  *out = at_buf_steal(&b);
  return AT_OK;
}

static int number(jp *j, at_json *v) {
  const char *start = j->p;
  if (*j->p == '-') j->p++;
  if (j->p >= j->end || !isdigit((unsigned char)*j->p)) return jfail(j, "bad number");
  while (j->p < j->end && *j->p && (isdigit((unsigned char)*j->p) || strchr("+-.eE", *j->p))) j->p++;
  char buf[64];
  size_t n = (size_t)(j->p - start);
  if (n >= sizeof buf) return jfail(j, "number too long");
  memcpy(buf, start, n);
  buf[n] = 0;
  char *end;
  v->number = strtod(buf, &end);
  if (*end || !isfinite(v->number)) return jfail(j, "bad number");
  v->kind = AT_J_NUMBER;
  if (!strpbrk(buf, ".eE") && fabs(v->number) < 9e15) {
    v->integer = strtoll(buf, NULL, 10);
    v->is_integer = 1;
  }
  return AT_OK;
}

static int literal(jp *j, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(j->end - j->p) < n || strncmp(j->p, word, n) != 0) return jfail(j, "unexpected text");
  j->p += n;
  return AT_OK;
}

static int container(jp *j, at_json *v, int object) {
  if (++j->depth > 64) return jfail(j, "nesting too deep");
  j->p++;
  v->kind = object ? AT_J_OBJECT : AT_J_ARRAY;
  ws(j);
  if (j->p < j->end && *j->p == (object ? '}' : ']')) {
    j->p++;
    j->depth--;
    return AT_OK;
  }
  for (;;) {
    char *key = NULL;
    ws(j);
    if (object) {
      if (j->p >= j->end || *j->p != '"') return jfail(j, "expected a key");
      AT_TRY(string(j, &key));
      ws(j);
      if (j->p >= j->end || *j->p != ':') {
        free(key);
        return jfail(j, "expected ':'");
      }
      j->p++;
    }
    at_json *item = NULL;
    int rc = value(j, &item);
    if (rc) {
      at_json_free(item);
      free(key);
      return rc;
    }
    v->items = at_xrealloc(v->items, sizeof *v->items * (v->n + 1));
    v->items[v->n] = item;
    if (object) {
      v->keys = at_xrealloc(v->keys, sizeof *v->keys * (v->n + 1));
      v->keys[v->n] = key;
    }
    v->n++;
    ws(j);
    if (j->p < j->end && *j->p == ',') {
      j->p++;
      continue;
    }
    if (j->p < j->end && *j->p == (object ? '}' : ']')) {
      j->p++;
      j->depth--;
      return AT_OK;
    }
    return jfail(j, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static int value(jp *j, at_json **out) {
  ws(j);
  at_json *v = at_xcalloc(1, sizeof *v);
  *out = v;
  if (j->p >= j->end) return jfail(j, "unexpected end of input");
  switch (*j->p) {
  case '{': return container(j, v, 1);
  case '[': return container(j, v, 0);
  case '"': v->kind = AT_J_STRING; return string(j, &v->string);
  case 't': v->kind = AT_J_BOOL, v->boolean = 1; return literal(j, "true");
  case 'f': v->kind = AT_J_BOOL; return literal(j, "false");
  case 'n': v->kind = AT_J_NULL; return literal(j, "null");
  default: return number(j, v);
  }
}

int at_json_parse(const char *name, const char *text, size_t len, at_json **out) {
  jp j = {name, text, text + len, text, 0};
  *out = NULL;
  at_json *v = NULL;
  int rc = value(&j, &v);
  if (rc == AT_OK) {
    ws(&j);
    if (j.p != j.end) rc = jfail(&j, "text after the JSON value");
  }
  if (rc) {
    at_json_free(v);
    return rc;
  }
  *out = v;
  return AT_OK;
}

int at_json_load(const char *path, at_json **out) {
  char *text;
  size_t n;
  *out = NULL;
  AT_TRY(at_read_file(path, 64u << 20, &text, &n));
  int rc = at_json_parse(path, text, n, out);
  free(text);
  return rc;
}

void at_json_free(at_json *j) {
  if (!j) return;
  for (size_t i = 0; i < j->n; i++) {
    at_json_free(j->items[i]);
    if (j->keys) free(j->keys[i]);
  }
  free(j->items);
  free(j->keys);
  free(j->string);
  free(j);
}

const at_json *at_json_get(const at_json *obj, const char *key) {
  if (!obj || obj->kind != AT_J_OBJECT) return NULL;
  for (size_t i = 0; i < obj->n; i++)
    if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
  return NULL;
}

const char *at_json_str(const at_json *obj, const char *key) {
  const at_json *v = at_json_get(obj, key);
  return v && v->kind == AT_J_STRING ? v->string : NULL;
}

int at_json_int(const at_json *obj, const char *key, int64_t *out) {
  const at_json *v = at_json_get(obj, key);
  if (!v || v->kind != AT_J_NUMBER || !v->is_integer) return -1;
  *out = v->integer;
  return 0;
}

void at_json_write(at_buf *b, const at_json *v) {
  switch (v->kind) {
  case AT_J_NULL: at_buf_puts(b, "null"); break;
  case AT_J_BOOL: at_buf_puts(b, v->boolean ? "true" : "false"); break;
  case AT_J_NUMBER:
    if (v->is_integer)
      at_buf_printf(b, "%lld", (long long)v->integer);
    else
      at_buf_printf(b, "%.17g", v->number);
    break;
  case AT_J_STRING: at_buf_json_string(b, v->string); break;
  case AT_J_ARRAY:
  case AT_J_OBJECT:
    at_buf_puts(b, v->kind == AT_J_ARRAY ? "[" : "{");
    for (size_t i = 0; i < v->n; i++) {
      if (i) at_buf_puts(b, ", ");
      if (v->kind == AT_J_OBJECT) {
        at_buf_json_string(b, v->keys[i]);
        at_buf_puts(b, ": ");
      }
      at_json_write(b, v->items[i]);
    }
    at_buf_puts(b, v->kind == AT_J_ARRAY ? "]" : "}");
    break;
  }
}

int at_json_copy_str(const char *name, const at_json *o, const char *key, char *out, size_t n, int required) {
  const char *v = at_json_str(o, key);
  if (!v) {
    if (!required) return AT_OK;
    return at_fail(AT_ERR_INPUT, "%s: \"%s\" is missing or not a string", name, key);
  }
  if (strlen(v) >= n) return at_fail(AT_ERR_INPUT, "%s: \"%s\" is too long", name, key);
  snprintf(out, n, "%s", v);
  return AT_OK;
}
