/* dbq.h: one integer out of a tuning DB, for the tests' assertions: the value of a printf-formatted
 * query, or -1 when the DB cannot be opened or the query fails (said on stderr). */
#ifndef AT_TEST_DBQ_H
#define AT_TEST_DBQ_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/store.h"

static inline int64_t dbq(const char *db, const char *fmt, ...) {
  char sql[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  at_store *s;
  int64_t v = -1;
  if (at_store_open_readonly(db, &s) == AT_OK) {
    if (at_store_query_int(s, sql, &v)) fprintf(stderr, "query failed: %s\n", at_errmsg());
    at_store_close(s);
  }
  return v;
}

#endif
