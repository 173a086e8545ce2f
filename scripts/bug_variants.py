# scripts/bug_variants.py TEMPLATES: copies of the template directory with one change each, in
# /tmp/tv_NAME, for the CLUSTER_K bug hunt of session 6 (docs/perf.md): base (none), relc (cluster-scope
# release and acquire on remote arrivals and waits), proxy (a proxy fence before each remote
# arrival), wgbar (a warpgroup barrier before each free). Written against the template before the fix: on a
# tree with the fence, 'proxy' finds the fence already there only in the helper it edits.

import os, shutil, sys
src = sys.argv[1]
def make(name, edits):
    d = f'/tmp/tv_{name}'
    shutil.rmtree(d, ignore_errors=True); shutil.copytree(src, d)
    for fn, a, b in edits:
        p = os.path.join(d, fn); s = open(p).read()
        assert s.count(a) >= 1, (name, a); s = s.replace(a, b); open(p, 'w').write(s)
ARR = '"@p mbarrier.arrive.shared::cluster.b64 _, [ra];\\n}\\n"'
WAIT = 'mbarrier.try_wait.parity.shared::cta.b64'
make('base', [])
make('relc', [('at_sm90.cuh', ARR, '"@p mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\\n}\\n"'),
              ('at_sm90.cuh', WAIT, 'mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64')])
make('proxy', [('at_sm90.cuh', ARR, '"fence.proxy.async.shared::cta;\\n@p mbarrier.arrive.shared::cluster.b64 _, [ra];\\n}\\n"')])
# the exchange waits with a full CTA barrier of the warpgroup before freeing (every warp's reads done)
make('wgbar', [('gemm_a8w8_blockscale_sm90.cuh', '''      __syncwarp();
      at_mbar_arrive_cluster_if(xfree, peer, (t % 32) == 0);''', '''      asm volatile("bar.sync %0, 128;\\n" ::"r"(1 + (int)(threadIdx.x / 128) - 1) : "memory");
      at_mbar_arrive_cluster_if(xfree, peer, (t % 32) == 0);''')])
