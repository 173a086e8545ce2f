#!/usr/bin/env python3
"""perf_table.py DB: the per-shape table of docs/perf.md from a tuning DB (markdown on stdout).

For each tuned shape: the winner (re-timed side by side), its TFLOP/s and share of the roofline
floor, the cuBLAS FP32 reference GEMM and the vendor's block-scaled FP8 GEMM (cuBLASLt), all timed
by the same worker with the same method in the same run (docs/timing.md)."""
import json
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
run = db.execute("SELECT id, peak_tflops, peak_gbs, started, finished FROM runs WHERE peak_tflops IS NOT NULL"
                 " ORDER BY id DESC LIMIT 1").fetchone()
dev = db.execute("SELECT name FROM devices ORDER BY id LIMIT 1").fetchone()
print(f"device: {dev[0] if dev else '?'}; peak measured in run {run[0]}: {run[1]:.0f} TFLOP/s FP8 (cuBLASLt, 8192^3), "
      f"{run[2]:.0f} GB/s (copy)\n")
print("| M | N | K | winner (variant: params) | time us | TFLOP/s | roofline % | cuBLAS FP32 ref us | cuBLASLt FP8 us "
      "| vs ref | vs cuBLASLt |")
print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
rows = db.execute("""
  SELECT p.m, p.n, p.k, v.name, c.params, w.time_us, r.tflops, r.roofline_pct, r.time_us,
    (SELECT time_us FROM baselines b WHERE b.problem_id=p.id AND b.device_id=w.device_id AND b.name='cublas_fp32_reference'),
    (SELECT time_us FROM baselines b WHERE b.problem_id=p.id AND b.device_id=w.device_id AND b.name='cublaslt_blockscale_fp8')
  FROM winners w JOIN problems p ON p.id=w.problem_id JOIN candidates c ON c.id=w.candidate_id
  JOIN variants v ON v.id=c.variant_id JOIN results r ON r.candidate_id=w.candidate_id AND r.problem_id=w.problem_id
    AND r.device_id=w.device_id
  ORDER BY p.n, p.k, p.m""").fetchall()
keys = ["BLOCK_M", "BLOCK_N", "WARPS_M", "WARPS_N", "STAGES", "GROUP_M", "SPLIT_K", "B_HINT"]
short = {"BLOCK_M": "BM", "BLOCK_N": "BN", "WARPS_M": "WM", "WARPS_N": "WN", "STAGES": "S", "GROUP_M": "G",
         "SPLIT_K": "SK", "B_HINT": "H"}
for m, n, k, var, params, t, tflops, roof, t_first, ref, vendor in rows:
    p = json.loads(params)
    cfg = " ".join(f"{short[x]}{p[x]}" for x in keys if x in p)
    flops = 2.0 * m * n * k
    tf = flops / (t * 1e-6) / 1e12
    roof_now = (roof or 0) * (t_first / t) if t else 0
    vs_ref = f"{ref / t:.1f}x" if ref else "-"
    vs_v = f"{vendor / t:.2f}x" if vendor else "-"
    print(f"| {m} | {n} | {k} | {var}: {cfg} | {t:.2f} | {tf:.1f} | {roof_now:.1f} | {ref or 0:.2f} | "
          f"{vendor or 0:.2f} | {vs_ref} | {vs_v} |")
counts = dict(db.execute("SELECT status, count(*) FROM results GROUP BY status").fetchall())
print(f"\nresults by status: {counts}")
