/* check.h: the assertions of the C tests. Each failed CHECK prints file:line and the expression
 * and counts; a test's main() ends with `return check_summary();` (exit 1 when anything failed).
 * GPU tests call check_skip() (exit 77, meson's "skipped") where no GPU is found. */
#ifndef AT_TEST_CHECK_H
#define AT_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures, check_count;

#define CHECK(cond)                                                                                                    \
  do {                                                                                                                 \
    check_count++;                                                                                                     \
    if (!(cond)) {                                                                                                     \
      check_failures++;                                                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                                        \
    }                                                                                                                  \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                                             \
  do {                                                                                                                 \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                                                    \
    check_count++;                                                                                                     \
    if (check_a_ != check_b_) {                                                                                        \
      check_failures++;                                                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n", __FILE__, __LINE__, #a, #b, check_a_, check_b_); \
    }                                                                                                                  \
  } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                                    \
  do {                                                                                                                 \
    const char *check_h_ = (hay), *check_n_ = (needle);                                                                \
    check_count++;                                                                                                     \
    if (!check_h_ || !strstr(check_h_, check_n_)) {                                                                    \
      check_failures++;                                                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,                    \
              check_h_ ? check_h_ : "(null)", check_n_);                                                               \
    }                                                                                                                  \
  } while (0)

static inline int check_summary(void) {
  fprintf(stderr, "%d checks, %d failed\n", check_count, check_failures);
  return check_failures ? 1 : 0;
}

static inline void check_skip(const char *why) {
  fprintf(stderr, "skipped: %s\n", why);
  exit(77);
}

#endif
