-- A DB of schema version 1 (autotune at commit a683f65, before the check_ratio columns), with one
-- row in each table a reader uses: test_bound.c checks that readers take it as it is and that the
-- tuner's open migrates it to the current version without losing a row.
PRAGMA user_version=1;
CREATE TABLE IF NOT EXISTS devices(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, arch TEXT NOT NULL, cc INTEGER NOT NULL,
  sm_count INTEGER, l2_bytes INTEGER, smem_per_block INTEGER, mem_bytes INTEGER, uuid TEXT, driver TEXT,
  UNIQUE(name, arch));
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT, status TEXT NOT NULL,
  space_path TEXT, space_hash TEXT, op TEXT, tag TEXT, arch TEXT, nvrtc TEXT, host TEXT, command TEXT,
  device_id INTEGER REFERENCES devices(id), peak_tflops REAL, peak_gbs REAL);
CREATE TABLE IF NOT EXISTS variants(
  id INTEGER PRIMARY KEY, op TEXT NOT NULL, name TEXT NOT NULL, family TEXT NOT NULL, template TEXT NOT NULL,
  entry TEXT NOT NULL, source_hash TEXT NOT NULL, last_run INTEGER,
  UNIQUE(op, name, family, entry, source_hash));
CREATE TABLE IF NOT EXISTS candidates(
  id INTEGER PRIMARY KEY, compile_key TEXT NOT NULL UNIQUE,
  variant_id INTEGER NOT NULL REFERENCES variants(id), params TEXT NOT NULL, name_expr TEXT NOT NULL,
  arch TEXT NOT NULL, status TEXT NOT NULL CHECK(status IN ('ok','compile_error')), log TEXT,
  lowered_name TEXT, regs INTEGER, spill_stores INTEGER, spill_loads INTEGER, static_smem INTEGER,
  stack_bytes INTEGER, threads INTEGER, smem_bytes INTEGER, compile_ms REAL, cubin_hash TEXT,
  quarantined INTEGER NOT NULL DEFAULT 0, run_id INTEGER REFERENCES runs(id), created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS problems(
  id INTEGER PRIMARY KEY, op TEXT NOT NULL, tag TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL,
  k INTEGER NOT NULL, UNIQUE(op, tag, m, n, k));
CREATE TABLE IF NOT EXISTS results(
  id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  problem_id INTEGER NOT NULL REFERENCES problems(id), device_id INTEGER NOT NULL REFERENCES devices(id),
  run_id INTEGER REFERENCES runs(id),
  status TEXT NOT NULL CHECK(status IN ('ok','wrong','fault','timeout','resources','quarantined')),
  time_us REAL, time_min_us REAL, time_max_us REAL, samples INTEGER, cut INTEGER, sets INTEGER,
  retime_us REAL, tflops REAL, gbs REAL, roofline_pct REAL, occupancy INTEGER,
  max_abs_err REAL, bad_count INTEGER, first_bad INTEGER, message TEXT, seed INTEGER, created TEXT NOT NULL,
  UNIQUE(candidate_id, problem_id, device_id));
CREATE INDEX IF NOT EXISTS results_by_problem ON results(problem_id, device_id, status);
CREATE TABLE IF NOT EXISTS pruned(
  run_id INTEGER NOT NULL REFERENCES runs(id), variant_id INTEGER NOT NULL REFERENCES variants(id),
  rule TEXT NOT NULL, per_shape INTEGER NOT NULL, count INTEGER NOT NULL,
  PRIMARY KEY(run_id, variant_id, rule, per_shape));
CREATE TABLE IF NOT EXISTS winners(
  problem_id INTEGER NOT NULL REFERENCES problems(id), device_id INTEGER NOT NULL REFERENCES devices(id),
  candidate_id INTEGER NOT NULL REFERENCES candidates(id), time_us REAL NOT NULL,
  run_id INTEGER REFERENCES runs(id), decided TEXT NOT NULL, PRIMARY KEY(problem_id, device_id));
CREATE TABLE IF NOT EXISTS baselines(
  problem_id INTEGER NOT NULL REFERENCES problems(id), device_id INTEGER NOT NULL REFERENCES devices(id),
  name TEXT NOT NULL, time_us REAL NOT NULL, run_id INTEGER REFERENCES runs(id),
  PRIMARY KEY(problem_id, device_id, name));
INSERT INTO devices(id, name, arch, cc, sm_count, l2_bytes) VALUES(1, 'NVIDIA H100 80GB HBM3', 'sm_90a', 90, 132, 52428800);
INSERT INTO runs(id, started, finished, status, op, tag, arch) VALUES(1, '2026-11-22T05:35:30Z', '2026-11-22T06:00:00Z', 'done', 'gemm_a8w8_blockscale', 'OLD', 'sm_90a');
INSERT INTO variants(id, op, name, family, template, entry, source_hash, last_run) VALUES(1, 'gemm_a8w8_blockscale', 'mma', 'mma', 'gemm_a8w8_blockscale_mma.cuh', 'gemm_a8w8_blockscale_mma<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES, GROUP_M, SPLIT_K, B_HINT>', 'feed', 1);
INSERT INTO candidates(id, compile_key, variant_id, params, name_expr, arch, status, created, run_id) VALUES(1, 'key1', 1, '{"BLOCK_M":64,"BLOCK_N":128,"BLOCK_K":128,"WARPS_M":2,"WARPS_N":2,"STAGES":3,"GROUP_M":8,"SPLIT_K":1,"B_HINT":0}', 'gemm_a8w8_blockscale_mma<64, 128, 128, 2, 2, 3, 8, 1, 0>', 'sm_90a', 'ok', '2026-11-22T05:35:31Z', 1);
INSERT INTO problems(id, op, tag, m, n, k) VALUES(1, 'gemm_a8w8_blockscale', 'OLD', 64, 1024, 512);
INSERT INTO results(candidate_id, problem_id, device_id, run_id, status, time_us, samples, max_abs_err, bad_count, first_bad, seed, created) VALUES(1, 1, 1, 1, 'ok', 5.5, 10, 0.004, 0, -1, 20261122, '2026-11-22T05:40:00Z');
INSERT INTO winners(problem_id, device_id, candidate_id, time_us, run_id, decided) VALUES(1, 1, 1, 5.4, 1, '2026-11-22T05:41:00Z');
INSERT INTO baselines(problem_id, device_id, name, time_us, run_id) VALUES(1, 1, 'cublaslt_blockscale_fp8', 6.2, 1);
