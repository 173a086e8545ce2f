#!/bin/bash
# goal_session.sh STEP...: issue 8's goal measured on the GPU this runs on, and that GPU's product files
# brought up to the current templates, in a few calls of the device tool (each step fits one call's 600 s).
# Written for the H100 (the goal's GPU), whose files (the arch's, sm90-*) were last tuned in session 39 and
# lack what the templates gained since: 48-wide tiles, scales in shared memory, split K four ways. Run from
# the source root; the build is $B (default /tmp/b), results under $OUT (default /tmp/out):
#   build    configure and build into $B
#   goal     `compare` of the shipped and Llama-3-8B sets with configs/ (3 rounds each, cuBLASLt beside),
#            then scripts/goal_check.py: $OUT/goal-<n>/{shipped,llama}.{json,log}, verdict.txt
#   llama    scripts/product_configs.sh with the Llama-3-8B space on its own 24 shapes: the product's
#            files, kept entry by entry against configs/, in $OUT/llama/fin, and copied into configs/
#   shipped  the same with the shipped space on the decode shapes of the weights whose H200 files took
#            those forms (docs/experiments/ck4-decode.yaml, scale-kb-7168.yaml, scale-kb-other.yaml):
#            $OUT/shipped/fin, copied into configs/
#   test     the gpu suite ($OUT/gpu-tests.log)
# The device tool sends the working tree with each call: a later call sees the files llama and shipped
# kept only once they are copied into configs/ here, from the call's $OUT. The order that uses the device
# time best (session 53 on an H200: build 5 s, goal 40 s, llama 90 s, shipped 245 s, test 185 s):
#   call 1: build goal llama shipped   -> cp OUT/llama/fin/*.json OUT/shipped/fin/*.json configs/
#   call 2: build goal test            -> the figures with the kept files, for docs/perf.md and the issue
# (On a GPU whose tune runs slower than the H200's, split call 1 after llama: each call ends at 600 s.)
# Exit 1 when a step fails (its log under $OUT says why), 2 on a bad step name.
set -u
B=${B:-/tmp/b}; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export AUTOTUNE_PROGRESS=plain
die() { echo "goal_session.sh: $*" >&2; exit 2; }
fail() { echo "goal_session.sh: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: goal_session.sh STEP... (build, goal, llama, shipped, test)"
for s in "$@"; do case $s in build|goal|llama|shipped|test) ;; *) die "STEP: build, goal, llama, shipped or test, not '$s'" ;; esac; done

# product STEP SPACE SHAPES: product_configs.sh into $OUT/STEP, its kept files copied into configs/.
product() {
  OUT=$OUT/$1 ROUNDS=3 AUTOTUNE=$B/autotune bash scripts/product_configs.sh "$2" "$3" > "$OUT/$1.log" 2>&1 ||
    { tail -n 20 "$OUT/$1.log"; fail "$1: product_configs.sh failed ($OUT/$1.log)"; }
  cat "$OUT/$1.log"
  ls "$OUT/$1"/fin/*.json > /dev/null 2>&1 && cp "$OUT/$1"/fin/*.json configs/
  echo "$1: $(ls "$OUT/$1"/fin 2>/dev/null | wc -l) files kept, copied into configs/"
}

for step in "$@"; do
  echo "=== $step $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null) ($SECONDS s)"
  case $step in
  build)
    { [ -f "$B/build.ninja" ] || meson setup "$B"; } > "$OUT/build.log" 2>&1 && ninja -C "$B" >> "$OUT/build.log" 2>&1 ||
      { tail -n 40 "$OUT/build.log"; fail "build failed ($OUT/build.log)"; } ;;
  goal)
    n=1; while [ -e "$OUT/goal-$n" ]; do n=$((n + 1)); done; G=$OUT/goal-$n; mkdir -p "$G"
    for set in shipped:search_spaces/a8w8_blockscale.yaml llama:search_spaces/llama3_8b.yaml; do
      "$B/autotune" compare "${set#*:}" --configs configs --json "$G/${set%%:*}.json" > "$G/${set%%:*}.log" 2>&1
      echo "${set%%:*}: compare exit $?; $(grep -h '^geomean' "$G/${set%%:*}.log")"
    done
    python3 scripts/goal_check.py "$G/shipped.json" "$G/llama.json" > "$G/verdict.txt" 2>&1; rc=$?
    cat "$G/verdict.txt"  # exit 1 is a verdict (not met, or not an H100); 2 is a compare it refused
    [ $rc -le 1 ] || fail "goal: goal_check.py refused the compare files ($G/verdict.txt)" ;;
  llama)
    S=$OUT/llama-shapes.yaml
    { echo "shapes:"; sed -n '/^shapes:/,/^$/p' search_spaces/llama3_8b.yaml | grep '^  - '; } > "$S"
    [ "$(grep -c '^  - ' "$S")" -ge 1 ] || fail "llama: no shapes found in search_spaces/llama3_8b.yaml"
    product llama search_spaces/llama3_8b.yaml "$S" ;;
  shipped)
    S=$OUT/shipped-shapes.yaml  # scale-kb-* name every weight of ck4-decode but two; one tune for all
    { echo "shapes:"; grep -h '^  - ' docs/experiments/scale-kb-7168.yaml docs/experiments/scale-kb-other.yaml
      grep -h '^  - ' docs/experiments/ck4-decode.yaml | grep -E 'N: 1024, K: (2048|3072),'; } > "$S"
    product shipped search_spaces/a8w8_blockscale.yaml "$S" ;;
  test)
    meson test -C "$B" --suite gpu --print-errorlogs > "$OUT/gpu-tests.log" 2>&1; rc=$?
    grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:" "$OUT/gpu-tests.log"
    [ $rc = 0 ] || fail "test: the gpu suite failed ($OUT/gpu-tests.log)" ;;
  esac
done
echo "=== done ($SECONDS s)"
