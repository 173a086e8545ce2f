/* dbq.h: reading a tuning DB for the tests' assertions: one integer, the value of a printf-formatted
 * query (-1 when the DB cannot be opened or the query fails, said on stderr), or all the rows of a
 * query as text, to compare two DBs; and dropping a DB's NOT NULLs, for tests of what a schema
 * edited by hand lets in. */
#ifndef AT_TEST_DBQ_H
#define AT_TEST_DBQ_H

#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "core/error.h"
#include "core/store.h"
#include "core/util.h"

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

/* The rows of a query, one line each, columns joined by '|'; malloc'd ("" when it fails, said on
 * stderr). Straight through SQLite: the store reads one integer, not a table. */
static inline char *dbq_dump(const char *db, const char *sql) {
  sqlite3 *h;
  at_buf b = {0};
  if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    fprintf(stderr, "cannot open %s\n", db);
    sqlite3_close(h);
    return at_buf_steal(&b);
  }
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int i = 0; i < sqlite3_column_count(st); i++) {
        const unsigned char *t = sqlite3_column_text(st, i);
        at_buf_printf(&b, "%s%s", i ? "|" : "", t ? (const char *)t : "NULL");
      }
      at_buf_puts(&b, "\n");
    }
    sqlite3_finalize(st);
  } else {
    fprintf(stderr, "dump %s: %s\n", db, sqlite3_errmsg(h));
  }
  sqlite3_close(h);
  return at_buf_steal(&b);
}

/* The schema "edited by hand": every NOT NULL dropped, as someone could with the sqlite3 shell; a
 * new connection sees the edited schema. */
static inline void dbq_drop_not_null(const char *path) {
  at_store *s;
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "PRAGMA writable_schema=ON;"
                                " UPDATE sqlite_master SET sql=replace(sql, 'NOT NULL', '') WHERE type='table';"
                                " PRAGMA writable_schema=OFF;"),
               AT_OK);
  at_store_close(s);
}

#endif
