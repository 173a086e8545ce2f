#!/usr/bin/env python3
"""db_report.py DB: a quick look into a tuning DB (results per status, failures, winners).

For developers on the GPU host, where the sqlite3 shell is missing but Python is there."""
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
q = db.execute
print("results by status:", q("SELECT status, count(*) FROM results GROUP BY status").fetchall())
print("candidates by compile status:", q("SELECT status, count(*) FROM candidates GROUP BY status").fetchall())
for row in q("""SELECT p.m, p.n, p.k, r.status, c.params, r.message, r.max_abs_err FROM results r
                JOIN problems p ON p.id = r.problem_id JOIN candidates c ON c.id = r.candidate_id
                WHERE r.status != 'ok' ORDER BY p.id LIMIT 40"""):
    print("  not ok:", row)
for row in q("""SELECT p.m, p.n, p.k, w.time_us, c.params,
                  (SELECT time_us FROM baselines b WHERE b.problem_id = p.id AND b.name = 'cublas_fp32_reference'),
                  (SELECT time_us FROM baselines b WHERE b.problem_id = p.id AND b.name != 'cublas_fp32_reference')
                FROM winners w JOIN problems p ON p.id = w.problem_id JOIN candidates c ON c.id = w.candidate_id
                ORDER BY p.id"""):
    print("  winner:", row)
print("runs:", q("SELECT id, status, peak_tflops, peak_gbs FROM runs").fetchall())
