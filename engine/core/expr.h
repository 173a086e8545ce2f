/* expr.h: the constraint language of search spaces.
 *
 * Integers only (int64), with + - * / %, comparisons, && || ! (short-circuit), parentheses and the
 * functions min(a, b, ...) and max(a, b, ...). Comparisons and logic give 0 or 1. Division or
 * remainder by zero and any int64 overflow are errors, never wrapped values.
 *
 * An expression is parsed once, its identifiers are bound once to slots of a value table (names
 * unknown to the table are an error with their column), and then evaluated many times against
 * that table: enumeration evaluates each constraint for every candidate. Columns in errors are
 * 0-based byte offsets into the text; the caller turns them into file:line:col. */
#ifndef AT_EXPR_H
#define AT_EXPR_H

#include <stddef.h>
#include <stdint.h>

typedef struct at_expr at_expr;

/* Parses text. On failure returns AT_ERR_INPUT, with the message (no position) from at_errmsg()
 * and the offset of the problem in *err_col. */
int at_expr_parse(const char *text, at_expr **out, int *err_col);

/* Binds every identifier to its index in names[0..n). An identifier not in names fails with
 * "unknown name 'X'" and its offset. */
int at_expr_bind(at_expr *e, const char *const *names, size_t n, int *err_col);

/* Does the expression mention this name? (After or before binding.) */
int at_expr_uses(const at_expr *e, const char *name);

/* Evaluates a bound expression with values[i] for names[i]. Fails with AT_ERR_INPUT on division
 * by zero or overflow, with the operator's offset in *err_col. */
int at_expr_eval(const at_expr *e, const int64_t *values, int64_t *out, int *err_col);

void at_expr_free(at_expr *e);

#endif
