/* shapefile.h: a list of problem shapes from a file of its own (`--shapes FILE` of tune, compare and
 * report), and the choice of named groups in it (`--only NAME,...`).
 *
 * Two forms (docs/usage.md, "Shape files"):
 *  - CSV (a name ending in .csv): a header naming the columns M, N and K (any order, any case), and
 *    optionally `name`; other columns are ignored, so aiter's untuned (and tuned) CSV files read as
 *    they are; then one shape per line. Blank lines and lines starting with # are skipped.
 *  - YAML: a list of shape groups written like a space's `shapes:` section, each with an optional
 *    `name` (`- {name: llama3-8b/decode/qkv, N: 6144, K: 4096, M: [1, 16, 64]}`), or a mapping with
 *    the key `shapes` (a space file works).
 * Every shape is checked against the op's rules and appears once; errors are AT_ERR_INPUT and name
 * the file and line ("file:line: ...", YAML adds the column). */
#ifndef AT_SHAPEFILE_H
#define AT_SHAPEFILE_H

#include <stddef.h>

#include "op.h"

struct at_space;

typedef struct at_shape_list {
  at_shape *shapes; /* in file order */
  char **names;     /* names[i]: the name of shapes[i]'s group, NULL when it has none */
  size_t n;
} at_shape_list;

/* A file with no shape is an error. */
int at_shapes_load(const char *path, const at_op *op, at_shape_list *out);

/* The CSV form from text already read (path only names it in errors). */
int at_shapes_parse_csv(const char *path, const char *text, const at_op *op, at_shape_list *out);

/* Keeps the shapes whose group is chosen by `only`: comma-separated names, each choosing the
 * groups of that name and those under it (NAME/...), shell wildcards allowed (`*`/decode/`*`).
 * A name that chooses nothing is an error naming it and `source` (the file, for the message). */
int at_shapes_select(at_shape_list *l, const char *only, const char *source);

/* `--shapes FILE` and `--only NAMES` of a command on a loaded space: the space's shapes become the
 * file's (path NULL: its own), then only the chosen groups (only NULL: all). Checked against the
 * space's op; errors are AT_ERR_INPUT, naming the option. */
int at_space_use_shapes(struct at_space *s, const char *path, const char *only);

void at_shape_list_free(at_shape_list *l);

#endif
