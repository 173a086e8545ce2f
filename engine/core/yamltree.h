/* yamltree.h: a strict YAML reader that turns a file into a small tree with a position on every
 * node, for the search-space loader.
 *
 * Strict on purpose: a search space is a config file, and anything surprising in it is an error
 * with file:line:col, not a silent interpretation. Rejected: anchors and aliases, explicit tags,
 * more than one document, nesting deeper than AT_YAML_MAX_DEPTH, duplicate keys, non-scalar keys,
 * text that is not UTF-8, and files over AT_YAML_MAX_BYTES. */
#ifndef AT_YAMLTREE_H
#define AT_YAMLTREE_H

#include <stddef.h>
#include <stdint.h>

#define AT_YAML_MAX_BYTES (1u << 20)
#define AT_YAML_MAX_DEPTH 32

typedef enum { AT_Y_SCALAR, AT_Y_SEQ, AT_Y_MAP } at_ynode_kind;
typedef enum { AT_Y_PLAIN, AT_Y_SINGLE, AT_Y_DOUBLE, AT_Y_BLOCK } at_yscalar_style;

typedef struct at_ynode {
  at_ynode_kind kind;
  int line, col;          /* 1-based position of the node's first character */
  char *value;            /* scalar text */
  int quoted;             /* a quoted or block scalar: always a string, never a number */
  at_yscalar_style style;
  size_t offset;          /* byte offset of the node in the text */
  struct at_ynode **keys; /* mapping keys (scalars), in file order */
  struct at_ynode **items;/* sequence items, or mapping values (items[i] belongs to keys[i]) */
  size_t n;
} at_ynode;

typedef struct at_ydoc {
  char *path;
  char *text; /* the source, for positions inside scalars */
  size_t size;
  at_ynode *root; /* NULL for an empty file */
} at_ydoc;

/* Reads and parses path. Errors are AT_ERR_INPUT "path:line:col: message". */
int at_yaml_load(const char *path, at_ydoc **out);
/* The same, from memory; path is used in messages only. */
int at_yaml_parse(const char *path, const char *text, size_t size, at_ydoc **out);
void at_yaml_free(at_ydoc *doc);

/* The value under key in a mapping, or NULL. */
at_ynode *at_ymap_get(const at_ynode *map, const char *key);

/* The 1-based line and column of the character at value_offset in a scalar's value, following
 * folded line breaks, quotes, escapes and block indicators back to the source. */
void at_yaml_scalar_pos(const at_ydoc *doc, const at_ynode *n, size_t value_offset, int *line, int *col);

/* Human name of a node kind for messages: "a scalar", "a list", "a mapping". */
const char *at_ykind_name(at_ynode_kind k);

#endif
