#!/bin/bash
# gpu_session.sh STEP...: the GPU work of a development session, run on the GPU host through the
# device tool, each step logging to $OUT. State between calls lives in /tmp (build, DB, cache).
#   build    configure and build into /tmp/b
#   test     the gpu test suite
#   tune     the shipped space into /tmp/tuned.db (resumes; stops after $TUNE_LIMIT s, default 540)
#   export   configs from /tmp/tuned.db into configs/, plus $OUT/configs.tar and the perf table
#   example  the runtime example on several shapes (check against cuBLAS, host time per launch)
#   verify   the runtime example on all 40 shapes of the shipped job (an independent check)
#   bench    the lookup benchmark, the mma.sync FP8 ceiling (bench/mma_peak.cu) and the wgmma rate by
#            tile width (bench/wgmma_peak.cu)
#   stress_old  the runtime stress test (test/gpu/test_stress.c) built against commit a683f65,
#            which must fail there (the split-K workspace bug it was written for)
#   sass     the SASS of an sm90 candidate: the hot loop must issue QGMMA (warpgroup FP8 MMA)
#   tune_llama  the Llama-3-8B projection space into /tmp/tuned.db (same limit as tune)
#   probe    scripts/probe_sm90.yaml into a fresh /tmp/probe.db: a few sm90 configs per shape, each
#            with its time and cuBLASLt's from the same run (the kernel experiments of docs/perf.md)
#   overhead scripts/probe_overhead.yaml into a fresh /tmp/overhead.db, then `compare` of its
#            winners with cuBLASLt: time against K, whose intercept is the fixed cost of a launch
#   store    scripts/probe_store.yaml likewise: large shapes with the results stored by the math
#            warpgroups or the producer's warps (STORE 0, 1, 2)
#   wide     scripts/probe_wide.yaml likewise: tiles 192 and 224 wide where they divide N
#   group    scripts/probe_group.yaml likewise: GROUP_M 1 to 32 on the M = 4096 winner
#   rescale2 scripts/probe_rescale2.yaml likewise: RESCALE 2 against 1, and 1 with PINGPONG, large shapes
#   ckwide   scripts/probe_ck_wide.yaml likewise: CLUSTER_K 2 with tiles 192 and 256 wide at M = 512
#   decode   scripts/probe_decode.yaml likewise: 64-row tiles 32 to 256 wide on the Llama decode shapes
#   tall     scripts/probe_tall.yaml likewise: 192-row tiles (three math warpgroups) on N = 576 and 1536
set -u
B=/tmp/b
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export AUTOTUNE_CACHE=/tmp/cache AUTOTUNE_PROGRESS=plain
rc=0

# probe_compare NAME SPACE: SPACE tuned into a fresh /tmp/NAME.db (every config's time in
# $OUT/NAME.txt), then `compare` of its winners with cuBLASLt ($OUT/NAME-compare.json and .log).
probe_compare() {
  rm -f "/tmp/$1.db"
  $B/autotune --db "/tmp/$1.db" "$2" >"$OUT/$1.log" 2>&1
  echo "$1 tune exit $?" | tee -a "$OUT/session.log"
  python3 -c "
import sqlite3, sys; d = sqlite3.connect(sys.argv[1])
for r in d.execute('''SELECT p.m, p.n, p.k, c.name_expr, round(coalesce(r.retime_us, r.time_us), 2)
    FROM results r JOIN problems p ON p.id = r.problem_id JOIN candidates c ON c.id = r.candidate_id
    WHERE r.status = 'ok' ORDER BY p.m, p.n, p.k, coalesce(r.retime_us, r.time_us)'''): print(*r, sep=' | ')" "/tmp/$1.db" \
    >"$OUT/$1.txt" 2>&1
  mkdir -p /tmp/empty-configs
  $B/autotune compare "$2" --db "/tmp/$1.db" --configs /tmp/empty-configs --json "$OUT/$1-compare.json" \
    >"$OUT/$1-compare.log" 2>&1
  echo "$1 compare exit $?" | tee -a "$OUT/session.log"
}

for step in "$@"; do
  echo "=== $step $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null)" | tee -a "$OUT/session.log"
  case $step in
  build)
    { [ -f $B/build.ninja ] || meson setup $B; } >>"$OUT/session.log" 2>&1 && ninja -C $B >>"$OUT/session.log" 2>&1 ||
      { tail -n 40 "$OUT/session.log"; exit 1; } ;;
  test)
    meson test -C $B --suite gpu --print-errorlogs >"$OUT/gpu-tests.log" 2>&1 || rc=1
    grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:" "$OUT/gpu-tests.log" | tee -a "$OUT/session.log" ;;
  tune)
    /usr/bin/time -v timeout "${TUNE_LIMIT:-540}" $B/autotune --db /tmp/tuned.db --summary-json "$OUT/summary.json" \
      search_spaces/a8w8_blockscale.yaml >"$OUT/tune.log" 2>&1
    echo "tune exit $?" | tee -a "$OUT/session.log"
    grep -vE "^(compile|tune): " "$OUT/tune.log" | tail -n 70 | tee -a "$OUT/session.log" ;;
  export)
    rm -f configs/*.json
    $B/autotune export --db /tmp/tuned.db --out configs 2>&1 | tee -a "$OUT/session.log"
    tar cf "$OUT/configs.tar" configs
    python3 scripts/perf_table.py /tmp/tuned.db >"$OUT/perf_table.md" 2>&1; cat "$OUT/perf_table.md" | tee -a "$OUT/session.log"
    cp /tmp/tuned.db "$OUT/tuned.db" ;;
  example)
    for s in "16 1024 1024" "1 4096 1024" "100 1024 2048" "128 4096 1024" "4096 6144 1024" "2048 1024 3072"; do
      $B/examples/gemm_a8w8_blockscale --configs configs $s 2>&1 | tee -a "$OUT/session.log" || rc=1
    done ;;
  verify)
    # The runtime example on every shape of the shipped job: an independent check of each winner
    # (other inputs, the library's launch path, the example's own comparison with cuBLAS).
    pass=0; fail=0
    for nk in "1024 1024" "4096 1024" "1024 2048" "6144 1024" "1024 3072"; do
      for m in 16 32 64 128 256 512 2048 4096; do
        if $B/examples/gemm_a8w8_blockscale --configs configs $m $nk >>"$OUT/verify.log" 2>&1; then
          pass=$((pass + 1))
        else
          fail=$((fail + 1)); echo "FAILED: M=$m N K=$nk" | tee -a "$OUT/session.log"; rc=1
        fi
      done
    done
    echo "verify: $pass passed, $fail failed" | tee -a "$OUT/session.log"
    echo "checks that passed: $(grep -c ': pass$' "$OUT/verify.log"), failed: $(grep -c ': FAIL$' "$OUT/verify.log")" |
      tee -a "$OUT/session.log" ;;
  stress_old)
    # the tree of a683f65, carried as .gpu/old-a683f65.tar.gz (git archive a683f65 | gzip)
    rm -rf /tmp/old && mkdir -p /tmp/old && tar xzf .gpu/old-a683f65.tar.gz -C /tmp/old &&
      cp test/gpu/test_stress.c /tmp/old/test/gpu/ &&
      printf "test_stress = executable('test_stress', 'gpu/test_stress.c', dependencies : [engine_dep, libautotune_dep])\n" >>/tmp/old/test/meson.build &&
      (cd /tmp/old && meson setup /tmp/bold >/dev/null && ninja -C /tmp/bold test/test_stress >/dev/null) ||
      { echo "stress_old: cannot build a683f65"; rc=1; continue; }
    (cd /tmp/old && AUTOTUNE_TEMPLATES=/tmp/old/templates AT_TEST_SOURCE_ROOT=/tmp/old AT_TEST_TMP=/tmp/oldtmp \
      AT_STRESS_SEED=${AT_STRESS_SEED:-1} /tmp/bold/test/test_stress) >"$OUT/stress-old.log" 2>&1
    echo "stress test on a683f65: exit $? (must be non-zero)" | tee -a "$OUT/session.log"
    grep -m 8 "FAIL" "$OUT/stress-old.log" | cut -c1-400 | tee -a "$OUT/session.log" ;;
  sass)
    # cache entries are a text header, then the cubin (an ELF file)
    for c in /tmp/cache/*/*.cubin; do
      python3 -c "import sys; d=open(sys.argv[1],'rb').read(); open('/tmp/k.cubin','wb').write(d[d.index(b'\x7fELF'):])" "$c"
      cuobjdump -sass /tmp/k.cubin 2>/dev/null | grep -q QGMMA && break
    done
    cuobjdump -sass /tmp/k.cubin >"$OUT/sm90.sass" 2>&1
    echo "sass: $(grep -c QGMMA "$OUT/sm90.sass") QGMMA, $(grep -c UTMALDG "$OUT/sm90.sass") UTMALDG, $(grep -c 'LDL\|STL' "$OUT/sm90.sass") local-memory ops in $(grep -m1 Function "$OUT/sm90.sass")" |
      tee -a "$OUT/session.log" ;;
  probe)
    rm -f /tmp/probe.db
    $B/autotune --db /tmp/probe.db scripts/probe_sm90.yaml >"$OUT/probe.log" 2>&1
    echo "probe exit $?" | tee -a "$OUT/session.log"
    grep -vE "^(compile|tune): " "$OUT/probe.log" | tail -n 30 >>"$OUT/session.log"
    sqlite3 -header -column /tmp/probe.db "SELECT p.m, p.n, p.k, c.name_expr AS kernel, r.status,
        round(coalesce(r.retime_us, r.time_us), 2) AS us, round(r.tflops) AS tflops,
        (SELECT round(b.time_us, 2) FROM baselines b WHERE b.problem_id = p.id) AS vendor_us
      FROM results r JOIN problems p ON p.id = r.problem_id JOIN candidates c ON c.id = r.candidate_id
      ORDER BY p.n, p.k, p.m, coalesce(r.retime_us, r.time_us)" >"$OUT/probe.txt" 2>&1 ||
      python3 -c "
import sqlite3; d = sqlite3.connect('/tmp/probe.db')
for r in d.execute('''SELECT p.m, p.n, p.k, c.name_expr, r.status, round(coalesce(r.retime_us, r.time_us), 2),
    round(r.tflops), (SELECT round(b.time_us, 2) FROM baselines b WHERE b.problem_id = p.id)
    FROM results r JOIN problems p ON p.id = r.problem_id JOIN candidates c ON c.id = r.candidate_id
    ORDER BY p.n, p.k, p.m, coalesce(r.retime_us, r.time_us)'''): print(*r, sep=' | ')" >"$OUT/probe.txt" 2>&1
    cp /tmp/probe.db "$OUT/probe.db" ;;
  overhead) probe_compare overhead scripts/probe_overhead.yaml ;;
  store) probe_compare store scripts/probe_store.yaml ;;
  wide) probe_compare wide scripts/probe_wide.yaml ;;
  group) probe_compare group scripts/probe_group.yaml ;;
  rescale2) probe_compare rescale2 scripts/probe_rescale2.yaml ;;
  ckwide) probe_compare ckwide scripts/probe_ck_wide.yaml ;;
  decode) probe_compare decode scripts/probe_decode.yaml ;;
  tall) probe_compare tall scripts/probe_tall.yaml ;;
  tune_llama)
    timeout "${TUNE_LIMIT:-540}" $B/autotune --db /tmp/tuned.db search_spaces/llama3_8b.yaml >"$OUT/tune-llama.log" 2>&1
    echo "tune_llama exit $?" | tee -a "$OUT/session.log"
    grep -vE "^(compile|tune): " "$OUT/tune-llama.log" | tail -n 40 | tee -a "$OUT/session.log" ;;
  bench)
    $B/bench/bench_lookup configs sm90 2>&1 | tee -a "$OUT/session.log"
    nvcc -O3 -gencode=arch=compute_90a,code=sm_90a bench/mma_peak.cu -o /tmp/mma_peak && /tmp/mma_peak 2>&1 |
      tee -a "$OUT/session.log"
    nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Itemplates bench/wgmma_peak.cu -o /tmp/wgmma_peak &&
      /tmp/wgmma_peak 2>&1 | tee -a "$OUT/session.log" ;;
  esac
done
exit $rc
