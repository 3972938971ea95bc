#!/bin/bash
# Slurm Prolog: checks the node against the runtime a job asks for before the job starts.
#
# slurm.conf:   Prolog=/etc/slurm/prolog.d/lockstep.sh   (this file; PrologFlags=Alloc runs it
#               at allocation rather than at the first step)
# A job names its runtime with  sbatch --comment=lockstep-runtime=NAME ...  and the site keeps
# each runtime's files (runtime.json from `lockstep closure-hash --json`, with "rdma": true for
# jobs that use InfiniBand/RoCE) in $LOCKSTEP_RUNTIMES/NAME/.
#
# A Prolog that exits non-zero drains the node and requeues the job. That is right for a node
# fault (GPUs missing, InfiniBand devices or ports gone: the silent TCP fallback), not for a
# job sent to a node whose driver is too old for its runtime. LOCKSTEP_ON_MISMATCH says what
# to do then: "cancel" (default) cancels the job with the report in the node's log and leaves
# the node up; "drain" exits 1 as for a fault.
#
# The Prolog runs as root with no search path and without the job's environment: the
# NCCL_IB_HCA the check uses is the node's own (/etc/nccl.conf, as NCCL reads it).
set -u
PATH="${LOCKSTEP_PROLOG_PATH:-/usr/local/bin:/usr/bin:/bin}"
LOCKSTEP="${LOCKSTEP:-/usr/local/bin/lockstep}"
LOCKSTEP_RUNTIMES="${LOCKSTEP_RUNTIMES:-/etc/lockstep/runtimes}"
LOCKSTEP_ON_MISMATCH="${LOCKSTEP_ON_MISMATCH:-cancel}"

log() { logger -t lockstep-prolog "job ${SLURM_JOB_ID:-?}: $*" 2>/dev/null || echo "$*" >&2; }

# The runtime this job asked for, from its comment ("lockstep-runtime=NAME").
comment="$(scontrol show job "${SLURM_JOB_ID:?}" 2>/dev/null |
  sed -n 's/.*Comment=\(lockstep-runtime=[A-Za-z0-9._-]*\).*/\1/p')"
runtime="${comment#lockstep-runtime=}"
[ -n "$runtime" ] || exit 0 # not a Lockstep job
spec="$LOCKSTEP_RUNTIMES/$runtime/runtime.json"
if [ ! -r "$spec" ]; then
  log "runtime \"$runtime\" has no $spec"
  scancel --quiet "$SLURM_JOB_ID"
  exit 0
fi

args=(verify-host --runtime-json "$spec")
# LOCKSTEP_ROOT: read proc/, dev/, sys/ and etc/nccl.conf under a fixture root (tests).
root="${LOCKSTEP_ROOT:-}"
[ -n "$root" ] && args+=(--root "$root")
if [ -r "$root/etc/nccl.conf" ]; then
  hca="$(sed -n 's/^[[:space:]]*NCCL_IB_HCA[[:space:]]*=[[:space:]]*//p' "$root/etc/nccl.conf" | tail -1)"
  [ -n "$hca" ] && args+=(--nccl-ib-hca "$hca")
fi
# The GPUs Slurm gave this job (SLURM_JOB_GPUS="0,1,2,3"): at least that many must be visible.
if [ -n "${SLURM_JOB_GPUS:-}" ]; then
  args+=(--gpus "$(tr ',' '\n' <<<"$SLURM_JOB_GPUS" | grep -c .)")
fi

report="$("$LOCKSTEP" "${args[@]}" 2>&1)"
rc=$?
case "$rc" in
  0) exit 0 ;;
  1) ;;
  *)
    log "lockstep verify-host failed to run (exit $rc): $report"
    exit 1
    ;;
esac
log "$report"
# Node faults drain the node whatever the policy: another job would meet them too.
if grep -qE '^  host (rdma|nccl-ib-hca|gpus):' <<<"$report" || [ "$LOCKSTEP_ON_MISMATCH" = drain ]; then
  exit 1
fi
scancel --quiet "$SLURM_JOB_ID"
exit 0
