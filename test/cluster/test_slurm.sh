#!/bin/bash
# test_slurm.sh AUTOTUNE TEST_CLUSTER: scripts/slurm under a real Slurm, on this machine alone.
# munged, slurmctld and slurmd (Debian's packages: munge, slurmctld, slurmd, slurm-client) are
# started here with a configuration of their own in a scratch directory (their own munge socket
# and ports, nothing of the system's touched), and stopped at the end. It skips (exit 77), saying
# why, where they are not installed or do not come up: not root, no packages, a container that
# cannot run them.
#
# 1. The job array of tune_array.sbatch in compile-only mode (3 shards of the tiny space), then
#    merge_export.sbatch as a dependent job: the merged candidates equal an unsharded run's.
# 2. Again with a cold compile cache, shard 2's task killed (SIGKILL) while it compiles; the merge
#    job refuses the incomplete set; shard 2 resubmitted alone resumes from its DB, and the merge
#    then equals the unsharded run: nothing lost.
set -u
exe=$(realpath "$1")
tc=$(realpath "$2")
root=${AT_TEST_SOURCE_ROOT:?}
data=${AT_TEST_DATA:?}
D=${AT_TEST_TMP:-/tmp}/slurm.$$
skip() { echo "skipped: $*"; exit 77; }
fail() { echo "FAILED: $*"; for f in "$D"/*.log "$D"/work/*.out; do [ -f "$f" ] && { echo "== $f"; tail -n 30 "$f"; }; done; exit 1; }

[ "$(id -u)" = 0 ] || skip "Slurm's daemons need root here (not root)"
for c in munged slurmctld slurmd sbatch squeue scontrol sinfo scancel; do
  command -v $c >/dev/null 2>&1 || skip "$c not installed (Debian: apt-get install munge slurmctld slurmd slurm-client)"
done

rm -rf "$D" && mkdir -p "$D/state" "$D/spool" "$D/work" "$D/munge" || fail "scratch dir"
chmod 700 "$D/munge"
pids=""
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null; done
  sleep 1
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
}
trap cleanup EXIT

# munge, on a socket of its own.
dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$D/munge/munge.key"
munged --force --key-file="$D/munge/munge.key" --socket="$D/munge/munge.sock" --pid-file="$D/munge/munged.pid" \
  --log-file="$D/munged.log" --seed-file="$D/munge/seed" >/dev/null 2>&1 || skip "munged does not start ($(tail -n 1 "$D/munged.log" 2>/dev/null))"
sleep 0.5
pids="$pids $(cat "$D/munge/munged.pid" 2>/dev/null)"

# Two free ports (the system's Slurm, if any, keeps its own).
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
p1=$(port) p2=$(port)
node=$(hostname -s)
cpus=$(nproc)
export SLURM_CONF="$D/slurm.conf"
cat >"$SLURM_CONF" <<CONF
ClusterName=attest
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.sock
SlurmctldPort=$p1
SlurmdPort=$p2
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=100 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF

slurmctld -c -f "$SLURM_CONF" >/dev/null 2>&1 || skip "slurmctld does not start: $(tail -n 2 "$D/slurmctld.log" 2>/dev/null)"
slurmd -f "$SLURM_CONF" -N "$node" >/dev/null 2>&1 || skip "slurmd does not start: $(tail -n 2 "$D/slurmd.log" 2>/dev/null)"
sleep 1
pids="$pids $(cat "$D/slurmctld.pid" 2>/dev/null) $(cat "$D/slurmd.pid" 2>/dev/null)"
up=0
for _ in $(seq 1 60); do
  state=$(sinfo -h -N -o %T 2>/dev/null | head -n 1)
  case "$state" in idle*|mix*|alloc*) up=1; break ;; esac
  sleep 0.5
done
[ $up = 1 ] || skip "the Slurm node does not come up (state '${state:-none}'): $(tail -n 2 "$D/slurmd.log" 2>/dev/null)"
echo "slurm up: node $node, $cpus CPUs, ports $p1/$p2"

cd "$D/work" || fail "cd"
export AUTOTUNE="$exe" AUTOTUNE_SPACE="$data/spaces/tiny.yaml" AUTOTUNE_SHARDS=3 AUTOTUNE_RETRIES=0
export AUTOTUNE_ARGS="--compile-only --arch sm_90a --jobs 1" AUTOTUNE_NO_EXPORT=1 AUTOTUNE_PROGRESS=plain
S="$root/scripts/slurm"

# The reference: the whole space, unsharded.
AUTOTUNE_CACHE="$D/cache0" "$exe" --compile-only --arch sm_90a --db "$D/full.db" "$AUTOTUNE_SPACE" >"$D/full.log" 2>&1 \
  || fail "unsharded run"

# Waits for a job (all of an array's tasks) to leave the queue.
wait_job() {
  for _ in $(seq 1 600); do
    [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 0.5
  done
  fail "job $1 still queued after 300 s: $(squeue -j "$1")"
}
state_of() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }

# ---- 1: the array, then the dependent merge --------------------------------------------------
export AUTOTUNE_CACHE="$D/cache1" AUTOTUNE_SHARD_DIR="$D/shards1" AUTOTUNE_DB="$D/merged1.db"
out=$(sh "$S/submit.sh" 3 "$AUTOTUNE_SPACE") || fail "submit.sh: $out"
echo "$out"
array=$(echo "$out" | sed -n 's/^array job \([0-9]*\).*/\1/p')
merge=$(echo "$out" | sed -n 's/.*merge job \([0-9]*\).*/\1/p')
wait_job "$array"
wait_job "$merge"
[ "$(state_of "$merge")" = COMPLETED ] || fail "merge job $merge: $(state_of "$merge")"
for i in 1 2 3; do [ -f "$D/shards1/tiny-shard-$i-of-3.db" ] || fail "no DB of shard $i"; done
"$tc" "$exe" --same-candidates "$D/full.db" "$D/merged1.db" || fail "sharded and merged != unsharded"
grep -q "shard 3/3: finished" "$D"/work/autotune-merge-"$merge".out || fail "merge output"
echo "ok 1: array of 3 shards + dependent merge = unsharded run"

# ---- 2: shard 2 killed mid-run, resubmitted, merged: nothing lost --------------------------
export AUTOTUNE_CACHE="$D/cache2" AUTOTUNE_SHARD_DIR="$D/shards2" AUTOTUNE_DB="$D/merged2.db"
array=$(sbatch --parsable --array=1-3 "$S/tune_array.sbatch") || fail "sbatch array"
array=${array%%;*}
db2="$D/shards2/tiny-shard-2-of-3.db"
killed=0
for _ in $(seq 1 600); do
  st=$(squeue -h -j "${array}_2" -o %T 2>/dev/null)
  # Running, and its DB is there (the run has begun recording): kill it as a dead node would.
  if [ "$st" = RUNNING ] && [ -f "$db2" ]; then
    sleep 1
    scancel --signal=KILL --full "${array}_2" && killed=1
    break
  fi
  [ -z "$st" ] && [ -f "$db2" ] && break # finished before it could be killed (a very fast machine)
  sleep 0.2
done
[ $killed = 1 ] || fail "shard 2 was never seen running"
wait_job "$array"
echo "killed shard 2's task (job ${array}_2: $(state_of "${array}_2"))"
# The merge job refuses what is not finished.
merge=$(sbatch --parsable "$S/merge_export.sbatch") || fail "sbatch merge"
wait_job "$merge"
[ "$(state_of "$merge")" = FAILED ] || fail "merge of an unfinished shard: $(state_of "$merge"), expected FAILED"
grep -q "shard 2/3: NOT finished" "$D"/work/autotune-merge-"$merge".out || fail "merge did not name shard 2"
# Shard 2 alone, again: it resumes from its DB.
again=$(sbatch --parsable --array=2 "$S/tune_array.sbatch") || fail "resubmit shard 2"
again=${again%%;*}
merge=$(sbatch --parsable --dependency="afterok:$again" "$S/merge_export.sbatch") || fail "sbatch merge"
wait_job "$again"
wait_job "$merge"
[ "$(state_of "$merge")" = COMPLETED ] || fail "merge after the re-run: $(state_of "$merge")"
"$tc" "$exe" --same-candidates "$D/full.db" "$D/merged2.db" || fail "after the kill and re-run, merged != unsharded"
grep -q "shard 2/3: finished (2 runs" "$D"/work/autotune-merge-"$merge".out || fail "shard 2 should show its killed run and its re-run"
grep -h "known from the DB" "$D"/work/autotune-shard-"${again}"_2.out | tail -n 1
echo "ok 2: shard 2 killed mid-run, re-run from its DB, merged = unsharded run"
exit 0
