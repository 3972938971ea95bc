#!/usr/bin/env bash
# examples/slurm/prolog.sh with the real lockstep binary on fixture roots, and stand-ins for
# the Slurm commands it calls (scontrol show job prints the job's comment; scancel and logger
# record their calls). Checks the exit code (0 runs the job, 1 drains the node) and whether
# the job was cancelled.
# usage: slurm_prolog_test.sh LOCKSTEP_BINARY PROLOG
set -euo pipefail
lockstep="$1" prolog="$2"
work="$(mktemp -d "${TMPDIR:-/tmp}/lockstep-prolog-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail() {
  echo "slurm_prolog_test: FAIL: $*" >&2
  exit 1
}

mkdir -p "$work/bin" "$work/runtimes/torch-cu128" "$work/runtimes/torch-cu128-ib"
cat >"$work/bin/scontrol" <<SH
#!/bin/sh
echo "JobId=\$3 JobName=train"
echo "   Comment=\$(cat "$work/comment") Extra=(null)"
SH
cat >"$work/bin/scancel" <<SH
#!/bin/sh
echo "scancel \$*" >>"$work/calls"
SH
cat >"$work/bin/logger" <<SH
#!/bin/sh
shift 2
echo "\$*" >>"$work/log"
SH
for t in sed tail tr grep cat; do ln -s "$(command -v $t)" "$work/bin/$t"; done
chmod +x "$work/bin/"*
echo '{"closureHash":"sha256:1111111111111111111111111111111111111111111111111111111111111111","cuda":"12.8"}' \
  >"$work/runtimes/torch-cu128/runtime.json"
echo '{"closureHash":"sha256:1111111111111111111111111111111111111111111111111111111111111111","cuda":"12.8","rdma":true}' \
  >"$work/runtimes/torch-cu128-ib/runtime.json"

# node DIR DRIVER GPUS [IB_DEVICE]: a fixture root.
node() {
  local dir="$work/$1" driver="$2" gpus="$3" ib="${4:-}"
  mkdir -p "$dir/proc/driver/nvidia" "$dir/dev" "$dir/etc"
  echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  $driver  Wed Jan 22 23:12:03 UTC 2025" \
    >"$dir/proc/driver/nvidia/version"
  for ((i = 0; i < gpus; i++)); do : >"$dir/dev/nvidia$i"; done
  if [ -n "$ib" ]; then
    mkdir -p "$dir/dev/infiniband" "$dir/sys/class/infiniband/$ib/ports/1"
    : >"$dir/dev/infiniband/uverbs0"
    echo "4: ACTIVE" >"$dir/sys/class/infiniband/$ib/ports/1/state"
  fi
}
node good 570.86.15 8 mlx5_0
node old 535.104.05 8 mlx5_0
node noib 570.86.15 8

# run COMMENT ROOT [GPUS]: runs the prolog; sets rc and cancelled (yes/no).
run() {
  echo "$1" >"$work/comment"
  rm -f "$work/calls"
  rc=0
  env -i LOCKSTEP_PROLOG_PATH="$work/bin" LOCKSTEP="$lockstep" LOCKSTEP_RUNTIMES="$work/runtimes" \
    LOCKSTEP_ROOT="$work/$2" SLURM_JOB_ID=42 SLURM_JOB_GPUS="${3:-}" bash "$prolog" || rc=$?
  cancelled=no
  grep -q "scancel --quiet 42" "$work/calls" 2>/dev/null && cancelled=yes
  return 0
}
expect() { # WANT_RC WANT_CANCELLED WHAT
  [ "$rc" = "$1" ] && [ "$cancelled" = "$2" ] ||
    fail "$3: exit $rc cancelled=$cancelled, want exit $1 cancelled=$2; log:"$'\n'"$(cat "$work/log" 2>/dev/null)"
  echo "ok: $3 (exit $rc, cancelled $cancelled)"
}

run "(null)" good
expect 0 no "a job without a Lockstep runtime runs"
run "lockstep-runtime=torch-cu128" good 0,1,2,3
expect 0 no "driver 570 fits CUDA 12.8"
run "lockstep-runtime=torch-cu128" old
expect 0 yes "driver 535 for CUDA 12.8 cancels the job, the node stays up"
grep -q "host driver: expected >= 570.26 (CUDA 12.8), found 535.104.05" "$work/log" ||
  fail "the log lacks the driver line"
run "lockstep-runtime=torch-cu128" good 0,1,2,3,4,5,6,7,8,9
expect 1 no "fewer GPUs than Slurm allocated drains the node"
run "lockstep-runtime=torch-cu128-ib" noib
expect 1 no "RDMA declared without /dev/infiniband drains the node"
echo "NCCL_IB_HCA=mlx5_0:1,mlx5_2:1" >"$work/good/etc/nccl.conf"
run "lockstep-runtime=torch-cu128-ib" good
expect 1 no "/etc/nccl.conf's NCCL_IB_HCA naming a missing device drains the node"
grep -q "NCCL_IB_HCA device mlx5_2:1, found absent" "$work/log" || fail "the log lacks mlx5_2"
run "lockstep-runtime=unknown" good
expect 0 yes "an unknown runtime cancels the job"
echo "slurm_prolog_test: all checks passed"
