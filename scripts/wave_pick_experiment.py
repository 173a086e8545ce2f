#!/usr/bin/env python3
# wave_pick_experiment.py TUNED.db CONFIGS_DIR OUT_DIR: an experiment of session 7 (docs/perf.md,
# "A wave-aware pick for shapes nobody tuned"), not used by the product. For each M entry of the
# default file above 128, every sm90 candidate's speed against each tuned (N, K)'s winner is
# corrected for its wave efficiency there (useful work over what the waves it takes could hold:
# padding and idle SMs count); at an untuned (N, K) the candidate of most corrected speed x
# efficiency among the best of each cluster-tile footprint is written into a per-(N, K) file
# (entries up to M = 128 copied from the nearest tuned (N, K)'s file, as the runtime would answer).
# Then: autotune compare search_spaces/a8w8_blockscale.yaml --configs OUT_DIR --shapes ... (with
# the committed configs copied into OUT_DIR too).
import sqlite3, json, math, sys, os, copy, collections
db, cfgdir, outdir = sys.argv[1:4]
SM = 132
d = sqlite3.connect(db)
rows = d.execute("""select p.n, p.k, p.m, r.candidate_id, coalesce(r.retime_us, r.time_us), c.params, v.name
  from results r join problems p on p.id = r.problem_id join candidates c on c.id = r.candidate_id
  join variants v on v.id = c.variant_id where r.status = 'ok'""").fetchall()
params = {}; T = collections.defaultdict(dict)   # (n,k,m) -> cand -> time
for n, k, m, c, t, p, v in rows:
    if v != 'sm90': continue
    params[c] = json.loads(p); T[(n, k, m)][c] = t
def eff(p, m, n):
    # useful work over the machine's capacity for the waves it takes: padding and idle SMs count
    bm, bn = p['BLOCK_M'] * p['CLUSTER_M'], p['BLOCK_N'] * p['CLUSTER_N']
    cl = p['CLUSTER_M'] * p['CLUSTER_N'] * p['CLUSTER_K']
    units = -(-m // bm) * -(-n // bn) * p['SPLIT_K']
    slots = SM // cl
    conc = min(units, slots)
    waves = -(-units // conc)
    cta_work = p['BLOCK_M'] * p['BLOCK_N'] / (p['SPLIT_K'] * p['CLUSTER_K'])
    return m * n / (waves * SM * cta_work)
nks = sorted({(n, k) for n, k, m in T})
def stand_in(n, k, m):
    ms = sorted(mm for nn, kk, mm in T if (nn, kk) == (n, k))
    for mm in ms:
        if mm >= m: return mm
    return ms[-1] if ms else None
def key(p):
    return (p['BLOCK_M'] * p['CLUSTER_M'], p['BLOCK_N'] * p['CLUSTER_N'], p['CLUSTER_M'] * p['CLUSTER_N'] * p['CLUSTER_K'], p['SPLIT_K'])
def alternatives(m, keep=6):
    Q = {}
    for c, p in params.items():
        s = 0; cnt = 0
        for n, k in nks:
            mm = stand_in(n, k, m)
            if mm is None: continue
            tt = T[(n, k, mm)]; win = min(tt.values())
            t = tt.get(c)
            q = win / (t * eff(p, mm, n)) if t else 0.1
            s += math.log(min(q, 1.5)); cnt += 1
        Q[c] = math.exp(s / cnt)
    best = {}
    for c in sorted(Q, key=lambda c: -Q[c]):
        kk = key(params[c])
        if kk not in best: best[kk] = c
        if len(best) == keep: break
    return [(c, Q[c]) for c in best.values()]
dflt = json.load(open(os.path.join(cfgdir, 'sm90-GEMM-A8W8_BLOCKSCALE.json')))
unseen = [(1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584), (1536, 7168), (576, 7168), (2112, 7168),
          (3072, 1536), (4096, 512), (7168, 2048), (4608, 7168), (7168, 2304)]
tuned_files = {}
for f in os.listdir(cfgdir):
    if 'N=' in f:
        n = int(f.split('N=')[1].split('-')[0]); k = int(f.split('K=')[1].split('.')[0]); tuned_files[(n, k)] = f
alts = {}
entry_ms = [int(e.split('_')[-1]) for e in dflt['per_M']]
for m in entry_ms + [8192]:
    if m > 128: alts[m] = alternatives(m)
for m, a in alts.items():
    print(m, [(json.dumps({x: params[c][x] for x in ('BLOCK_M','BLOCK_N','CLUSTER_M','CLUSTER_N','KPIPE','RESCALE','STAGES')}), round(q, 3)) for c, q in a])
os.makedirs(outdir, exist_ok=True)
for n, k in unseen:
    near = min(tuned_files, key=lambda t: (abs(math.log2(t[0] / n)) + abs(math.log2(t[1] / k)), tuned_files[t]))
    nf = json.load(open(os.path.join(cfgdir, tuned_files[near])))
    out = copy.deepcopy(dflt); out['N'] = n; out['K'] = k
    for e in list(out['per_M']):
        m = int(e.split('_')[-1])
        if m <= 128 and e in nf['per_M']: out['per_M'][e] = copy.deepcopy(nf['per_M'][e])
        elif m in alts:
            c = max(alts[m], key=lambda cq: cq[1] * eff(params[cq[0]], m, n))[0]
            out['per_M'][e]['params'] = params[c]
    c = max(alts[8192], key=lambda cq: cq[1] * eff(params[cq[0]], 8192, n))[0]
    out['buckets']['any']['params'] = params[c]
    for b in list(out['buckets']) + list(out['per_M']): out.pop(b, None)  # the seed-shaped copies
    json.dump(out, open(os.path.join(outdir, f'sm90-GEMM-A8W8_BLOCKSCALE-N={n}-K={k}.json'), 'w'), indent=1)
    print(n, k, 'near', near, {e: key(out['per_M'][e]['params']) for e in out['per_M'] if int(e.split('_')[-1]) > 128}, 'any', key(out['buckets']['any']['params']))
