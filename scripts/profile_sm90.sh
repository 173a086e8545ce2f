#!/bin/bash
# profile_sm90.sh M N K PARAMS_JSON...: Nsight Compute on the GPU host, for one shape: each sm90
# config given (a JSON object of all nine parameters, CLUSTER_M, CLUSTER_N and KPIPE included)
# launched through the runtime library by
# examples/gemm_a8w8_blockscale, then cuBLASLt's block-scaled FP8 kernel of the same shape.
# Sections: speed of light, compute and memory workload, warp states. Output under $OUT. Each ncu
# run is cut after $PROFILE_LIMIT s (default 120): on 2026-11-23 the cuBLASLt pass (PROFILE_VENDOR=1)
# ran past the device command's limit of 400 s and cost that much device time.
set -u
B=${B:-/tmp/b}
OUT=${OUT:-/tmp/out}
m=$1 n=$2 k=$3
shift 3
SECTIONS="--section SpeedOfLight --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum.per_second,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
i=0
for params in "$@"; do
  i=$((i + 1))
  dir=/tmp/profile-cfg-$i
  mkdir -p $dir && rm -f $dir/*.json
  entry='"variant": "sm90", "family": "sm90", "template": "gemm_a8w8_blockscale_sm90.cuh", "entry": "gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, GROUP_M, SPLIT_K, PINGPONG, CLUSTER_M, CLUSTER_N, KPIPE>", "params": '"$params"', "tuned_M": [1], "time_us": [1.0]'
  {
    printf '{"format": "autotune-configs/1", "op": "gemm_a8w8_blockscale", "tag": "A8W8_BLOCKSCALE", "device": "sm90", '
    printf '"device_name": "profile", "arch": "sm_90a", "N": %s, "K": %s, "buckets": {' "$n" "$k"
    sep=""
    for b in small medium_M32 medium_M64 medium_M128 large xlarge any; do printf '%s"%s": {%s}' "$sep" $b "$entry"; sep=", "; done
    printf '}}\n'
  } >$dir/sm90-GEMM-A8W8_BLOCKSCALE-N=$n-K=$k.json
  echo "== sm90 $params" | tee -a "$OUT/profile.txt"
  timeout "${PROFILE_LIMIT:-120}" ncu --clock-control none -k regex:blockscale_sm90 -c 1 $SECTIONS $B/examples/gemm_a8w8_blockscale --configs $dir $m $n $k \
    >>"$OUT/profile.txt" 2>&1
done
if [ -n "${PROFILE_VENDOR:-}" ]; then
  echo "== cuBLASLt" | tee -a "$OUT/profile.txt"
  timeout "${PROFILE_LIMIT:-120}" ncu --clock-control none -k regex:e4m3 -c 1 $SECTIONS $B/examples/gemm_a8w8_blockscale --configs /tmp/profile-cfg-1 $m $n $k \
    >>"$OUT/profile.txt" 2>&1
fi
grep -E "^== |Duration|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|gmma|lts__t_bytes|stalled_(barrier|long_scoreboard|wait|math|membar|short|mio|lg|sleeping|branch|no_inst|dispatch|misc|not_sel|selected)" "$OUT/profile.txt" |
  awk '{$1=$1; print}' | cut -c1-120 | head -80
