/* error.h: status codes and the one error channel of the engine.
 *
 * Every engine function returns an int status: AT_OK, AT_ERR_RUNTIME or AT_ERR_INPUT. The message
 * that goes with a failure is kept per thread (compile threads fail independently) and read with
 * at_errmsg(). Only main() turns a status into an exit code, and the statuses are chosen so that
 * they are the exit codes: 1 for run-time failures, 2 for usage and input errors.
 *
 * The API check macros (CU_CHECK, NVRTC_CHECK, CUBLAS_CHECK, SQL_CHECK) live next to the library
 * they wrap; all of them end in at_fail_api(), which records the expression, file:line and the
 * library's own error name and text. */
#ifndef AT_ERROR_H
#define AT_ERROR_H

#include <stdarg.h>

enum {
  AT_OK = 0,
  AT_ERR_RUNTIME = 1, /* the run failed: a library call, I/O, a worker */
  AT_ERR_INPUT = 2,   /* the user's input or arguments are wrong */
};

#if defined(__GNUC__)
#define AT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define AT_PRINTF(a, b)
#endif

/* Records the message for this thread and returns code, so that `return at_fail(...)` reads well. */
int at_fail(int code, const char *fmt, ...) AT_PRINTF(2, 3);
int at_vfail(int code, const char *fmt, va_list ap);

/* Failure of a library call: "file:line: expr: lib error NAME: text". Returns AT_ERR_RUNTIME and
 * keeps the library's numeric code for at_api_code() (the worker classifies CUDA errors by it). */
int at_fail_api(const char *lib, const char *expr, const char *file, int line, long code,
                const char *name, const char *text);
long at_api_code(void);

/* Prefixes the current message with more context: "prefix: old message". */
void at_errctx(const char *fmt, ...) AT_PRINTF(1, 2);

const char *at_errmsg(void);
void at_errclear(void);

/* Generic check: evaluates expr once; on failure records it and returns from the caller. */
#define AT_API_CHECK(lib, type, expr, okval, namefn, textfn)                                        \
  do {                                                                                             \
    type at_r_ = (expr);                                                                           \
    if (at_r_ != (okval))                                                                          \
      return at_fail_api(lib, #expr, __FILE__, __LINE__, (long)at_r_, namefn(at_r_), textfn(at_r_)); \
  } while (0)

/* Propagates a status: `AT_TRY(f(x));` returns it from the caller when it is not AT_OK. */
#define AT_TRY(expr)                                                                               \
  do {                                                                                             \
    int at_rc_ = (expr);                                                                           \
    if (at_rc_ != AT_OK) return at_rc_;                                                            \
  } while (0)

#endif
