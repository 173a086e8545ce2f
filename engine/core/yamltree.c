/* yamltree.c: libyaml events -> at_ynode tree, with the strictness rules of yamltree.h. */
#include "yamltree.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util.h"

static int fail_at(const char *path, size_t line0, size_t col0, const char *fmt, const char *arg) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, arg ? arg : "");
  return at_fail(AT_ERR_INPUT, "%s:%zu:%zu: %s", path, line0 + 1, col0 + 1, msg);
}

/* Finds the first byte that is not valid UTF-8 (overlongs, surrogates and > U+10FFFF included).
 * Returns its offset, or -1 when the text is valid. */
static long invalid_utf8_at(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t len;
    unsigned min;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, min = 0x80, c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min = 0x800, c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min = 0x10000, c &= 0x07;
    } else {
      return (long)i;
    }
    if (i + len > n) return (long)i;
    for (size_t j = 1; j < len; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return (long)i;
      c = (c << 6) | (s[i + j] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return (long)i;
    i += len;
  }
  return -1;
}

static void offset_to_linecol(const char *s, size_t off, size_t *line0, size_t *col0) {
  size_t line = 0, col = 0;
  for (size_t i = 0; i < off; i++) {
    if (s[i] == '\n')
      line++, col = 0;
    else if (((unsigned char)s[i] & 0xC0) != 0x80)
      col++;
  }
  *line0 = line;
  *col0 = col;
}

static void free_node(at_ynode *n) {
  if (!n) return;
  for (size_t i = 0; i < n->n; i++) {
    free_node(n->items[i]);
    if (n->keys) free_node(n->keys[i]);
  }
  free(n->items);
  free(n->keys);
  free(n->value);
  free(n);
}

typedef struct builder {
  const char *path;
  const char *text;
  size_t size;
  yaml_parser_t parser;
  int depth;
} builder;

static int next_event(builder *b, yaml_event_t *ev) {
  if (!yaml_parser_parse(&b->parser, ev)) {
    yaml_parser_t *p = &b->parser;
    if (p->error == YAML_READER_ERROR) {
      /* Reader errors (bad characters) come with a byte offset, not a mark. */
      size_t line0, col0;
      offset_to_linecol(b->text, p->problem_offset < b->size ? p->problem_offset : b->size, &line0, &col0);
      return fail_at(b->path, line0, col0, "%s", p->problem ? p->problem : "unreadable text");
    }
    char msg[512];
    if (p->context)
      snprintf(msg, sizeof msg, "%s (%s at line %zu)", p->problem ? p->problem : "syntax error",
               p->context, p->context_mark.line + 1);
    else
      snprintf(msg, sizeof msg, "%s", p->problem ? p->problem : "syntax error");
    return fail_at(b->path, p->problem_mark.line, p->problem_mark.column, "%s", msg);
  }
  return AT_OK;
}

static at_ynode *new_node(at_ynode_kind kind, const yaml_mark_t *m) {
  at_ynode *n = at_xcalloc(1, sizeof *n);
  n->kind = kind;
  n->line = (int)m->line + 1;
  n->col = (int)m->column + 1;
  n->offset = m->index;
  return n;
}

static void push(at_ynode *parent, at_ynode *key, at_ynode *item) {
  parent->items = at_xrealloc(parent->items, sizeof(at_ynode *) * (parent->n + 1));
  parent->items[parent->n] = item;
  if (parent->kind == AT_Y_MAP) {
    parent->keys = at_xrealloc(parent->keys, sizeof(at_ynode *) * (parent->n + 1));
    parent->keys[parent->n] = key;
  }
  parent->n++;
}

/* Rejects what a search space never needs: anchors, aliases, explicit tags. */
static int check_plain(builder *b, const yaml_event_t *ev) {
  const yaml_mark_t *m = &ev->start_mark;
  const char *anchor = NULL, *tag = NULL;
  if (ev->type == YAML_ALIAS_EVENT)
    return fail_at(b->path, m->line, m->column, "aliases (*%s) are not allowed in a search space",
                   (const char *)ev->data.alias.anchor);
  if (ev->type == YAML_SCALAR_EVENT) {
    anchor = (const char *)ev->data.scalar.anchor;
    tag = (const char *)ev->data.scalar.tag;
  } else if (ev->type == YAML_SEQUENCE_START_EVENT) {
    anchor = (const char *)ev->data.sequence_start.anchor;
    tag = (const char *)ev->data.sequence_start.tag;
  } else if (ev->type == YAML_MAPPING_START_EVENT) {
    anchor = (const char *)ev->data.mapping_start.anchor;
    tag = (const char *)ev->data.mapping_start.tag;
  }
  if (anchor) return fail_at(b->path, m->line, m->column, "anchors (&%s) are not allowed in a search space", anchor);
  if (tag) return fail_at(b->path, m->line, m->column, "tags (%s) are not allowed in a search space", tag);
  return AT_OK;
}

static int build_node(builder *b, yaml_event_t *ev, at_ynode **out);

static int build_children(builder *b, at_ynode *parent) {
  for (;;) {
    yaml_event_t ev;
    AT_TRY(next_event(b, &ev));
    if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&ev);
      return AT_OK;
    }
    at_ynode *key = NULL, *item = NULL;
    int rc = build_node(b, &ev, parent->kind == AT_Y_MAP ? &key : &item);
    yaml_event_delete(&ev);
    if (rc) return rc;
    if (parent->kind == AT_Y_MAP) {
      if (key->kind != AT_Y_SCALAR) {
        rc = fail_at(b->path, (size_t)key->line - 1, (size_t)key->col - 1, "mapping keys must be plain names%s", NULL);
        free_node(key);
        return rc;
      }
      for (size_t i = 0; i < parent->n; i++)
        if (strcmp(parent->keys[i]->value, key->value) == 0) {
          char msg[300];
          snprintf(msg, sizeof msg, "duplicate key '%.200s' (first at line %d)", key->value, parent->keys[i]->line);
          rc = fail_at(b->path, (size_t)key->line - 1, (size_t)key->col - 1, "%s", msg);
          free_node(key);
          return rc;
        }
      if ((rc = next_event(b, &ev))) {
        free_node(key);
        return rc;
      }
      rc = build_node(b, &ev, &item);
      yaml_event_delete(&ev);
      if (rc) {
        free_node(key);
        return rc;
      }
    }
    push(parent, key, item);
  }
}

static int build_node(builder *b, yaml_event_t *ev, at_ynode **out) {
  *out = NULL;
  AT_TRY(check_plain(b, ev));
  const yaml_mark_t *m = &ev->start_mark;
  switch (ev->type) {
  case YAML_SCALAR_EVENT: {
    at_ynode *n = new_node(AT_Y_SCALAR, m);
    n->value = at_xstrndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
    n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    n->style = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE           ? AT_Y_PLAIN
               : ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ? AT_Y_SINGLE
               : ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE ? AT_Y_DOUBLE
                                                                          : AT_Y_BLOCK;
    *out = n;
    return AT_OK;
  }
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: {
    if (b->depth >= AT_YAML_MAX_DEPTH)
      return fail_at(b->path, m->line, m->column, "nesting is deeper than %s levels", "32");
    at_ynode *n = new_node(ev->type == YAML_SEQUENCE_START_EVENT ? AT_Y_SEQ : AT_Y_MAP, m);
    b->depth++;
    int rc = build_children(b, n);
    b->depth--;
    if (rc) {
      free_node(n);
      return rc;
    }
    *out = n;
    return AT_OK;
  }
  default:
    return fail_at(b->path, m->line, m->column, "unexpected YAML event%s", NULL);
  }
}

int at_yaml_parse(const char *path, const char *text, size_t size, at_ydoc **out) {
  *out = NULL;
  if (size > AT_YAML_MAX_BYTES)
    return at_fail(AT_ERR_INPUT, "%s:1:1: file is %zu bytes, over the limit of %u bytes (1 MiB)", path, size,
                   AT_YAML_MAX_BYTES);
  long bad = invalid_utf8_at((const unsigned char *)text, size);
  if (bad >= 0) {
    size_t line0, col0;
    offset_to_linecol(text, (size_t)bad, &line0, &col0);
    return fail_at(path, line0, col0, "text is not valid UTF-8 (byte 0x%s)",
                   (char[3]){"0123456789abcdef"[((unsigned char)text[bad]) >> 4],
                             "0123456789abcdef"[((unsigned char)text[bad]) & 15], 0});
  }
  if (memchr(text, 0, size)) {
    size_t line0, col0;
    offset_to_linecol(text, (size_t)((const char *)memchr(text, 0, size) - text), &line0, &col0);
    return fail_at(path, line0, col0, "text contains a NUL byte%s", NULL);
  }
  builder b = {.path = path, .text = text, .size = size};
  if (!yaml_parser_initialize(&b.parser)) return at_fail(AT_ERR_RUNTIME, "libyaml: cannot initialise a parser");
  yaml_parser_set_input_string(&b.parser, (const unsigned char *)text, size);
  yaml_parser_set_encoding(&b.parser, YAML_UTF8_ENCODING);

  at_ydoc *doc = at_xcalloc(1, sizeof *doc);
  doc->path = at_xstrdup(path);
  doc->text = at_xstrndup(text, size);
  doc->size = size;
  int rc = AT_OK, docs = 0;
  for (;;) {
    yaml_event_t ev;
    if ((rc = next_event(&b, &ev))) break;
    yaml_event_type_t t = ev.type;
    if (t == YAML_STREAM_END_EVENT) {
      yaml_event_delete(&ev);
      break;
    }
    if (t == YAML_DOCUMENT_START_EVENT) {
      if (++docs > 1) {
        rc = fail_at(path, ev.start_mark.line, ev.start_mark.column,
                     "more than one YAML document; a search space is one document%s", NULL);
        yaml_event_delete(&ev);
        break;
      }
      if (ev.data.document_start.version_directive || ev.data.document_start.tag_directives.start !=
                                                          ev.data.document_start.tag_directives.end) {
        rc = fail_at(path, ev.start_mark.line, ev.start_mark.column, "YAML directives are not allowed%s", NULL);
        yaml_event_delete(&ev);
        break;
      }
    } else if (t == YAML_SCALAR_EVENT || t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT ||
               t == YAML_ALIAS_EVENT) {
      rc = build_node(&b, &ev, &doc->root);
    }
    yaml_event_delete(&ev);
    if (rc) break;
  }
  yaml_parser_delete(&b.parser);
  if (rc) {
    at_yaml_free(doc);
    return rc;
  }
  *out = doc;
  return AT_OK;
}

int at_yaml_load(const char *path, at_ydoc **out) {
  char *text;
  size_t size;
  *out = NULL;
  AT_TRY(at_read_file(path, AT_YAML_MAX_BYTES, &text, &size));
  int rc = at_yaml_parse(path, text, size, out);
  free(text);
  return rc;
}

void at_yaml_free(at_ydoc *doc) {
  if (!doc) return;
  free_node(doc->root);
  free(doc->path);
  free(doc->text);
  free(doc);
}

at_ynode *at_ymap_get(const at_ynode *map, const char *key) {
  if (!map || map->kind != AT_Y_MAP) return NULL;
  for (size_t i = 0; i < map->n; i++)
    if (strcmp(map->keys[i]->value, key) == 0) return map->items[i];
  return NULL;
}

const char *at_ykind_name(at_ynode_kind k) {
  return k == AT_Y_SCALAR ? "a scalar" : k == AT_Y_SEQ ? "a list" : "a mapping";
}

void at_yaml_scalar_pos(const at_ydoc *doc, const at_ynode *n, size_t value_offset, int *line, int *col) {
  *line = n->line;
  *col = n->col;
  if (!doc || !doc->text || n->kind != AT_Y_SCALAR || n->offset >= doc->size) return;
  const char *t = doc->text, *end = doc->text + doc->size, *p = t + n->offset;
  if (n->style == AT_Y_BLOCK) { /* the value starts on the line after the indicator */
    while (p < end && *p != '\n') p++;
    while (p < end && (*p == '\n' || *p == ' ')) p++;
  } else if (n->style != AT_Y_PLAIN) {
    p++; /* the opening quote */
  }
  /* Walk the source and the value together: folded line breaks and their indentation in the
   * source are one space (or nothing) in the value; an escape is two source bytes for one. */
  const char *v = n->value;
  for (size_t i = 0; i < value_offset && v[i] && p < end; i++) {
    if (*p == v[i]) {
      p++;
      continue;
    }
    if (*p == '\\' && n->style == AT_Y_DOUBLE) {
      p += 2;
      continue;
    }
    if (*p == '\n' || *p == ' ' || *p == '\r' || *p == '\t') {
      while (p < end && (*p == '\n' || *p == ' ' || *p == '\r' || *p == '\t')) p++;
      if (v[i] != ' ' && v[i] != '\n' && p < end) p++; /* the value's character after nothing folded */
      continue;
    }
    p++;
  }
  /* Count from the node itself, whose position is known: no scan from the top of the file. */
  int l = n->line, c = n->col;
  for (const char *q = t + n->offset; q < p; q++) {
    if (*q == '\n')
      l++, c = 1;
    else if (((unsigned char)*q & 0xC0) != 0x80)
      c++;
  }
  *line = l;
  *col = c;
}
