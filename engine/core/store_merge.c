/* store_merge.c: the SQL of `autotune merge` (see store_merge.h). The inputs are copied, one at a
 * time, into TEMP staging tables of the output's connection (ATTACH cannot happen inside a
 * transaction, and an attached file per input would run into SQLite's limit on attachments); the
 * output's own rows are staged too, as input 0. Then one transaction writes the output: each
 * table's rows chosen per content key, new rows inserted in key order (so a fresh output gets the
 * same row ids whatever the order of the inputs), existing rows updated in place (a tuner holding
 * their ids stays right), ids of the inputs mapped to the output's through m_* tables. */
#include "store_merge.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The tables copied, parents first. */
static const char *const TABLES[] = {"devices", "runs", "run_sources", "variants", "candidates",
                                     "problems", "results", "pruned", "winners", "baselines", "launches"};
enum { NTABLES = sizeof TABLES / sizeof TABLES[0] };

static int fail_sql(sqlite3 *db, const char *what) {
  return at_fail(AT_ERR_RUNTIME, "merge: %s: %s", what, sqlite3_errmsg(db));
}

static int exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  if (rc == SQLITE_OK) return AT_OK;
  rc = at_fail(AT_ERR_RUNTIME, "merge: %s (in: %.120s)", err ? err : sqlite3_errstr(rc), sql);
  sqlite3_free(err);
  return rc;
}

static int query_int(sqlite3 *db, const char *sql, int64_t *out) {
  sqlite3_stmt *st;
  *out = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(db, sql);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? AT_OK : fail_sql(db, sql);
}

/* ---- checks ----------------------------------------------------------------------------------- */

/* The distinct values of a one-column query, as "a; b; c" (malloc'd, "" when none). */
static int distinct_text(sqlite3 *db, const char *sql, char **out) {
  sqlite3_stmt *st;
  *out = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(db, sql);
  at_buf b = {0};
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(st, 0);
    at_buf_printf(&b, "%s%s", b.len ? "; " : "", t ? t : "?");
  }
  sqlite3_finalize(st);
  *out = at_buf_steal(&b);
  return rc == SQLITE_DONE ? AT_OK : fail_sql(db, sql);
}

typedef struct seen {
  char *what;     /* a device model or a toolchain */
  const char *in; /* the file it was first seen in */
} seen;

/* Each value of list ("a; b") must be the first one seen, unless force. */
static int check_one_kind(seen *first, const char *path, const char *list, const char *kind, int force) {
  if (!list[0]) return AT_OK;
  char *copy = at_xstrdup(list), *save = NULL;
  int rc = AT_OK;
  for (char *v = strtok_r(copy, ";", &save); v && rc == AT_OK; v = strtok_r(NULL, ";", &save)) {
    while (*v == ' ') v++;
    if (!first->what) {
      first->what = at_xstrdup(v);
      first->in = path;
    } else if (strcmp(first->what, v) != 0 && !force) {
      rc = at_fail(AT_ERR_INPUT,
                   "%s: %s %s is not %s's %s; merge DBs of one device model and toolchain, or pass --force", path, kind,
                   v, first->in, first->what);
    }
  }
  free(copy);
  return rc;
}

int at_merge_check(const char *out_path, const char *const *inputs, size_t n, int force) {
  seen model = {0}, chain = {0};
  int rc = AT_OK;
  for (size_t i = 0; i <= n && rc == AT_OK; i++) {
    const char *path = i == 0 ? out_path : inputs[i - 1];
    if (i == 0 && !at_file_exists(out_path)) continue;
    if (i > 0 && at_same_file(path, out_path)) {
      rc = at_fail(AT_ERR_INPUT, "merge: %s is the output DB (--db); name it once, as --db", path);
      break;
    }
    for (size_t j = 1; j < i && rc == AT_OK; j++)
      if (at_same_file(path, inputs[j - 1])) rc = at_fail(AT_ERR_INPUT, "merge: %s is named twice", path);
    if (rc) break;
    at_store *s = NULL;
    if (at_store_open_readonly(path, &s) != AT_OK) {
      rc = at_fail(AT_ERR_INPUT, "merge: %s", at_errmsg());
      break;
    }
    sqlite3 *db = at_store_db(s);
    int64_t version = 0;
    char *models = NULL, *chains = NULL;
    rc = query_int(db, "PRAGMA user_version", &version);
    if (rc == AT_OK && version != AT_STORE_SCHEMA_VERSION && !force)
      rc = at_fail(AT_ERR_INPUT,
                   "%s: DB schema version %lld, this autotune writes %d: a tune run on it brings it up to date, or"
                   " pass --force to merge it as it is",
                   path, (long long)version, AT_STORE_SCHEMA_VERSION);
    if (rc == AT_OK)
      rc = distinct_text(db, "SELECT DISTINCT name || ' (' || arch || ')' FROM devices ORDER BY 1", &models);
    if (rc == AT_OK)
      rc = distinct_text(db,
                         "SELECT DISTINCT 'target ' || coalesce(arch, '?') || ', NVRTC ' || coalesce(nvrtc, '?')"
                         " FROM runs ORDER BY 1",
                         &chains);
    if (rc == AT_OK) rc = check_one_kind(&model, path, models, "device", force);
    if (rc == AT_OK) rc = check_one_kind(&chain, path, chains, "toolchain", force);
    if (rc == AT_ERR_RUNTIME) rc = at_fail(AT_ERR_INPUT, "%s: %s", path, at_errmsg());
    free(models);
    free(chains);
    at_store_close(s);
  }
  /* The strings a 'seen' points into belong to the caller, except its copy of the value. */
  free(model.what);
  free(chain.what);
  return rc;
}

/* ---- staging ---------------------------------------------------------------------------------- */

/* The columns of schema.table, in order, as "a, b, c" (malloc'd; "" when there is no such table). */
static int columns(sqlite3 *db, const char *schema, const char *table, char **out) {
  sqlite3_stmt *st;
  *out = NULL;
  if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1, ?2) ORDER BY cid", -1, &st, NULL) != SQLITE_OK)
    return fail_sql(db, "table info");
  sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, schema, -1, SQLITE_STATIC);
  at_buf b = {0};
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) at_buf_printf(&b, "%s\"%s\"", b.len ? ", " : "", sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  *out = at_buf_steal(&b);
  return rc == SQLITE_DONE ? AT_OK : fail_sql(db, "table info");
}

/* Does the column list "a, b" (as columns() writes it) hold name? */
static int has_column(const char *list, const char *quoted) {
  size_t n = strlen(quoted);
  for (const char *p = list; (p = strstr(p, quoted)); p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == 0)) return 1;
  return 0;
}

/* Copies schema.table into temp.s_<table> as source src: the columns both have (an older input,
 * merged with --force, lacks the newest; they stay NULL). */
static int stage_table(sqlite3 *db, const char *schema, const char *table, int src) {
  char *theirs = NULL, *ours = NULL;
  int rc = columns(db, schema, table, &theirs);
  if (rc == AT_OK) rc = columns(db, "main", table, &ours);
  if (rc == AT_OK && theirs[0]) {
    at_buf cols = {0};
    char *copy = at_xstrdup(ours), *save = NULL;
    for (char *c = strtok_r(copy, ", ", &save); c; c = strtok_r(NULL, ", ", &save))
      if (has_column(theirs, c)) at_buf_printf(&cols, "%s%s", cols.len ? ", " : "", c);
    free(copy);
    char *list = at_buf_steal(&cols);
    char *sql = at_xasprintf("INSERT INTO temp.s_%s(src, %s) SELECT %d, %s FROM \"%s\".\"%s\"", table, list, src, list,
                             schema, table);
    rc = exec(db, sql);
    free(sql);
    free(list);
  }
  free(theirs);
  free(ours);
  return rc;
}

static int create_staging(sqlite3 *db) {
  for (int t = 0; t < NTABLES; t++) {
    char *sql = at_xasprintf("DROP TABLE IF EXISTS temp.s_%s; CREATE TEMP TABLE s_%s AS SELECT 0 AS src, * FROM main.%s"
                             " WHERE 0",
                             TABLES[t], TABLES[t], TABLES[t]);
    int rc = exec(db, sql);
    free(sql);
    AT_TRY(rc);
  }
  return exec(db, "DROP TABLE IF EXISTS temp.s_paths; CREATE TEMP TABLE s_paths(src INTEGER PRIMARY KEY, path TEXT);");
}

/* Runs of before schema 3 have no uid: one made of what identifies them, the same in every copy of
 * their DB. */
static int legacy_uids(sqlite3 *db) {
  return exec(db, "UPDATE temp.s_runs SET uid = 'legacy:' || coalesce(started, '') || '|' || coalesce(host, '') || '|' ||"
                  " coalesce(command, '') || '|' || id WHERE uid IS NULL");
}

static int stage_input(sqlite3 *db, const char *path, int src) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, "ATTACH ?1 AS inp", -1, &st, NULL) != SQLITE_OK) return fail_sql(db, "attach");
  sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return at_fail(AT_ERR_RUNTIME, "merge: %s: cannot attach: %s", path, sqlite3_errmsg(db));
  rc = AT_OK;
  for (int t = 0; t < NTABLES && rc == AT_OK; t++) rc = stage_table(db, "inp", TABLES[t], src);
  if (rc) at_errctx("%s", path);
  int rc2 = exec(db, "DETACH inp");
  if (rc == AT_OK) rc = rc2;
  if (rc) return rc;
  /* Provenance names a file as the OS knows it, so that the same DB merged twice is one source. */
  char *real = realpath(path, NULL);
  if (sqlite3_prepare_v2(db, "INSERT INTO temp.s_paths(src, path) VALUES(?1, ?2)", -1, &st, NULL) != SQLITE_OK) {
    free(real);
    return fail_sql(db, "paths");
  }
  sqlite3_bind_int(st, 1, src);
  sqlite3_bind_text(st, 2, real ? real : path, -1, SQLITE_TRANSIENT);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  free(real);
  return rc == SQLITE_DONE ? AT_OK : fail_sql(db, "paths");
}

/* ---- the merge, one transaction --------------------------------------------------------------- */

/* Each step: the rows chosen per key (b_*), new keys inserted in key order, existing rows updated,
 * and the map of every staged id to the output's (m_*). */
static const char *const STEPS[] = {
    /* devices, by (name, arch); the other columns from one copy, chosen by content */
    "CREATE TEMP TABLE b_devices AS SELECT * FROM (SELECT d.*, row_number() OVER (PARTITION BY name, arch ORDER BY"
    " coalesce(driver, '') DESC, coalesce(uuid, '') DESC, cc DESC, coalesce(sm_count, 0) DESC, coalesce(l2_bytes, 0) DESC,"
    " coalesce(smem_per_block, 0) DESC, coalesce(mem_bytes, 0) DESC) AS rn FROM temp.s_devices d) WHERE rn = 1;"
    "INSERT INTO devices(name, arch, cc, sm_count, l2_bytes, smem_per_block, mem_bytes, uuid, driver)"
    " SELECT name, arch, cc, sm_count, l2_bytes, smem_per_block, mem_bytes, uuid, driver FROM temp.b_devices b"
    " WHERE NOT EXISTS (SELECT 1 FROM devices x WHERE x.name = b.name AND x.arch = b.arch) ORDER BY name, arch;"
    "UPDATE devices SET cc = b.cc, sm_count = b.sm_count, l2_bytes = b.l2_bytes, smem_per_block = b.smem_per_block,"
    " mem_bytes = b.mem_bytes, uuid = b.uuid, driver = b.driver FROM temp.b_devices b"
    " WHERE devices.name = b.name AND devices.arch = b.arch;"
    "CREATE TEMP TABLE m_devices AS SELECT s.src, s.id AS old, d.id AS new FROM temp.s_devices s"
    " JOIN devices d ON d.name = s.name AND d.arch = s.arch;"
    "CREATE INDEX temp.m_devices_i ON m_devices(src, old);",

    /* runs, by uid; the most finished copy */
    "CREATE TEMP TABLE b_runs AS SELECT * FROM (SELECT r.*, (SELECT new FROM temp.m_devices m WHERE m.src = r.src AND"
    " m.old = r.device_id) AS dev_new, row_number() OVER (PARTITION BY uid ORDER BY finished IS NULL, finished DESC,"
    " status = 'running', status, coalesce(peak_tflops, 0) DESC, coalesce(peak_gbs, 0) DESC) AS rn FROM temp.s_runs r)"
    " WHERE rn = 1;"
    "INSERT INTO runs(started, finished, status, space_path, space_hash, op, tag, arch, nvrtc, host, command, device_id,"
    " peak_tflops, peak_gbs, uid, shard) SELECT started, finished, status, space_path, space_hash, op, tag, arch, nvrtc,"
    " host, command, dev_new, peak_tflops, peak_gbs, uid, shard FROM temp.b_runs b"
    " WHERE NOT EXISTS (SELECT 1 FROM runs x WHERE x.uid = b.uid) ORDER BY started, uid;"
    "UPDATE runs SET finished = b.finished, status = b.status, device_id = b.dev_new, peak_tflops = b.peak_tflops,"
    " peak_gbs = b.peak_gbs, shard = b.shard FROM temp.b_runs b WHERE runs.uid = b.uid;"
    "CREATE TEMP TABLE m_runs AS SELECT s.src, s.id AS old, r.id AS new FROM temp.s_runs s JOIN runs r ON r.uid = s.uid;"
    "CREATE INDEX temp.m_runs_i ON m_runs(src, old);"
    /* provenance: every input a run came through, and the sources the inputs themselves recorded */
    "INSERT OR IGNORE INTO run_sources(run_id, db) SELECT m.new, p.path FROM temp.m_runs m"
    " JOIN temp.s_paths p ON p.src = m.src WHERE m.src > 0 ORDER BY 1, 2;"
    "INSERT OR IGNORE INTO run_sources(run_id, db) SELECT m.new, s.db FROM temp.s_run_sources s"
    " JOIN temp.m_runs m ON m.src = s.src AND m.old = s.run_id WHERE s.src > 0 ORDER BY 1, 2;",

    /* variants, by content; the latest run that used each */
    "CREATE TEMP TABLE b_variants AS SELECT v.op, v.name, v.family, v.entry, v.source_hash, min(v.template) AS template,"
    " (SELECT r.id FROM temp.s_variants w JOIN temp.m_runs m ON m.src = w.src AND m.old = w.last_run"
    " JOIN runs r ON r.id = m.new WHERE w.op = v.op AND w.name = v.name AND w.family = v.family AND w.entry = v.entry"
    " AND w.source_hash = v.source_hash ORDER BY r.started DESC, r.uid DESC LIMIT 1) AS last_run"
    " FROM temp.s_variants v GROUP BY v.op, v.name, v.family, v.entry, v.source_hash;"
    "INSERT INTO variants(op, name, family, template, entry, source_hash, last_run)"
    " SELECT op, name, family, template, entry, source_hash, last_run FROM temp.b_variants b WHERE NOT EXISTS"
    " (SELECT 1 FROM variants x WHERE x.op = b.op AND x.name = b.name AND x.family = b.family AND x.entry = b.entry AND"
    " x.source_hash = b.source_hash) ORDER BY op, name, family, entry, source_hash;"
    "UPDATE variants SET template = b.template, last_run = b.last_run FROM temp.b_variants b WHERE variants.op = b.op AND"
    " variants.name = b.name AND variants.family = b.family AND variants.entry = b.entry AND"
    " variants.source_hash = b.source_hash;"
    "CREATE TEMP TABLE m_variants AS SELECT s.src, s.id AS old, v.id AS new FROM temp.s_variants s JOIN variants v"
    " ON v.op = s.op AND v.name = s.name AND v.family = s.family AND v.entry = s.entry AND v.source_hash = s.source_hash;"
    "CREATE INDEX temp.m_variants_i ON m_variants(src, old);",

    /* problems, by content */
    "INSERT INTO problems(op, tag, m, n, k) SELECT DISTINCT op, tag, m, n, k FROM temp.s_problems s WHERE NOT EXISTS"
    " (SELECT 1 FROM problems x WHERE x.op = s.op AND x.tag = s.tag AND x.m = s.m AND x.n = s.n AND x.k = s.k)"
    " ORDER BY op, tag, n, k, m;"
    "CREATE TEMP TABLE m_problems AS SELECT s.src, s.id AS old, p.id AS new FROM temp.s_problems s JOIN problems p"
    " ON p.op = s.op AND p.tag = s.tag AND p.m = s.m AND p.n = s.n AND p.k = s.k;"
    "CREATE INDEX temp.m_problems_i ON m_problems(src, old);",

    /* candidates, by compile key: the first compile; quarantined if any copy is */
    "CREATE TEMP TABLE b_candidates AS SELECT * FROM (SELECT c.*, mv.new AS variant_new, mr.new AS run_new,"
    " max(c.quarantined) OVER (PARTITION BY c.compile_key) AS q_any, row_number() OVER (PARTITION BY c.compile_key"
    " ORDER BY c.created, r.started, r.uid, c.status, c.compile_ms, c.cubin_hash, c.log) AS rn"
    " FROM temp.s_candidates c JOIN temp.m_variants mv ON mv.src = c.src AND mv.old = c.variant_id"
    " LEFT JOIN temp.m_runs mr ON mr.src = c.src AND mr.old = c.run_id LEFT JOIN runs r ON r.id = mr.new) WHERE rn = 1;"
    "INSERT INTO candidates(compile_key, variant_id, params, name_expr, arch, status, log, lowered_name, regs,"
    " spill_stores, spill_loads, static_smem, stack_bytes, threads, smem_bytes, compile_ms, cubin_hash, quarantined,"
    " run_id, created) SELECT compile_key, variant_new, params, name_expr, arch, status, log, lowered_name, regs,"
    " spill_stores, spill_loads, static_smem, stack_bytes, threads, smem_bytes, compile_ms, cubin_hash, q_any, run_new,"
    " created FROM temp.b_candidates b WHERE NOT EXISTS (SELECT 1 FROM candidates x WHERE x.compile_key = b.compile_key)"
    " ORDER BY compile_key;"
    "UPDATE candidates SET variant_id = b.variant_new, params = b.params, name_expr = b.name_expr, arch = b.arch,"
    " status = b.status, log = b.log, lowered_name = b.lowered_name, regs = b.regs, spill_stores = b.spill_stores,"
    " spill_loads = b.spill_loads, static_smem = b.static_smem, stack_bytes = b.stack_bytes, threads = b.threads,"
    " smem_bytes = b.smem_bytes, compile_ms = b.compile_ms, cubin_hash = b.cubin_hash, quarantined = b.q_any,"
    " run_id = b.run_new, created = b.created FROM temp.b_candidates b WHERE candidates.compile_key = b.compile_key;"
    "CREATE TEMP TABLE m_candidates AS SELECT s.src, s.id AS old, c.id AS new FROM temp.s_candidates s"
    " JOIN candidates c ON c.compile_key = s.compile_key;"
    "CREATE INDEX temp.m_candidates_i ON m_candidates(src, old);",

    /* results, by (candidate, problem, device): the newest measurement, ties by run */
    "CREATE TEMP TABLE k_results AS SELECT r.*, mc.new AS cand_new, mp.new AS prob_new, md.new AS dev_new,"
    " mr.new AS run_new, ru.started AS run_started, ru.uid AS run_uid FROM temp.s_results r"
    " JOIN temp.m_candidates mc ON mc.src = r.src AND mc.old = r.candidate_id"
    " JOIN temp.m_problems mp ON mp.src = r.src AND mp.old = r.problem_id"
    " JOIN temp.m_devices md ON md.src = r.src AND md.old = r.device_id"
    " LEFT JOIN temp.m_runs mr ON mr.src = r.src AND mr.old = r.run_id LEFT JOIN runs ru ON ru.id = mr.new;"
    "CREATE TEMP TABLE b_results AS SELECT * FROM (SELECT k.*, row_number() OVER (PARTITION BY cand_new, prob_new, dev_new"
    " ORDER BY created DESC, run_started DESC, run_uid DESC, status, time_us, retime_us, message) AS rn"
    " FROM temp.k_results k) WHERE rn = 1;"
    "CREATE TEMP TABLE c_results AS SELECT count(*) AS n FROM results;"
    "UPDATE results SET run_id = b.run_new, status = b.status, time_us = b.time_us, time_min_us = b.time_min_us,"
    " time_max_us = b.time_max_us, samples = b.samples, cut = b.cut, sets = b.sets, retime_us = b.retime_us,"
    " tflops = b.tflops, gbs = b.gbs, roofline_pct = b.roofline_pct, occupancy = b.occupancy, max_abs_err = b.max_abs_err,"
    " bad_count = b.bad_count, first_bad = b.first_bad, message = b.message, seed = b.seed, created = b.created,"
    " check_ratio = b.check_ratio FROM temp.b_results b WHERE results.candidate_id = b.cand_new AND"
    " results.problem_id = b.prob_new AND results.device_id = b.dev_new AND (results.run_id IS NOT b.run_new OR"
    " results.created IS NOT b.created OR results.status IS NOT b.status OR results.time_us IS NOT b.time_us OR"
    " results.retime_us IS NOT b.retime_us);"
    "CREATE TEMP TABLE c_replaced AS SELECT changes() AS n;"
    "INSERT INTO results(candidate_id, problem_id, device_id, run_id, status, time_us, time_min_us, time_max_us, samples,"
    " cut, sets, retime_us, tflops, gbs, roofline_pct, occupancy, max_abs_err, bad_count, first_bad, message, seed, created,"
    " check_ratio) SELECT cand_new, prob_new, dev_new, run_new, status, time_us, time_min_us, time_max_us, samples, cut,"
    " sets, retime_us, tflops, gbs, roofline_pct, occupancy, max_abs_err, bad_count, first_bad, message, seed, created,"
    " check_ratio FROM temp.b_results b WHERE NOT EXISTS (SELECT 1 FROM results x WHERE x.candidate_id = b.cand_new AND"
    " x.problem_id = b.prob_new AND x.device_id = b.dev_new) ORDER BY cand_new, prob_new, dev_new;",

    /* pruning counts, per run and variant */
    "INSERT INTO pruned(run_id, variant_id, rule, per_shape, count) SELECT mr.new, mv.new, p.rule, p.per_shape,"
    " max(p.count) FROM temp.s_pruned p JOIN temp.m_runs mr ON mr.src = p.src AND mr.old = p.run_id"
    " JOIN temp.m_variants mv ON mv.src = p.src AND mv.old = p.variant_id WHERE 1 GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4"
    " ON CONFLICT(run_id, variant_id, rule, per_shape) DO UPDATE SET count = excluded.count;",

    /* baselines: the newest run's */
    "INSERT INTO baselines(problem_id, device_id, name, time_us, run_id, check_ratio) SELECT prob_new, dev_new, name,"
    " time_us, run_new, check_ratio FROM (SELECT b.*, mp.new AS prob_new, md.new AS dev_new, mr.new AS run_new,"
    " row_number() OVER (PARTITION BY mp.new, md.new, b.name ORDER BY ru.started DESC, ru.uid DESC, b.time_us,"
    " b.check_ratio) AS rn FROM temp.s_baselines b JOIN temp.m_problems mp ON mp.src = b.src AND mp.old = b.problem_id"
    " JOIN temp.m_devices md ON md.src = b.src AND md.old = b.device_id LEFT JOIN temp.m_runs mr ON mr.src = b.src AND"
    " mr.old = b.run_id LEFT JOIN runs ru ON ru.id = mr.new) WHERE rn = 1 ORDER BY 1, 2, 3"
    " ON CONFLICT(problem_id, device_id, name) DO UPDATE SET time_us = excluded.time_us, run_id = excluded.run_id,"
    " check_ratio = excluded.check_ratio;",

    /* winners: the tuner's rule over the winners the inputs decided whose result is still ok (their
     * times alone, whatever the basis: a winner `autotune judge` chose on launched times keeps its
     * basis when it is chosen here, and the merged DB is judged again to decide between inputs) */
    "CREATE TEMP TABLE b_winners AS SELECT * FROM (SELECT mp.new AS prob_new, md.new AS dev_new, mc.new AS cand_new,"
    " w.time_us, mr.new AS run_new, w.decided, w.basis, row_number() OVER (PARTITION BY mp.new, md.new ORDER BY"
    " w.time_us, c.compile_key, w.decided DESC, ru.uid) AS rn FROM temp.s_winners w"
    " JOIN temp.m_problems mp ON mp.src = w.src AND mp.old = w.problem_id"
    " JOIN temp.m_devices md ON md.src = w.src AND md.old = w.device_id"
    " JOIN temp.m_candidates mc ON mc.src = w.src AND mc.old = w.candidate_id JOIN candidates c ON c.id = mc.new"
    " LEFT JOIN temp.m_runs mr ON mr.src = w.src AND mr.old = w.run_id LEFT JOIN runs ru ON ru.id = mr.new"
    " WHERE EXISTS (SELECT 1 FROM results r WHERE r.candidate_id = mc.new AND r.problem_id = mp.new AND"
    " r.device_id = md.new AND r.status = 'ok')) WHERE rn = 1;"
    "DELETE FROM winners WHERE NOT EXISTS (SELECT 1 FROM temp.b_winners b WHERE b.prob_new = winners.problem_id AND"
    " b.dev_new = winners.device_id);"
    "CREATE TEMP TABLE c_dropped AS SELECT changes() AS n;"
    "INSERT INTO winners(problem_id, device_id, candidate_id, time_us, run_id, decided, basis) SELECT prob_new, dev_new,"
    " cand_new, time_us, run_new, decided, basis FROM temp.b_winners WHERE 1 ORDER BY 1, 2 ON CONFLICT(problem_id,"
    " device_id) DO UPDATE SET candidate_id = excluded.candidate_id, time_us = excluded.time_us, run_id = excluded.run_id,"
    " decided = excluded.decided, basis = excluded.basis;",

    /* launched times (`autotune judge`), by (candidate, problem, device): the newest */
    "INSERT INTO launches(candidate_id, problem_id, device_id, run_id, status, time_us, time_min_us, time_max_us, samples,"
    " check_ratio, plan, message, created) SELECT cand_new, prob_new, dev_new, run_new, status, time_us, time_min_us,"
    " time_max_us, samples, check_ratio, plan, message, created FROM (SELECT l.*, mc.new AS cand_new, mp.new AS prob_new,"
    " md.new AS dev_new, mr.new AS run_new, row_number() OVER (PARTITION BY mc.new, mp.new, md.new ORDER BY l.created"
    " DESC, ru.uid DESC, l.time_us) AS rn FROM temp.s_launches l"
    " JOIN temp.m_candidates mc ON mc.src = l.src AND mc.old = l.candidate_id"
    " JOIN temp.m_problems mp ON mp.src = l.src AND mp.old = l.problem_id"
    " JOIN temp.m_devices md ON md.src = l.src AND md.old = l.device_id"
    " LEFT JOIN temp.m_runs mr ON mr.src = l.src AND mr.old = l.run_id LEFT JOIN runs ru ON ru.id = mr.new) WHERE rn = 1"
    " ORDER BY 1, 2, 3 ON CONFLICT(candidate_id, problem_id, device_id) DO UPDATE SET run_id = excluded.run_id,"
    " status = excluded.status, time_us = excluded.time_us, time_min_us = excluded.time_min_us,"
    " time_max_us = excluded.time_max_us, samples = excluded.samples, check_ratio = excluded.check_ratio,"
    " plan = excluded.plan, message = excluded.message, created = excluded.created;",
};

static const char *const SCRATCH[] = {"b_devices", "m_devices", "b_runs", "m_runs", "b_variants", "m_variants",
                                      "m_problems", "b_candidates", "m_candidates", "k_results", "b_results",
                                      "c_results", "c_replaced", "b_winners", "c_dropped"};

static int drop_scratch(sqlite3 *db, int staging_too) {
  at_buf b = {0};
  for (size_t i = 0; i < sizeof SCRATCH / sizeof SCRATCH[0]; i++) at_buf_printf(&b, "DROP TABLE IF EXISTS temp.%s;", SCRATCH[i]);
  for (int t = 0; staging_too && t < NTABLES; t++) at_buf_printf(&b, "DROP TABLE IF EXISTS temp.s_%s;", TABLES[t]);
  if (staging_too) at_buf_puts(&b, "DROP TABLE IF EXISTS temp.s_paths;");
  char *sql = at_buf_steal(&b);
  int rc = exec(db, sql);
  free(sql);
  return rc;
}

typedef struct merge_ctx {
  at_merge_stats *st;
  int64_t runs0, cands0;
} merge_ctx;

static int merge_tx(at_store *s, void *p) {
  merge_ctx *c = p;
  sqlite3 *db = at_store_db(s);
  at_merge_stats *st = c->st;
  AT_TRY(drop_scratch(db, 0));
  AT_TRY(query_int(db, "SELECT count(*) FROM runs", &c->runs0));
  AT_TRY(query_int(db, "SELECT count(*) FROM candidates", &c->cands0));
  for (size_t i = 0; i < sizeof STEPS / sizeof STEPS[0]; i++) AT_TRY(exec(db, STEPS[i]));
  int64_t results0;
  AT_TRY(query_int(db, "SELECT n FROM temp.c_results", &results0));
  AT_TRY(query_int(db, "SELECT n FROM temp.c_replaced", &st->results_replaced));
  AT_TRY(query_int(db, "SELECT n FROM temp.c_dropped", &st->winners_dropped));
  AT_TRY(query_int(db, "SELECT count(*) FROM runs", &st->runs_total));
  AT_TRY(query_int(db, "SELECT count(*) FROM candidates", &st->candidates_total));
  AT_TRY(query_int(db, "SELECT count(*) FROM results", &st->results_total));
  AT_TRY(query_int(db, "SELECT count(*) FROM winners", &st->winners_total));
  AT_TRY(query_int(db,
                   "SELECT count(*) FROM (SELECT 1 FROM temp.k_results GROUP BY cand_new, prob_new, dev_new"
                   " HAVING count(DISTINCT coalesce(run_uid, '') || '|' || coalesce(created, '')) > 1)",
                   &st->results_remeasured));
  AT_TRY(query_int(db,
                   "SELECT count(*) FROM (SELECT 1 FROM temp.k_results GROUP BY cand_new, prob_new, dev_new"
                   " HAVING count(DISTINCT status) > 1)",
                   &st->results_disagree));
  AT_TRY(query_int(db,
                   "SELECT count(*) FROM (SELECT DISTINCT problem_id, device_id FROM results r WHERE status = 'ok'"
                   " AND NOT EXISTS (SELECT 1 FROM winners w WHERE w.problem_id = r.problem_id AND"
                   " w.device_id = r.device_id))",
                   &st->undecided));
  st->runs_added = st->runs_total - c->runs0;
  st->candidates_added = st->candidates_total - c->cands0;
  st->results_added = st->results_total - results0;
  return AT_OK;
}

int at_merge(at_store *out, const char *const *inputs, size_t n, at_merge_stats *st) {
  memset(st, 0, sizeof *st);
  sqlite3 *db = at_store_db(out);
  if (n > INT_MAX - 1) return at_fail(AT_ERR_INPUT, "merge: too many inputs");
  /* Staging happens outside the transaction (ATTACH needs that) and writes the TEMP schema only. */
  int rc = create_staging(db);
  for (int t = 0; t < NTABLES && rc == AT_OK; t++) rc = stage_table(db, "main", TABLES[t], 0);
  for (size_t i = 0; i < n && rc == AT_OK; i++) rc = stage_input(db, inputs[i], (int)i + 1);
  if (rc == AT_OK) rc = legacy_uids(db);
  merge_ctx c = {st, 0, 0};
  if (rc == AT_OK) rc = at_store_tx(out, merge_tx, &c);
  char *err = rc ? at_xstrdup(at_errmsg()) : NULL;
  drop_scratch(db, 1);
  if (rc) at_fail(rc, "%s", err);
  free(err);
  return rc;
}

int at_merge_report_shards(at_store *out, void *fp) {
  FILE *f = fp;
  sqlite3 *db = at_store_db(out);
  sqlite3_stmt *st;
  /* A shard is finished when one of its runs ended done (timed) or compiled (compile-only). */
  const char *sql = "SELECT CAST(substr(shard, 1, instr(shard, '/') - 1) AS INTEGER) AS i,"
                    " CAST(substr(shard, instr(shard, '/') + 1) AS INTEGER) AS n,"
                    " max(status IN ('done', 'compiled')), group_concat(DISTINCT status), count(*)"
                    " FROM runs WHERE shard IS NOT NULL GROUP BY i, n ORDER BY n, i";
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(db, "shards");
  int rc;
  int64_t last_n = 0, next_i = 1; /* shards of last_n listed so far: 1 .. next_i - 1 */
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t i = sqlite3_column_int64(st, 0), n = sqlite3_column_int64(st, 1), runs = sqlite3_column_int64(st, 4);
    if (n != last_n) {
      if (last_n && next_i <= last_n)
        fprintf(f, "  shards %lld..%lld of %lld: MISSING: no run of them was merged\n", (long long)next_i,
                (long long)last_n, (long long)last_n);
      last_n = n, next_i = 1;
    }
    if (i > next_i)
      fprintf(f, "  shards %lld..%lld of %lld: MISSING: no run of them was merged\n", (long long)next_i,
              (long long)i - 1, (long long)n);
    next_i = i + 1;
    fprintf(f, "  shard %lld/%lld: %s (%lld run%s: %s)\n", (long long)i, (long long)n,
            sqlite3_column_int(st, 2) ? "finished" : "NOT finished: re-run it, then merge again", (long long)runs,
            runs == 1 ? "" : "s", sqlite3_column_text(st, 3));
  }
  if (last_n && next_i <= last_n)
    fprintf(f, "  shards %lld..%lld of %lld: MISSING: no run of them was merged\n", (long long)next_i,
            (long long)last_n, (long long)last_n);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? AT_OK : fail_sql(db, "shards");
}
