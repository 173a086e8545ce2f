#!/bin/bash
# product_configs.sh SPACE.yaml SHAPES.yaml: product files for the GPU this runs on, for the shapes named
# (docs/usage.md, "Files for another GPU of the same arch"; sessions 40 and 41 did these steps by hand
# for the H200). Run on that GPU from the source root, after a build:
#   OUT=out ROUNDS=3 AUTOTUNE=build/autotune bash scripts/product_configs.sh search_spaces/llama3_8b.yaml shapes.yaml
# then copy OUT/fin/*.json into configs/ (OUT/keep.txt says why each entry was kept or not).
#  1. SPACE tuned on SHAPES into a fresh DB, OUT/tune.db (DB=path: a DB already tuned there, not tuned again);
#  2. exported with --device-name product into OUT/x (<product>-GEMM-<TAG>-N=<N>-K=<K>.json);
#  3. candidate files, OUT/cand: configs/ with, for each exported (N, K), the export's entries at every M
#     the file has, over the product's own file where configs/ has one, else over the arch file
#     relabelled (scripts/configs_add_m.py, scripts/configs_for_device.py);
#  4. ROUNDS (default 3) interleaved rounds of `compare --providers autotune` on SHAPES with configs/ and
#     with the candidates: every output checked against the reference, the runtime's own launch timed;
#  5. scripts/keep_faster_entries.py: an entry is kept where it ran faster in every round and by 1% or
#     more at the geomean (GAIN to change that), into OUT/fin.
# Why a product file at all: the arch's files were tuned on another GPU of the arch; a product with other
# memory bandwidth (the H200 against the H100) wins with other configs at decode sizes (docs/perf.md,
# "The H200"). Exit 2 on bad input, 1 when a step fails (its log under OUT says why).
set -u
die() { echo "product_configs.sh: $*" >&2; exit 2; }
[ $# = 2 ] || die "usage: product_configs.sh SPACE.yaml SHAPES.yaml (OUT, ROUNDS, GAIN, DB, AUTOTUNE from the environment)"
SPACE=$1 SHAPES=$2
[ -f "$SPACE" ] || die "SPACE: no file '$SPACE'"
[ -f "$SHAPES" ] || die "SHAPES: no file '$SHAPES'"
OUT=${OUT:-out}; ROUNDS=${ROUNDS:-3}; GAIN=${GAIN:-0.99}; DB=${DB:-}; A=${AUTOTUNE:-build/autotune}
case $ROUNDS in [1-9]) ;; *) die "ROUNDS: 1 to 9, not '$ROUNDS'" ;; esac
[ -z "$DB" ] || [ -f "$DB" ] || die "DB: no file '$DB'"
A=$(command -v "$A") || die "AUTOTUNE: '${AUTOTUNE:-build/autotune}' is not an executable (build first, or name one on PATH)"
fail() { echo "product_configs.sh: $*" >&2; exit 1; }
rm -rf "$OUT/x" "$OUT/cand" "$OUT/fin" "$OUT"/r*.json "$OUT/keep.txt"; mkdir -p "$OUT"  # nothing of an earlier run decides this one
if [ -z "$DB" ]; then
  DB=$OUT/tune.db; rm -f "$DB"
  echo "tuning $SPACE on $SHAPES into $DB (progress: tail -f $OUT/tune.log)"
  "$A" --db "$DB" "$SPACE" --shapes "$SHAPES" > "$OUT/tune.log" 2>&1 || fail "the tune failed: $OUT/tune.log"
  grep -E "^(results|wall time)" "$OUT/tune.log"
fi
"$A" export --db "$DB" --out "$OUT/x" --device-name product > "$OUT/export.log" 2>&1 || fail "export failed: $OUT/export.log"
cp -r configs "$OUT/cand"
python3 - "$OUT" <<'PY' || fail "the candidate files could not be made (above)"
import glob, json, os, re, subprocess, sys
sys.path.insert(0, 'scripts')
from keep_faster_entries import product_file  # the export's file and the committed one it goes over
out = sys.argv[1]
files = sorted(glob.glob(os.path.join(out, 'x', '*-GEMM-*-N=*-K=*.json')))
if not files: sys.exit('no (N, K) file in the export: %s/x' % out)
for f in files:
    n, k = map(int, re.search(r'-N=(\d+)-K=(\d+)\.json$', f).groups())
    _, name, own, arch = product_file(os.path.join(out, 'x'), 'configs', n, k)
    if not own and not arch:
        print('%s: configs/ has no file for its (N, K); the export is a new file, not judged here' % name); continue
    have = set(json.load(open(own or arch))['per_M']); new = json.load(open(f))['per_M']
    ms = sorted(int(m[len('M_LEQ_'):]) for m in new if m in have)
    if len(ms) < len(new): print('%s: M %s not in %s, left out' % (name, sorted(int(m[6:]) for m in new if m not in have), own or arch))
    if not ms: continue
    cmd = ['scripts/configs_add_m.py', own, f, '--add', '', '--replace'] if own else ['scripts/configs_for_device.py', arch, f, '--replace']
    r = subprocess.run([sys.executable] + cmd + [','.join(map(str, ms))], capture_output=True, text=True)
    if r.returncode: sys.exit('%s: %s' % (name, r.stderr.strip()))
    open(os.path.join(out, 'cand', name), 'w').write(r.stdout)
    print('candidate %s: M %s from the export, over %s' % (name, ','.join(map(str, ms)), own or arch))
PY
base= cand=
for r in $(seq 1 "$ROUNDS"); do
  for w in b c; do
    c=configs; [ $w = c ] && c=$OUT/cand
    "$A" compare "$SPACE" --shapes "$SHAPES" --providers autotune --configs "$c" --json "$OUT/r$w$r.json" > "$OUT/r$w$r.log" 2>&1 ||
      fail "compare failed (round $r, --configs $c): $OUT/r$w$r.log"
  done
  base=$base${base:+,}$OUT/rb$r.json; cand=$cand${cand:+,}$OUT/rc$r.json
done
python3 scripts/keep_faster_entries.py --base "$base" --cand "$cand" --export "$OUT/x" --out "$OUT/fin" --gain "$GAIN" > "$OUT/keep.txt" ||
  fail "keep_faster_entries.py failed: $OUT/keep.txt"
grep -E "^kept" "$OUT/keep.txt"
echo "product files: $OUT/fin (copy them into configs/)"
