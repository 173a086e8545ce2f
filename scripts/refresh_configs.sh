#!/bin/bash
# refresh_configs.sh: fill and refresh the tuned files in one tune (docs/usage.md, "Refreshing tuned files after the
# templates change"; written in session 34). Run on the GPU the files are for, from the source root, after a build:
#   SET=b THRESH=0.90 FILL=fill.yaml OUT=out AUTOTUNE=build/autotune bash scripts/refresh_configs.sh
# then copy OUT/f/fin/*.json into configs/ (OUT/f/log says why each entry was kept).
# FILL (a list of {N, K, M: [...]}) names M between a file's entries to add. The shapes of SET (l Llama-3-8B, s shipped,
# b the 132 tuned Llama-3-70B/DeepSeek-V3 shapes) at THRESH x cuBLASLt's time or above through the committed files (the
# 24 slowest at most) are tuned again. One fresh DB, exported; a candidate file per weight = committed + the added M + the
# re-tuned entries (scripts/configs_add_m.py --add/--replace). Committed and candidate files are compared twice,
# interleaved, on SET's shapes (for the re-tuned entries) and on two M per added entry in the range it takes over: its own
# M and halfway down to the entry below (from 257 to 2048 the lookup answers between a file's entries with the time model
# every 64 rows, so there the halfway point runs the same config either way and the entry's own M decides).
# Kept: a re-tuned entry faster at its M in both rounds (by 1% or more); an added entry whose two M run faster in both
# rounds (geomean under 0.99) with neither more than 3% slower. The files with a kept entry land in $OUT/f/fin.
# Optional: RETUNE (the format of FILL; both take # comments) names entries the files have, tuned again and judged as
# SET's weak ones, at their M (on the check set); SPACE is the space tuned (default the shipped one: another, e.g. with a
# constraint relaxed, tries candidates the shipped space leaves out, or one narrowed to the tiles the runtime's tail
# favours); DB is a DB already tuned with every shape of the plan (no tune then).
# Each compare checks every output against the reference; times are the runtime's, as a user's calls run. The fresh
# tune ends with its judge phase (since session 37): its winners are decided as the runtime launches them.
set -u
T=${THRESH:-0.90}; SET=${SET:-b}; FILL=${FILL:-}; RETUNE=${RETUNE:-}; DB=${DB:-}
die() { echo "refresh_configs.sh: $*" >&2; [ -f "${R:-}/log" ] && cat $R/log >&2; exit 2; }
[ -f "$FILL" ] || die "FILL: no file '$FILL' (a list of the M to add, one line a weight: - {N: 1024, K: 3072, M: [1536, 3072]})"
[ -z "$RETUNE" ] || [ -f "$RETUNE" ] || die "RETUNE: no file '$RETUNE' (a list of the M to tune again, the format of FILL)"
[ -z "$DB" ] || [ -f "$DB" ] || die "DB: no file '$DB'"
case $SET in l|s|b) ;; *) die "SET: l, s or b, not '$SET'" ;; esac
OUT=${OUT:-out}; R=$OUT/f; mkdir -p $R; rm -rf $R/plan.json $R/check.yaml $R/log $R/fin  # nothing of an earlier run decides this one
A=${AUTOTUNE:-build/autotune}; export AUTOTUNE_PROGRESS=none
S=search_spaces/a8w8_blockscale.yaml; L=search_spaces/llama3_8b.yaml; SPACE=${SPACE:-$S}
[ -f "$SPACE" ] || die "SPACE: no file '$SPACE'"
cmp_set() {  # NAME CONFIGS SET -> $R/NAME.json
  case $3 in
    l) timeout 150 $A compare $L --configs $2 --json $R/$1.json > $R/$1.log 2>&1 ;;
    s) timeout 150 $A compare $S --configs $2 --json $R/$1.json > $R/$1.log 2>&1 ;;
    b) timeout 300 $A compare $S --shapes search_spaces/shapes/llm.yaml --only 'llama3-70b-tp8,deepseek-v3-tp8' --configs $2 --json $R/$1.json > $R/$1.log 2>&1 ;;
    c) timeout 300 $A compare $S --shapes $R/check.yaml --configs $2 --json $R/$1.json > $R/$1.log 2>&1 ;;
  esac
  echo "$1 $? at $SECONDS s: $(grep -h -A1 geomean $R/$1.log | tr '\n' ' ')" >> $R/log
}
cmp_set w0 configs $SET
python3 - $R $T "$FILL" "$RETUNE" <<'PY' >> $R/log
import json, os, re, sys, collections
R, T, FILL, RETUNE = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
d = json.load(open('%s/w0.json' % R))
weak = sorted(((s['ratio'], s['m'], s['n'], s['k']) for s in d['shapes'] if s.get('ratio') and s['ratio'] >= T), reverse=True)[:24]
print('weak', len(weak), ' '.join('%dx%dx%d %.3f' % (m, n, k, r) for r, m, n, k in weak))
tune = collections.defaultdict(set); plan = collections.defaultdict(lambda: {'add': set(), 'replace': set(), 'points': {}})
for r, m, n, k in weak: tune[(n, k)].add(m); plan[(n, k)]['replace'].add(m)
check = collections.defaultdict(set)
def listed(path):  # (N, K, the file's tuned M, [M]) per line of a FILL or RETUNE file
    for line in open(path) if path else []:
        if not line.strip() or line.lstrip().startswith('#'): continue  # comments and blank lines
        got = re.search(r'N: (\d+), K: (\d+), M: \[([^\]]*)\]', line)
        if not got: sys.exit('%s: not a line of {N, K, M: [...]}: %s' % (path, line.strip()))
        n, k, ms = got.groups()
        n, k = int(n), int(k)
        f = json.load(open('configs/sm90-GEMM-A8W8_BLOCKSCALE-N=%d-K=%d.json' % (n, k)))
        yield n, k, sorted(int(x.split('_')[-1]) for x in f['per_M']), list(map(int, ms.split(',')))
for n, k, have, ms in listed(RETUNE):
    for m in ms:
        if m not in have: sys.exit('RETUNE: %d x %d has no entry at M = %d (FILL adds one)' % (n, k, m))
        tune[(n, k)].add(m); plan[(n, k)]['replace'].add(m); check[(n, k)].add(m)
for n, k, have, ms in listed(FILL):
    for m in ms:
        below = [h for h in have if h < m]; p = below[-1] if below else 0
        pts = sorted({m, (p + m) // 2})  # its own M and halfway down: where the entry will answer
        tune[(n, k)].add(m); plan[(n, k)]['add'].add(m); plan[(n, k)]['points'][str(m)] = pts
        check[(n, k)].update(pts)
with open('%s/tune.yaml' % R, 'w') as fh:
    for (n, k), ms in sorted(tune.items()): fh.write('- {N: %d, K: %d, M: [%s]}\n' % (n, k, ', '.join(map(str, sorted(ms)))))
with open('%s/check.yaml' % R, 'w') if check else open(os.devnull, 'w') as fh:  # no file: nothing added
    fh.write('shapes:\n')
    for (n, k), ms in sorted(check.items()): fh.write('  - {name: check/%d-%d, N: %d, K: %d, M: [%s]}\n' % (n, k, n, k, ', '.join(map(str, sorted(ms)))))
json.dump({'%d,%d' % nk: {'add': sorted(p['add']), 'replace': sorted(p['replace']), 'points': p['points']} for nk, p in plan.items()},
          open('%s/plan.json' % R, 'w'))
print('tune', sum(len(v) for v in tune.values()), 'shapes;', 'check', sum(len(v) for v in check.values()), 'shapes')
PY
[ -f $R/plan.json ] || die "no plan (the log above says why)"
if [ -z "$DB" ]; then
  DB=$R/fresh.db; rm -f $DB
  timeout 330 $A $SPACE --shapes $R/tune.yaml --db $DB > $R/tune.log 2>&1; rc=$?; echo "tune rc $rc at $SECONDS s" >> $R/log; tail -4 $R/tune.log >> $R/log
  [ $rc = 0 ] || die "the tune failed: $R/tune.log"
fi
rm -rf $R/newer $R/candidates; mkdir -p $R/newer; $A export --db $DB --out $R/newer > $R/export.log 2>&1; cp -r configs $R/candidates
python3 - $R <<'PY' >> $R/log
import json, os, subprocess, sys
R = sys.argv[1]
for nk, p in json.load(open('%s/plan.json' % R)).items():
    f = 'sm90-GEMM-A8W8_BLOCKSCALE-N=%s-K=%s.json' % tuple(nk.split(','))
    args = ['python3', 'scripts/configs_add_m.py', 'configs/' + f, R + '/newer/' + f]
    args += ['--add', ','.join(map(str, p['add']))]  # always: without it every M the export has is added
    if p['replace']: args += ['--replace', ','.join(map(str, p['replace']))]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode: print('candidate', f, 'failed:', r.stderr.strip()); continue
    open(R + '/candidates/' + f, 'w').write(r.stdout); print(r.stderr.strip())
PY
for r in 1 2; do for c in c k; do D=configs; [ $c = k ] && D=$R/candidates
  cmp_set ${c}w$r $D $SET; [ -f $R/check.yaml ] && cmp_set ${c}c$r $D c; done; done
python3 - $R <<'PY' >> $R/log
import json, math, os, subprocess, sys
R = sys.argv[1]
def load(f):  # a set not run (no check shapes) or not written: no times, so nothing of it is kept
    path = '%s/%s.json' % (R, f)
    if not os.path.exists(path): return {}
    return {(s['m'], s['n'], s['k']): s['autotune']['time_us'] for s in json.load(open(path))['shapes'] if s.get('autotune')}
c = {r: {**load('cw%d' % r), **load('cc%d' % r)} for r in (1, 2)}
k = {r: {**load('kw%d' % r), **load('kc%d' % r)} for r in (1, 2)}
os.makedirs(R + '/fin', exist_ok=True)
for nk, p in json.load(open('%s/plan.json' % R)).items():
    n, kk = map(int, nk.split(','))
    f = 'sm90-GEMM-A8W8_BLOCKSCALE-N=%d-K=%d.json' % (n, kk)
    rep = [m for m in p['replace'] if all((m, n, kk) in k[r] and k[r][(m, n, kk)] < 0.99 * c[r][(m, n, kk)] for r in (1, 2))]
    for m in p['replace']:
        print('replace %5d x %5d x %5d: %s  %s' % (m, n, kk, ' '.join('%.2f->%.2f' % (c[r].get((m, n, kk), 0), k[r].get((m, n, kk), 0)) for r in (1, 2)), 'KEEP' if m in rep else ''))
    add = []
    for m in p['add']:
        pts = p['points'][str(m)]  # the plan's check points for this entry
        ok = all(all((x, n, kk) in k[r] for x in pts) for r in (1, 2))
        g = {r: math.exp(sum(math.log(k[r][(x, n, kk)] / c[r][(x, n, kk)]) for x in pts) / len(pts)) if ok else 9 for r in (1, 2)}
        worst = max(k[r][(x, n, kk)] / c[r][(x, n, kk)] for r in (1, 2) for x in pts) if ok else 9
        keep = ok and g[1] < 0.99 and g[2] < 0.99 and worst <= 1.03
        print('add %5d to %5d x %5d (checked at %s): geomean %.3f %.3f, worst %.3f  %s' % (m, n, kk, sorted(pts), g[1], g[2], worst, 'KEEP' if keep else ''))
        if keep: add.append(m)
    if not rep and not add: continue
    args = ['python3', 'scripts/configs_add_m.py', 'configs/' + f, R + '/newer/' + f]
    args += ['--add', ','.join(map(str, add))]  # always: without it every M the export has is added
    if rep: args += ['--replace', ','.join(map(str, rep))]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode == 0: open(R + '/fin/' + f, 'w').write(r.stdout); print('fin', r.stderr.strip())
    else: print('fin', f, 'failed', r.stderr.strip())
PY
cat $R/log
