/* error.c: the per-thread error message behind at_fail() and friends. */
#include "error.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char g_msg[4096];
static _Thread_local long g_api_code;

int at_vfail(int code, const char *fmt, va_list ap) {
  /* Format into a temporary first: callers may pass at_errmsg() itself as an argument. */
  char tmp[sizeof g_msg];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  memcpy(g_msg, tmp, sizeof g_msg);
  g_api_code = 0;
  return code;
}

int at_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  at_vfail(code, fmt, ap);
  va_end(ap);
  return code;
}

int at_fail_api(const char *lib, const char *expr, const char *file, int line, long code,
                const char *name, const char *text) {
  snprintf(g_msg, sizeof g_msg, "%s:%d: %s: %s error %s (%ld): %s", file, line, expr, lib,
           name ? name : "?", code, text ? text : "");
  g_api_code = code;
  return AT_ERR_RUNTIME;
}

long at_api_code(void) { return g_api_code; }

void at_errctx(const char *fmt, ...) {
  char prefix[512], old[sizeof g_msg - 600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, g_msg, sizeof old - 1);
  old[sizeof old - 1] = 0;
  snprintf(g_msg, sizeof g_msg, "%s: %s", prefix, old);
}

const char *at_errmsg(void) { return g_msg; }

void at_errclear(void) {
  g_msg[0] = 0;
  g_api_code = 0;
}
