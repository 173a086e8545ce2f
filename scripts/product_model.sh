#!/bin/bash
# product_model.sh [SHAPES.yaml ...]: the time model for the GPU this runs on, judged through the runtime on
# the shape files named (docs/usage.md, "Files for another GPU of the same arch"; session 42 made the H200's
# this way). Run on that GPU from the source root, after a build:
#   OUT=out ROUNDS=2 AUTOTUNE=build/autotune bash scripts/product_model.sh search_spaces/shapes/holdout.yaml
# then copy OUT/fin/*-model.json into configs/ (OUT/verdict.txt says why it was kept or not).
#  1. the menu of configs/ (scripts/menu_space.py with search_spaces/menu_extra.json: every sm90 config a
#     file names, the product's files included) into OUT/menu.yaml, timed on the shipped job's 40 shapes,
#     llm.yaml and fit-grid.yaml into OUT/menu.db, without the judge or the vendor's baselines (a fit needs
#     each config's own time). The DB is kept: a run stopped part way carries on where it stopped. DB=path:
#     a menu DB made already, not run again. About 500 s on an H200 (144 configs, 79,497 results);
#  2. `autotune model --device-name product` into OUT/model (<product>-GEMM-<TAG>-model.json), and `--cv`
#     into OUT/cv.txt (each (N, K) left out of the fit in turn: what the fit should be judged by first);
#  3. with SHAPES: ROUNDS (default 2) interleaved rounds of `compare --providers autotune` on each, with
#     configs/ and with configs/ plus the model; every output checked against the reference, the runtime's
#     own launch timed. The model goes into OUT/fin when, in every round, the geomean of its time over
#     the committed one's (every shape of every file) is GAIN (default 0.995) or below.
# Why a product model: the arch's model was fitted on another GPU of the arch; the H200's own answered the
# shapes nobody tuned 0.8-1.7% faster there, and 2-3% at M <= 128 (docs/perf.md, "The H200's own time
# model"). Exit 2 on bad input, 1 when a step fails (its log under OUT says why).
set -u
die() { echo "product_model.sh: $*" >&2; exit 2; }
fail() { echo "product_model.sh: $*" >&2; exit 1; }
OUT=${OUT:-out}; ROUNDS=${ROUNDS:-2}; GAIN=${GAIN:-0.995}; DB=${DB:-}; A=${AUTOTUNE:-build/autotune}
case $ROUNDS in [1-9]) ;; *) die "ROUNDS: 1 to 9, not '$ROUNDS'" ;; esac
python3 -c "import sys; g = float(sys.argv[1]); sys.exit(not 0 < g <= 1)" "$GAIN" 2>/dev/null || die "GAIN: a number in (0, 1], not '$GAIN'"
for s in "$@"; do [ -f "$s" ] || die "SHAPES: no file '$s'"; done
[ -z "$DB" ] || [ -f "$DB" ] || die "DB: no file '$DB'"
[ -d configs ] && [ -f scripts/menu_space.py ] || die "run from the source root (no configs/ or scripts/menu_space.py here)"
A=$(command -v "$A") || die "AUTOTUNE: '${AUTOTUNE:-build/autotune}' is not an executable (build first, or name one on PATH)"
rm -rf "$OUT/model" "$OUT/fin" "$OUT/cand" "$OUT"/r[bc]*.json "$OUT/verdict.txt"; mkdir -p "$OUT/model" "$OUT/fin"
if [ -z "$DB" ]; then
  DB=$OUT/menu.db  # not removed: the tuner resumes, keeping finished work
  # The menu's templates by absolute path: the space lives in OUT, not beside templates/.
  python3 scripts/menu_space.py configs search_spaces/menu_extra.json 2> "$OUT/menu.log" |
    sed "s|template: \.\./templates/|template: $PWD/templates/|" > "$OUT/menu.yaml" && [ -s "$OUT/menu.yaml" ] ||
    fail "the menu could not be made: $OUT/menu.log"
  cat "$OUT/menu.log"
  for s in "" search_spaces/shapes/llm.yaml search_spaces/shapes/fit-grid.yaml; do
    n=$(basename "${s:-shipped}" .yaml) what=${s:-"the shipped job's shapes"}
    echo "timing the menu on $what into $DB (progress: tail -f $OUT/menu-$n.log)"
    "$A" --db "$DB" --no-judge --no-baselines "$OUT/menu.yaml" ${s:+--shapes "$s"} > "$OUT/menu-$n.log" 2>&1 ||
      fail "the menu run failed: $OUT/menu-$n.log (run again to carry on)"
    grep -E "^(results|wall time)" "$OUT/menu-$n.log"
  done
fi
"$A" model --db "$DB" --out "$OUT/model" --device-name product > "$OUT/model.log" 2>&1 || fail "the fit failed: $OUT/model.log"
"$A" model --db "$DB" --cv --worst 5 --device-name product > "$OUT/cv.txt" 2>&1 || fail "the cross-validation failed: $OUT/cv.txt"
tail -n +1 "$OUT/model.log" "$OUT/cv.txt" | grep -v "^==>"
shopt -s nullglob; models=("$OUT"/model/*-model.json); shopt -u nullglob
[ ${#models[@]} = 1 ] || fail "expected one model file in $OUT/model (one device in $DB), found ${#models[@]}"
M=${models[0]}
[ $# -gt 0 ] || { echo "model: $M, not judged (no SHAPES given); nothing in $OUT/fin"; exit 0; }
mkdir -p "$OUT/cand"; cp configs/*.json "$OUT/cand/"; cp "$M" "$OUT/cand/"
for r in $(seq 1 "$ROUNDS"); do
  i=0
  for s in "$@"; do
    i=$((i + 1))
    for w in b c; do
      c=configs; [ $w = c ] && c=$OUT/cand
      "$A" compare search_spaces/a8w8_blockscale.yaml --shapes "$s" --providers autotune --configs "$c" --json "$OUT/r$w$r-$i.json" \
        > "$OUT/r$w$r-$i.log" 2>&1 || fail "compare failed (round $r, $s, --configs $c): $OUT/r$w$r-$i.log"
    done
  done
done
python3 - "$OUT" "$ROUNDS" "$GAIN" "$#" > "$OUT/verdict.txt" <<'PY' || fail "the verdict could not be made: $OUT/verdict.txt"
import math, sys
sys.path.insert(0, 'scripts')
from keep_faster_entries import times  # {(m, n, k): [time per round]} of compare outputs
out, rounds, gain, files = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
base, cand = {}, {}
for i in range(1, files + 1):
    base.update(times(['%s/rb%d-%d.json' % (out, r, i) for r in range(1, rounds + 1)]))
    cand.update(times(['%s/rc%d-%d.json' % (out, r, i) for r in range(1, rounds + 1)]))
keys = sorted(k for k in base if k in cand and all(base[k]) and all(cand[k]))
if not keys: sys.exit('no shape timed ok with both')
ratios = [{k: cand[k][r] / base[k][r] for k in keys} for r in range(rounds)]
geo = [math.exp(sum(math.log(x[k]) for k in keys) / len(keys)) for x in ratios]
slower = [k for k in keys if all(x[k] >= 1.02 for x in ratios)]
faster = [k for k in keys if all(x[k] <= 0.98 for x in ratios)]
kept = all(g <= gain for g in geo)
print('model / committed, geomean over %d shapes: %s (round by round); %d faster by 2%% or more in every round, %d slower'
      % (len(keys), ', '.join('%.4fx' % g for g in geo), len(faster), len(slower)))
for k in sorted(slower, key=lambda k: -min(x[k] for x in ratios))[:10]:
    print('  slower: %d x %d x %d %s' % (k + (' '.join('%.3fx' % x[k] for x in ratios),)))
print('%s: %s' % ('kept' if kept else 'not kept',
                  'every round at %.3fx or below' % gain if kept else 'a round above %.3fx' % gain))
PY
cat "$OUT/verdict.txt"
if grep -q "^kept" "$OUT/verdict.txt"; then cp "$M" "$OUT/fin/"; echo "model: $OUT/fin/$(basename "$M") (copy it into configs/)"
else
  echo "model: $M not kept; nothing in $OUT/fin"
  # Configs the committed model lacks (kernels the files took up since its menu run) can still join it
  # alone: each config is fitted on its own times (docs/usage.md, "Files for another GPU of the same arch").
  echo "  its configs that the committed model lacks can be added alone: scripts/model_add_configs.py COMMITTED $M KEY=VALUE"
fi
