/* space.h: a search space, as loaded from its YAML file (docs/search-space.md is the reference).
 *
 * Loading validates everything that can be validated without compiling: types, names, value
 * lists, constraint syntax and names, template files, shapes against the op's rules. Every error
 * is AT_ERR_INPUT with "file:line:col: message". A loaded space is immutable. */
#ifndef AT_SPACE_H
#define AT_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "op.h"
#include "expr.h"

typedef struct at_param_def {
  char *name;
  int64_t *values;
  size_t n;
  int line, col;
  int launch; /* the entry leaves it out: a launch parameter, passed to the kernel at run time */
} at_param_def;

typedef struct at_constraint {
  char *name;
  char *text;
  at_expr *expr;
  int line, col;  /* where the expression text starts in the file */
  int *pos;       /* pos[2i], pos[2i+1]: line and column of character i of text (for errors) */
  int uses_shape; /* mentions M, N or K: evaluated per shape, not once per candidate */
} at_constraint;

typedef struct at_variant {
  char *name;
  char *family;
  char *template_arg;  /* as written in the file */
  char *template_path; /* resolved against the file's directory */
  char *entry;         /* name-expression pattern, e.g. "kernel<BLOCK_M, BLOCK_N>" */
  int line, col;
  at_param_def *params;
  size_t nparams;
  size_t nlaunch; /* launch parameters among params: candidates differing only in them share a kernel */
  at_constraint *constraints;
  size_t nconstraints;
  /* The names constraints may use, in slot order: params, then M N K, then the device limits
   * (limits.h), then the op's derived values. A value table has one entry per name. */
  const char **names;
  size_t nnames;
  size_t slot_shape, slot_limits, slot_derived;
} at_variant;

typedef struct at_timing {
  int warmup;          /* timed-graph replays before sampling */
  int samples;         /* samples per candidate and shape (>= 10) */
  int cut_after;       /* samples taken before a slow candidate may be cut */
  double cut_factor;   /* cut when the median so far exceeds cut_factor x the best so far */
  int retime_top;      /* leaders re-timed side by side per shape */
  int retime_samples;  /* samples per leader in that re-timing */
  double l2_multiple;  /* distinct input bytes read per sample, as a multiple of the L2 size */
  double timeout_s;    /* budget of one (candidate, shape) evaluation in the worker */
} at_timing;

typedef struct at_space {
  char *path;
  char *dir;
  char *op_name;
  const at_op *op;
  char *tag;
  at_variant *variants;
  size_t nvariants;
  at_shape *shapes; /* every (M, N, K), in file order */
  char **shape_names; /* shape_names[i]: the `name` of shapes[i]'s group, NULL when it has none */
  size_t nshapes;
  double atol, rtol, gamma; /* the check's bound (docs/timing.md); gamma 0 unless set */
  uint64_t seed;
  at_timing timing;
  char hash[65]; /* SHA-256 of the file */
} at_space;

int at_space_load(const char *path, at_space **out);
void at_space_free(at_space *s);

/* The shapes of a YAML file of their own: a list of shape groups written like a space's `shapes:`
 * section (or a mapping with that key, a space file included), checked against op's rules; errors
 * are AT_ERR_INPUT with "file:line:col: message". *shapes and *names (one per shape, NULL for a
 * group without a name; names may be NULL when not wanted) are malloc'd. */
int at_space_load_shapes(const char *path, const at_op *op, at_shape **shapes, char ***names, size_t *n);

/* A shape group's name: 1 to 63 letters, digits and _ - . + /, starting with a letter or digit
 * (a comma would break --only lists, a space a table). */
int at_shape_name_ok(const char *s);

/* The kernel name expression of one candidate: entry with every parameter name replaced by its
 * value, e.g. "kernel<64, 128>". malloc'd. */
char *at_variant_name_expr(const at_variant *v, const int64_t *values);

/* Formats an error at a constraint: "file:line:col: constraint 'name': msg", col being the
 * 0-based offset into the expression text. Returns AT_ERR_INPUT. */
int at_space_constraint_error(const at_space *s, const at_constraint *c, int col);

#endif
