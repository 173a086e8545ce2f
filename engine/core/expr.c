/* expr.c: recursive-descent parser and tree evaluator for the constraint language (expr.h).
 *
 * Precedence, lowest first, as in C: ||, &&, == !=, < <= > >=, + -, * / %, unary ! - +. */
#include "expr.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef enum {
  N_INT, N_VAR, N_NEG, N_NOT, N_ADD, N_SUB, N_MUL, N_DIV, N_MOD,
  N_LT, N_LE, N_GT, N_GE, N_EQ, N_NE, N_AND, N_OR, N_MIN, N_MAX,
} node_kind;

typedef struct node {
  node_kind kind;
  int col;          /* offset of the token, for errors */
  int64_t value;    /* N_INT */
  char *name;       /* N_VAR */
  int slot;         /* N_VAR after binding, -1 before */
  struct node **kids;
  int nkids;
} node;

struct at_expr {
  node *root;
};

typedef struct parser {
  const char *text;
  const char *p;
  int err_col;
  int failed;
  int depth; /* nesting of parentheses, calls and unary operators */
} parser;

/* Limits that keep every recursion over the tree (parse, bind, eval, free) shallow: a constraint
 * is a line of arithmetic, not a program. */
enum { MAX_TEXT = 4096, MAX_DEPTH = 64 };

static node *new_node(node_kind k, int col) {
  node *n = at_xcalloc(1, sizeof *n);
  n->kind = k;
  n->col = col;
  n->slot = -1;
  return n;
}

static void add_kid(node *n, node *kid) {
  n->kids = at_xrealloc(n->kids, sizeof(node *) * (size_t)(n->nkids + 1));
  n->kids[n->nkids++] = kid;
}

static void free_node(node *n) {
  if (!n) return;
  for (int i = 0; i < n->nkids; i++) free_node(n->kids[i]);
  free(n->kids);
  free(n->name);
  free(n);
}

static int col_of(parser *ps) { return (int)(ps->p - ps->text); }

static node *fail(parser *ps, int col, const char *msg, const char *arg) {
  if (!ps->failed) {
    ps->failed = 1;
    ps->err_col = col;
    if (arg)
      at_fail(AT_ERR_INPUT, msg, arg);
    else
      at_fail(AT_ERR_INPUT, "%s", msg);
  }
  return NULL;
}

static void skip_ws(parser *ps);

/* At a place that needed a closing token: a lone '=', '&' or '|' gets the helpful message. */
static node *fail_closing(parser *ps, const char *expected) {
  skip_ws(ps);
  char c = *ps->p;
  if (c == '=' || c == '&' || c == '|') {
    char tok[2] = {c, 0};
    return fail(ps, col_of(ps), "unexpected '%s' (use ==, && or ||)", tok);
  }
  return fail(ps, col_of(ps), expected, NULL);
}

static void skip_ws(parser *ps) {
  while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++;
}

/* Consumes op if the input starts with it (after whitespace). */
static int accept(parser *ps, const char *op) {
  skip_ws(ps);
  size_t n = strlen(op);
  if (strncmp(ps->p, op, n) != 0) return 0;
  /* "<" must not match the start of "<=", "!" not "!=", "=" is never an operator alone. */
  if (n == 1 && (op[0] == '<' || op[0] == '>' || op[0] == '!') && ps->p[1] == '=') return 0;
  ps->p += n;
  return 1;
}

static node *parse_or(parser *ps);

static node *binary(node_kind k, int col, node *l, node *r) {
  node *n = new_node(k, col);
  add_kid(n, l);
  add_kid(n, r);
  return n;
}

static node *parse_primary(parser *ps) {
  skip_ws(ps);
  int col = col_of(ps);
  const char *p = ps->p;
  if (*p == '(') {
    ps->p++;
    node *e = parse_or(ps);
    if (!e) return NULL;
    if (!accept(ps, ")")) {
      free_node(e);
      return fail_closing(ps, "expected ')'");
    }
    return e;
  }
  if (isdigit((unsigned char)*p)) {
    int64_t v = 0;
    while (isdigit((unsigned char)*ps->p)) {
      int d = *ps->p - '0';
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v))
        return fail(ps, col, "integer literal overflows 64 bits", NULL);
      ps->p++;
    }
    if (isalpha((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '.')
      return fail(ps, col, "malformed number (only integers are allowed)", NULL);
    node *n = new_node(N_INT, col);
    n->value = v;
    return n;
  }
  if (isalpha((unsigned char)*p) || *p == '_') {
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
    char *name = at_xstrndup(p, (size_t)(ps->p - p));
    skip_ws(ps);
    if (*ps->p == '(') {
      node_kind k;
      if (strcmp(name, "min") == 0)
        k = N_MIN;
      else if (strcmp(name, "max") == 0)
        k = N_MAX;
      else {
        node *r = fail(ps, col, "unknown function '%s' (there are min and max)", name);
        free(name);
        return r;
      }
      free(name);
      ps->p++;
      node *n = new_node(k, col);
      do {
        node *arg = parse_or(ps);
        if (!arg) {
          free_node(n);
          return NULL;
        }
        add_kid(n, arg);
      } while (accept(ps, ","));
      if (!accept(ps, ")")) {
        free_node(n);
        return fail_closing(ps, "expected ',' or ')'");
      }
      if (n->nkids < 2) {
        free_node(n);
        return fail(ps, col, "min and max take at least two arguments", NULL);
      }
      return n;
    }
    node *n = new_node(N_VAR, col);
    n->name = name;
    return n;
  }
  if (*p == 0) return fail(ps, col, "unexpected end of expression", NULL);
  char tok[2] = {*p, 0};
  return fail(ps, col, "unexpected '%s'", tok);
}

static node *parse_unary_inner(parser *ps);

static node *parse_unary(parser *ps) {
  if (++ps->depth > MAX_DEPTH) return fail(ps, col_of(ps), "expression nested too deeply (more than 64 levels)", NULL);
  node *n = parse_unary_inner(ps);
  ps->depth--;
  return n;
}

static node *parse_unary_inner(parser *ps) {
  skip_ws(ps);
  int col = col_of(ps);
  if (accept(ps, "!")) {
    node *k = parse_unary(ps);
    if (!k) return NULL;
    node *n = new_node(N_NOT, col);
    add_kid(n, k);
    return n;
  }
  if (accept(ps, "-")) {
    node *k = parse_unary(ps);
    if (!k) return NULL;
    node *n = new_node(N_NEG, col);
    add_kid(n, k);
    return n;
  }
  if (accept(ps, "+")) return parse_unary(ps);
  return parse_primary(ps);
}

/* One precedence level: operand (op operand)*, with the operators of that level. */
typedef struct level_op {
  const char *text;
  node_kind kind;
} level_op;

static node *parse_level(parser *ps, int level);

static const level_op LEVELS[][5] = {
    {{"||", N_OR}, {0}},
    {{"&&", N_AND}, {0}},
    {{"==", N_EQ}, {"!=", N_NE}, {0}},
    {{"<=", N_LE}, {">=", N_GE}, {"<", N_LT}, {">", N_GT}, {0}},
    {{"+", N_ADD}, {"-", N_SUB}, {0}},
    {{"*", N_MUL}, {"/", N_DIV}, {"%", N_MOD}, {0}},
};
enum { NLEVELS = (int)AT_ARRAY_LEN(LEVELS) };

static node *parse_level(parser *ps, int level) {
  if (level == NLEVELS) return parse_unary(ps);
  node *l = parse_level(ps, level + 1);
  if (!l) return NULL;
  for (;;) {
    skip_ws(ps);
    int col = col_of(ps);
    const level_op *hit = NULL;
    for (const level_op *op = LEVELS[level]; op->text; op++) {
      if (accept(ps, op->text)) {
        hit = op;
        break;
      }
    }
    if (!hit) return l;
    node *r = parse_level(ps, level + 1);
    if (!r) {
      free_node(l);
      return NULL;
    }
    l = binary(hit->kind, col, l, r);
  }
}

static node *parse_or(parser *ps) { return parse_level(ps, 0); }

int at_expr_parse(const char *text, at_expr **out, int *err_col) {
  parser ps = {text, text, 0, 0, 0};
  *out = NULL;
  if (strlen(text) > MAX_TEXT) {
    *err_col = MAX_TEXT;
    return at_fail(AT_ERR_INPUT, "expression longer than %d characters", MAX_TEXT);
  }
  node *root = parse_or(&ps);
  if (root) {
    skip_ws(&ps);
    if (*ps.p) {
      free_node(root);
      root = NULL;
      if (ps.p[0] == '=' || ps.p[0] == '&' || ps.p[0] == '|')
        fail(&ps, col_of(&ps), "unexpected '%s' (use ==, && or ||)",
             ps.p[0] == '=' ? "=" : ps.p[0] == '&' ? "&" : "|");
      else
        fail(&ps, col_of(&ps), "unexpected text after the expression", NULL);
    }
  }
  if (!root) {
    *err_col = ps.err_col;
    return AT_ERR_INPUT;
  }
  *out = at_xcalloc(1, sizeof **out);
  (*out)->root = root;
  return AT_OK;
}

static int bind_node(node *n, const char *const *names, size_t count, int *err_col) {
  if (n->kind == N_VAR) {
    for (size_t i = 0; i < count; i++)
      if (strcmp(names[i], n->name) == 0) {
        n->slot = (int)i;
        return AT_OK;
      }
    *err_col = n->col;
    return at_fail(AT_ERR_INPUT, "unknown name '%s'", n->name);
  }
  for (int i = 0; i < n->nkids; i++) AT_TRY(bind_node(n->kids[i], names, count, err_col));
  return AT_OK;
}

int at_expr_bind(at_expr *e, const char *const *names, size_t n, int *err_col) {
  return bind_node(e->root, names, n, err_col);
}

static int uses_node(const node *n, const char *name) {
  if (n->kind == N_VAR) return strcmp(n->name, name) == 0;
  for (int i = 0; i < n->nkids; i++)
    if (uses_node(n->kids[i], name)) return 1;
  return 0;
}

int at_expr_uses(const at_expr *e, const char *name) { return uses_node(e->root, name); }

static int eval(const node *n, const int64_t *v, int64_t *out, int *err_col) {
  int64_t a, b;
  switch (n->kind) {
  case N_INT: *out = n->value; return AT_OK;
  case N_VAR: *out = v[n->slot]; return AT_OK;
  case N_NEG:
    AT_TRY(eval(n->kids[0], v, &a, err_col));
    if (a == INT64_MIN) goto overflow;
    *out = -a;
    return AT_OK;
  case N_NOT:
    AT_TRY(eval(n->kids[0], v, &a, err_col));
    *out = !a;
    return AT_OK;
  case N_AND:
    AT_TRY(eval(n->kids[0], v, &a, err_col));
    if (!a) return *out = 0, AT_OK;
    AT_TRY(eval(n->kids[1], v, &b, err_col));
    *out = b != 0;
    return AT_OK;
  case N_OR:
    AT_TRY(eval(n->kids[0], v, &a, err_col));
    if (a) return *out = 1, AT_OK;
    AT_TRY(eval(n->kids[1], v, &b, err_col));
    *out = b != 0;
    return AT_OK;
  case N_MIN:
  case N_MAX:
    AT_TRY(eval(n->kids[0], v, &a, err_col));
    for (int i = 1; i < n->nkids; i++) {
      AT_TRY(eval(n->kids[i], v, &b, err_col));
      if (n->kind == N_MIN ? b < a : b > a) a = b;
    }
    *out = a;
    return AT_OK;
  default: break;
  }
  AT_TRY(eval(n->kids[0], v, &a, err_col));
  AT_TRY(eval(n->kids[1], v, &b, err_col));
  switch (n->kind) {
  case N_ADD: if (__builtin_add_overflow(a, b, out)) goto overflow; return AT_OK;
  case N_SUB: if (__builtin_sub_overflow(a, b, out)) goto overflow; return AT_OK;
  case N_MUL: if (__builtin_mul_overflow(a, b, out)) goto overflow; return AT_OK;
  case N_DIV:
  case N_MOD:
    if (b == 0) {
      *err_col = n->col;
      return at_fail(AT_ERR_INPUT, "division by zero");
    }
    if (a == INT64_MIN && b == -1) goto overflow;
    *out = n->kind == N_DIV ? a / b : a % b;
    return AT_OK;
  case N_LT: *out = a < b; return AT_OK;
  case N_LE: *out = a <= b; return AT_OK;
  case N_GT: *out = a > b; return AT_OK;
  case N_GE: *out = a >= b; return AT_OK;
  case N_EQ: *out = a == b; return AT_OK;
  case N_NE: *out = a != b; return AT_OK;
  default: break;
  }
  return at_fail(AT_ERR_RUNTIME, "expr: bad node");
overflow:
  *err_col = n->col;
  return at_fail(AT_ERR_INPUT, "integer overflow");
}

int at_expr_eval(const at_expr *e, const int64_t *values, int64_t *out, int *err_col) {
  return eval(e->root, values, out, err_col);
}

void at_expr_free(at_expr *e) {
  if (!e) return;
  free_node(e->root);
  free(e);
}
