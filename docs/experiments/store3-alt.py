# store3-alt.py SRC DST SHAPES (session 38, docs/perf.md "Tensor stores"): a copy of the configs directory SRC in DST where every 128 x 256 in-place
# config (RESCALE 1) that stores with STORE 0 or 2 (files) or STORE 0 (the time model) stores by TMA
# tensor stores instead (STORE 3); SHAPES lists the per-M entries changed, one shape each (M = the entry's).
import json, glob, os, sys, collections
src, dst, shapes = sys.argv[1:4]
os.makedirs(dst, exist_ok=True)
changed = collections.defaultdict(set)
def flip(x, stores):
    n = 0
    if isinstance(x, dict):
        p = x.get('params') if isinstance(x.get('params'), dict) else x
        if p.get('BLOCK_M') == 128 and p.get('BLOCK_N') == 256 and p.get('RESCALE') == 1 and p.get('STORE') in stores \
           and p.get('CLUSTER_K', 1) == 1:
            p['STORE'] = 3; n += 1
        for k, v in x.items():
            if k != 'params': n += flip(v, stores)
    elif isinstance(x, list):
        for v in x: n += flip(v, stores)
    return n
for f in sorted(glob.glob(src + '/*.json')):
    d = json.load(open(f))
    if f.endswith('-model.json'):
        n = flip(d['configs'], (0,))
    else:
        n = 0
        for k, e in d.get('per_M', {}).items():
            if flip(e, (0, 2)):
                n += 1
                if d.get('N'): changed[(d['N'], d['K'])].add(int(k.split('_')[-1]))
        for k, v in d.items():
            if k != 'per_M': n += flip(v, (0, 2))
    json.dump(d, open(os.path.join(dst, os.path.basename(f)), 'w'))
    print(os.path.basename(f), n, file=sys.stderr)
with open(shapes, 'w') as o:
    o.write('shapes:\n')
    for (n, k), ms in sorted(changed.items()):
        o.write('  - {N: %d, K: %d, M: [%s]}\n' % (n, k, ', '.join(map(str, sorted(ms)))))
print(sum(len(v) for v in changed.values()), 'entries', file=sys.stderr)
