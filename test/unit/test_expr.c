/* test_expr.c: the constraint language (engine/core/expr.h): parsing, binding and evaluation.
 *
 * Covers C precedence and associativity, short-circuit && and ||, min and max, unary - ! +, C's
 * truncating / and %, int64 limits, and every error with its message and 0-based column: parse
 * errors (bad literals, unknown functions, stray or single-character operators, unbalanced
 * parentheses, empty text), unknown names at bind, and division by zero and overflow at eval.
 * Pathologically deep expressions run in a child process so that a crash is a failed check. */
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/error.h"
#include "core/expr.h"

/* The value table every expression here is bound to. */
static const char *const NAMES[] = {"A", "B", "C", "big", "small", "M", "N"};
static const int64_t VALUES[] = {6, -4, 0, INT64_MAX, INT64_MIN, 64, 128};
enum { NNAMES = sizeof NAMES / sizeof NAMES[0] };

/* Prints which expression a failed check was about. */
static void context(int failures_before, const char *what, const char *text) {
  if (check_failures != failures_before) fprintf(stderr, "  ... %s: \"%s\"\n", what, text);
}

/* Parses, binds and evaluates text, which must succeed with the value want. */
static void expect_value(const char *text, int64_t want) {
  int before = check_failures, col = -1;
  at_expr *e = NULL;
  int64_t got = 0;
  int rc = at_expr_parse(text, &e, &col);
  CHECK_EQ_INT(rc, AT_OK);
  if (rc == AT_OK) {
    rc = at_expr_bind(e, NAMES, NNAMES, &col);
    CHECK_EQ_INT(rc, AT_OK);
    if (rc == AT_OK) {
      rc = at_expr_eval(e, VALUES, &got, &col);
      CHECK_EQ_INT(rc, AT_OK);
      if (rc == AT_OK) CHECK_EQ_INT(got, want);
    }
  }
  if (rc != AT_OK) fprintf(stderr, "  error: %s (col %d)\n", at_errmsg(), col);
  at_expr_free(e);
  context(before, "value of", text);
}

/* Checks a failure: status, column and a substring of the message. */
static void check_error(int rc, int col, int want_col, const char *want_msg) {
  CHECK_EQ_INT(rc, AT_ERR_INPUT);
  CHECK_EQ_INT(col, want_col);
  CHECK_CONTAINS(at_errmsg(), want_msg);
}

/* Parsing text must fail at want_col with a message containing want_msg. */
static void expect_parse_error(const char *text, int want_col, const char *want_msg) {
  int before = check_failures, col = -1;
  at_expr *e = NULL;
  at_errclear();
  int rc = at_expr_parse(text, &e, &col);
  check_error(rc, col, want_col, want_msg);
  CHECK(e == NULL);
  at_expr_free(e);
  context(before, "parse error in", text);
}

/* Parsing must succeed and binding fail at want_col. */
static void expect_bind_error(const char *text, int want_col, const char *want_msg) {
  int before = check_failures, col = -1;
  at_expr *e = NULL;
  int rc = at_expr_parse(text, &e, &col);
  CHECK_EQ_INT(rc, AT_OK);
  if (rc == AT_OK) {
    at_errclear();
    rc = at_expr_bind(e, NAMES, NNAMES, &col);
    check_error(rc, col, want_col, want_msg);
  }
  at_expr_free(e);
  context(before, "bind error in", text);
}

/* Parsing and binding must succeed and evaluation fail at want_col. */
static void expect_eval_error(const char *text, int want_col, const char *want_msg) {
  int before = check_failures, col = -1;
  at_expr *e = NULL;
  int64_t got = 12345;
  int rc = at_expr_parse(text, &e, &col);
  CHECK_EQ_INT(rc, AT_OK);
  if (rc == AT_OK) rc = at_expr_bind(e, NAMES, NNAMES, &col);
  CHECK_EQ_INT(rc, AT_OK);
  if (rc == AT_OK) {
    at_errclear();
    rc = at_expr_eval(e, VALUES, &got, &col);
    check_error(rc, col, want_col, want_msg);
  }
  at_expr_free(e);
  context(before, "eval error in", text);
}

static void test_literals_and_names(void) {
  expect_value("0", 0);
  expect_value("42", 42);
  expect_value("007", 7);
  expect_value("9223372036854775807", INT64_MAX);
  expect_value("-9223372036854775807 - 1", INT64_MIN);
  expect_value("A", 6);
  expect_value("B", -4);
  expect_value("big", INT64_MAX);
  expect_value("small", INT64_MIN);
  expect_value("A * B", -24);
  expect_value(" \t\n\r1\n+\t2 ", 3); /* all whitespace is skipped */
}

static void test_precedence(void) {
  /* * / % over + -. */
  expect_value("1 + 2 * 3", 7);
  expect_value("2 * 3 + 1", 7);
  expect_value("10 - 6 / 2", 7);
  expect_value("10 - 7 % 4", 7);
  /* Left associativity at each level. */
  expect_value("10 - 4 - 3", 3);
  expect_value("100 / 10 / 5", 2);
  expect_value("2 * 3 % 4", 2);
  expect_value("7 % 4 * 2", 6);
  expect_value("3 > 2 > 1", 0);
  expect_value("1 == 2 == 0", 1);
  /* + - over relational, relational over equality, equality over &&, && over ||. */
  expect_value("1 < 2 + 3", 1);
  expect_value("4 == 2 + 2", 1);
  expect_value("2 == 2 < 3", 0);
  expect_value("0 == 1 != 1", 1);
  expect_value("1 != 0 && 2", 1);
  expect_value("1 || 0 && 0", 1);
  expect_value("0 && 0 || 1", 1);
  expect_value("1 <= 1 && 2 >= 3", 0);
  /* Unary over everything binary. */
  expect_value("-2 * 3", -6);
  expect_value("-3 % 2", -1);
  expect_value("!0 + 1", 2);
  expect_value("!A == 0", 1);
  expect_value("-A * -A", 36);
  expect_value("2 - -3", 5);
  expect_value("- -3", 3);
  expect_value("--3", 3);
  expect_value("+5", 5);
  expect_value("-+5", -5);
  expect_value("!!7", 1);
  expect_value("!-1", 0);
  /* Parentheses. */
  expect_value("(1 + 2) * 3", 9);
  expect_value("-(2 + 3)", -5);
  expect_value("!(A - 6)", 1);
  expect_value("((((A))))", 6);
  expect_value("(1 || 0) && 0", 0);
  expect_value("2 * (3 % 4)", 6);
}

static void test_comparisons_and_logic(void) {
  expect_value("A < 7", 1);
  expect_value("A < 6", 0);
  expect_value("A <= 6", 1);
  expect_value("A > 6", 0);
  expect_value("A >= 6", 1);
  expect_value("A == 6", 1);
  expect_value("A != 6", 0);
  expect_value("B < C", 1);
  expect_value("small < big", 1);
  /* && and || give 0 or 1, whatever their operands. */
  expect_value("5 && 7", 1);
  expect_value("0 || -3", 1);
  expect_value("3 && 0", 0);
  expect_value("0 || 0", 0);
  /* Short circuit: the side that would fail is never evaluated. */
  expect_value("0 && 1 / 0", 0);
  expect_value("1 || 1 / 0", 1);
  expect_value("C != 0 && A / C > 1", 0);
  expect_value("C == 0 || A % C == 0", 1);
  expect_value("0 && big + 1", 0);
  expect_value("1 || -small", 1);
  expect_value("0 && 1 / 0 || 1", 1);
}

static void test_min_max(void) {
  expect_value("min(3, 1)", 1);
  expect_value("max(3, 1)", 3);
  expect_value("min(1, 3)", 1);
  expect_value("max(1, 3)", 3);
  expect_value("min(5, -2, 3)", -2);
  expect_value("max(5, -2, 7)", 7);
  expect_value("max(A, B, C)", 6);
  expect_value("min(A, B, C)", -4);
  expect_value("min(A, B) * 2", -8);
  expect_value("max(min(1, 2), 0)", 1);
  expect_value("min ( 4 , 2 )", 2);
  expect_value("max(16, 2 * M)", 128);
  expect_value("min(small, big)", INT64_MIN);
  expect_value("max(1 + 1, 1 < 2)", 2);
}

static void test_division(void) {
  /* C: the quotient is truncated toward zero, the remainder has the dividend's sign. */
  expect_value("7 / 2", 3);
  expect_value("-7 / 2", -3);
  expect_value("7 / -2", -3);
  expect_value("-7 / -2", 3);
  expect_value("7 % 2", 1);
  expect_value("-7 % 2", -1);
  expect_value("7 % -2", 1);
  expect_value("-7 % -2", -1);
  expect_value("B / 3", -1);
  expect_value("B % 3", -1);
  expect_value("small / 1", INT64_MIN);
  expect_value("big / -1", -INT64_MAX);
  expect_value("(M + 16 - 1) / 16", 4);
}

static void test_eval_errors(void) {
  /* The column is the operator's. */
  expect_eval_error("1 / 0", 2, "division by zero");
  expect_eval_error("A / C", 2, "division by zero");
  expect_eval_error("A % C", 2, "division by zero");
  expect_eval_error("1 + 2 / 0", 6, "division by zero");
  expect_eval_error("A % (B + 4)", 2, "division by zero");
  expect_eval_error("1 && 1 / 0", 7, "division by zero");
  expect_eval_error("0 || 5 % 0", 7, "division by zero");
  expect_eval_error("min(1, 2 / C)", 9, "division by zero");
  /* int64 overflow is an error, never a wrapped value. */
  expect_eval_error("big + 1", 4, "integer overflow");
  expect_eval_error("1 + big", 2, "integer overflow");
  expect_eval_error("small - 1", 6, "integer overflow");
  expect_eval_error("0 - small", 2, "integer overflow");
  expect_eval_error("big * 2", 4, "integer overflow");
  expect_eval_error("small * -1", 6, "integer overflow");
  expect_eval_error("3037000500 * 3037000500", 11, "integer overflow");
  expect_eval_error("-small", 0, "integer overflow");
  expect_eval_error("1 + -small", 4, "integer overflow");
  expect_eval_error("-(-9223372036854775807 - 1)", 0, "integer overflow");
  expect_eval_error("small / -1", 6, "integer overflow");
  expect_eval_error("small / (0 - 1)", 6, "integer overflow");
  expect_eval_error("1 + big * 2", 8, "integer overflow");
  expect_eval_error("-big - 2", 5, "integer overflow");
  expect_eval_error("max(1, big + 1)", 11, "integer overflow");
  /* Limits themselves are fine. */
  expect_value("big - 1 + 1", INT64_MAX);
  expect_value("small + 1 - 1", INT64_MIN);
  expect_value("-big", -INT64_MAX);
  expect_value("3037000499 * 3037000499", 9223372030926249001LL);
}

static void test_parse_errors(void) {
  /* Literals. */
  expect_parse_error("9223372036854775808", 0, "integer literal overflows 64 bits");
  expect_parse_error("1 + 99999999999999999999", 4, "integer literal overflows 64 bits");
  expect_parse_error("-9223372036854775808", 1, "integer literal overflows 64 bits");
  expect_parse_error("1.5", 0, "malformed number");
  expect_parse_error("A + 2x", 4, "malformed number");
  /* Functions. */
  expect_parse_error("abs(A)", 0, "unknown function 'abs'");
  expect_parse_error("1 + foo (2)", 4, "unknown function 'foo'");
  expect_parse_error("A(1, 2)", 0, "unknown function 'A'");
  expect_parse_error("min(1)", 0, "min and max take at least two arguments");
  expect_parse_error("2 * max(A)", 4, "min and max take at least two arguments");
  expect_parse_error("min(1, 2", 8, "expected ',' or ')'");
  expect_parse_error("max(1 2)", 6, "expected ',' or ')'");
  expect_parse_error("min()", 4, "unexpected ')'");
  expect_parse_error("min(1,)", 6, "unexpected ')'");
  /* Trailing garbage. */
  expect_parse_error("1 2", 2, "unexpected text after the expression");
  expect_parse_error("A B", 2, "unexpected text after the expression");
  expect_parse_error("(A) 2", 4, "unexpected text after the expression");
  expect_parse_error("A == 1 ;", 7, "unexpected text after the expression");
  /* Single '=', '&', '|' at the top level say what was meant. */
  expect_parse_error("A = 1", 2, "unexpected '=' (use ==, && or ||)");
  expect_parse_error("A == 1 & B", 7, "unexpected '&' (use ==, && or ||)");
  expect_parse_error("A | B", 2, "unexpected '|' (use ==, && or ||)");
  /* Operators that do not exist. */
  expect_parse_error("A << 2", 3, "unexpected '<'");
  expect_parse_error("A + * 2", 4, "unexpected '*'");
  expect_parse_error("A # 2", 2, "unexpected text after the expression");
  expect_parse_error("!= 1", 0, "unexpected '!'");
  /* Unbalanced parentheses. */
  expect_parse_error("(1 + 2", 6, "expected ')'");
  expect_parse_error("((A)", 4, "expected ')'");
  expect_parse_error("(A", 2, "expected ')'");
  expect_parse_error("1 + 2)", 5, "unexpected text after the expression");
  expect_parse_error(")", 0, "unexpected ')'");
  expect_parse_error("()", 1, "unexpected ')'");
  /* Empty or incomplete text. */
  expect_parse_error("", 0, "unexpected end of expression");
  expect_parse_error("   ", 3, "unexpected end of expression");
  expect_parse_error("1 +", 3, "unexpected end of expression");
  expect_parse_error("(", 1, "unexpected end of expression");
  expect_parse_error("-", 1, "unexpected end of expression");
  expect_parse_error("A &&", 4, "unexpected end of expression");
}

/* The helpful message for '=', '&' and '|' is also due inside parentheses and function arguments
 * (expr.c's parse_level says so), not only at the top level. */
static void test_single_char_operators_nested(void) {
  expect_parse_error("(A = 1)", 3, "unexpected '=' (use ==, && or ||)");
  expect_parse_error("B == 2 && (A & 1)", 13, "unexpected '&' (use ==, && or ||)");
  expect_parse_error("min(A | 1, 2)", 6, "unexpected '|' (use ==, && or ||)");
}

static void test_bind(void) {
  expect_bind_error("D", 0, "unknown name 'D'");
  expect_bind_error("A + D", 4, "unknown name 'D'");
  expect_bind_error("AA == 1", 0, "unknown name 'AA'");
  expect_bind_error("min(A, zz)", 7, "unknown name 'zz'");
  expect_bind_error("A && (B || BLOCK_M)", 11, "unknown name 'BLOCK_M'");
  expect_bind_error("a", 0, "unknown name 'a'"); /* names are case-sensitive */
  /* The first unknown name, in text order. */
  expect_bind_error("A + x1 + x2", 4, "unknown name 'x1'");
  /* Short circuit does not excuse a name: binding sees the whole tree. */
  expect_bind_error("0 && nope", 5, "unknown name 'nope'");

  /* An empty table: every name is unknown, a name-free expression binds. */
  at_expr *e = NULL;
  int col = -1;
  int64_t v = 0;
  CHECK_EQ_INT(at_expr_parse("1 + 1", &e, &col), AT_OK);
  CHECK_EQ_INT(at_expr_bind(e, NULL, 0, &col), AT_OK);
  CHECK_EQ_INT(at_expr_eval(e, NULL, &v, &col), AT_OK);
  CHECK_EQ_INT(v, 2);
  at_expr_free(e);

  /* Slots follow the table given, not the order of first use. */
  static const char *const names2[] = {"y", "x"};
  static const int64_t values2[] = {10, 3};
  CHECK_EQ_INT(at_expr_parse("x - y", &e, &col), AT_OK);
  CHECK_EQ_INT(at_expr_bind(e, names2, 2, &col), AT_OK);
  CHECK_EQ_INT(at_expr_eval(e, values2, &v, &col), AT_OK);
  CHECK_EQ_INT(v, -7);
  at_expr_free(e);
  at_expr_free(NULL);
}

static void test_uses(void) {
  at_expr *e = NULL;
  int col;
  CHECK_EQ_INT(at_expr_parse("BLOCK_M <= max(16, 2 * M) && MM > 0", &e, &col), AT_OK);
  CHECK(at_expr_uses(e, "M"));
  CHECK(at_expr_uses(e, "MM"));
  CHECK(at_expr_uses(e, "BLOCK_M"));
  CHECK(!at_expr_uses(e, "N"));
  CHECK(!at_expr_uses(e, "max")); /* a function is not a name */
  CHECK(!at_expr_uses(e, "BLOCK"));
  at_expr_free(e);
  CHECK_EQ_INT(at_expr_parse("1 + 2", &e, &col), AT_OK);
  CHECK(!at_expr_uses(e, "M"));
  at_expr_free(e);
}

/* ---- pathological sizes ------------------------------------------------------------------------ */

/* Runs fn(arg) in a child process: returns its exit status, or -signal when it was killed. */
static int in_child(int (*fn)(const char *), const char *arg) {
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return -1000;
  if (pid == 0) _exit(fn(arg));
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1001;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

/* Parses, binds, evaluates and frees text; the status of the first step that fails. */
static int parse_bind_eval(const char *text) {
  at_expr *e = NULL;
  int col = 0;
  int64_t v;
  int rc = at_expr_parse(text, &e, &col);
  if (rc == AT_OK) rc = at_expr_bind(e, NAMES, NNAMES, &col);
  if (rc == AT_OK) (void)at_expr_uses(e, "M");
  if (rc == AT_OK) rc = at_expr_eval(e, VALUES, &v, &col);
  at_expr_free(e);
  return rc;
}

/* Text of about 1 MiB (the largest a search space may be): prefix, then unit n times, then suffix
 * n times. */
static char *repeated(const char *unit, const char *mid, const char *close, size_t n) {
  size_t lu = strlen(unit), lm = strlen(mid), lc = strlen(close);
  char *s = malloc(n * (lu + lc) + lm + 1), *p = s;
  for (size_t i = 0; i < n; i++, p += lu) memcpy(p, unit, lu);
  memcpy(p, mid, lm);
  p += lm;
  for (size_t i = 0; i < n; i++, p += lc) memcpy(p, close, lc);
  *p = 0;
  return s;
}

/* A constraint can be as long as its file (1 MiB). Whatever its shape, the engine must answer
 * with a status, never crash: deep nesting either evaluates or fails with AT_ERR_INPUT. */
static void expect_no_crash(const char *what, char *text) {
  int st = in_child(parse_bind_eval, text);
  if (st != AT_OK && st != AT_ERR_INPUT) fprintf(stderr, "  %s: child ended with %d (negative: signal)\n", what, st);
  CHECK(st == AT_OK || st == AT_ERR_INPUT);
  free(text);
}

static void test_pathological(void) {
  enum { N = 400000 };
  expect_no_crash("deep parentheses", repeated("(", "1", ")", N));
  expect_no_crash("deep unary minus", repeated("-", "1", "", N));
  expect_no_crash("deep unary not", repeated("!", "1", "", N));
  expect_no_crash("long sum", repeated("1+", "1", "", N));
  expect_no_crash("deep min", repeated("min(1,", "1", ")", N / 4));
}

int main(void) {
  test_literals_and_names();
  test_precedence();
  test_comparisons_and_logic();
  test_min_max();
  test_division();
  test_eval_errors();
  test_parse_errors();
  test_single_char_operators_nested();
  test_bind();
  test_uses();
  test_pathological();
  return check_summary();
}
