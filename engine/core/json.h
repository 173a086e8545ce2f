/* json.h: a small JSON reader for the exported config files (the runtime and `autotune query`
 * read them). Strict RFC 8259, numbers as double and, when integral, int64; depth limited. */
#ifndef AT_JSON_H
#define AT_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum { AT_J_NULL, AT_J_BOOL, AT_J_NUMBER, AT_J_STRING, AT_J_ARRAY, AT_J_OBJECT } at_json_kind;

typedef struct at_json {
  at_json_kind kind;
  double number;
  int64_t integer; /* valid when is_integer */
  int is_integer;
  int boolean;
  char *string;
  char **keys;           /* objects: keys[i] names items[i] */
  struct at_json **items; /* arrays and objects */
  size_t n;
} at_json;

/* Parses text; AT_ERR_INPUT with "name:line:col: message" on malformed input. */
int at_json_parse(const char *name, const char *text, size_t len, at_json **out);
int at_json_load(const char *path, at_json **out);
void at_json_free(at_json *j);

const at_json *at_json_get(const at_json *obj, const char *key); /* NULL when absent or not an object */
const char *at_json_str(const at_json *obj, const char *key);     /* NULL unless a string */
int at_json_int(const at_json *obj, const char *key, int64_t *out); /* 0 when an integer */
/* A string member copied into out[n]: AT_ERR_INPUT naming the file (name) and key when it is too
 * long, or missing and required (missing and not required: out unchanged, AT_OK). */
int at_json_copy_str(const char *name, const at_json *o, const char *key, char *out, size_t n, int required);

struct at_buf;
/* Appends the value as JSON text (integers as such, other numbers with 17 digits). */
void at_json_write(struct at_buf *b, const at_json *v);

#endif
