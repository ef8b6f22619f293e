#!/usr/bin/env bash
# Runs the baselines railcomm's benchmarks are compared against; prints one JSON line per run on stdout.
# Raw Node TCP ping-pong + stream always; Open MPI (tcp BTL over lo, and vader shared memory) if installed.
# Open MPI is optional; install it with:  apt-get update && apt-get install -y openmpi-bin libopenmpi-dev
#
# Usage: bench/baselines.sh [--sizes 8,1048576] [--install]
#   --sizes LIST  sizes for every run (default: each benchmark's own list)
#   --install     run the apt-get line above first (nothing is installed without it)
# Extra mpirun arguments can be given in $MPIRUN_ARGS. Runs are sequential, never concurrent.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sizes_args=()
install=0
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes_args=(--sizes "$2"); shift 2 ;;
    --install) install=1; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "baselines.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

log() { echo "# $*" >&2; }

# Guard against a hung run; `timeout` is in coreutils but don't require it.
run() {
  if command -v timeout >/dev/null 2>&1; then timeout 600 "$@"; else "$@"; fi
}

if [ "$install" = 1 ]; then
  log "installing Open MPI"
  apt-get update && apt-get install -y openmpi-bin libopenmpi-dev >&2
fi

log "raw Node TCP ping-pong"
run node "$here/raw-tcp-pingpong.mjs" --json "${sizes_args[@]}"
log "raw Node TCP stream"
run node "$here/raw-tcp-stream.mjs" --json "${sizes_args[@]}"

if command -v mpicc >/dev/null 2>&1; then
  log "building bench/mpi/pingpong"
  if command -v make >/dev/null 2>&1; then
    make -s -C "$here/mpi" pingpong >&2
  else
    mpicc -O2 -Wall -std=c11 -D_POSIX_C_SOURCE=200809L -o "$here/mpi/pingpong" "$here/mpi/pingpong.c"
  fi
else
  log "mpicc not found: not building the MPI baseline"
fi

if command -v mpirun >/dev/null 2>&1 && [ -x "$here/mpi/pingpong" ]; then
  # Open MPI's tcp BTL excludes 127.0.0.0/8 by default and uses another interface's address
  # (so on a host with only lo it finds no interface). Pin it to lo so it takes the same path as the Node baselines;
  # on the dev box both paths measured the same (~5.7 us at 8 B).
  mpirun_base=(mpirun --allow-run-as-root --oversubscribe -n 2 --mca pml ob1)
  # shellcheck disable=SC2206
  extra=(${MPIRUN_ARGS:-})
  for mode in latency bw; do
    log "Open MPI tcp BTL $mode"
    run "${mpirun_base[@]}" --mca btl self,tcp --mca btl_tcp_if_include lo "${extra[@]}" \
      "$here/mpi/pingpong" "$mode" --json --label ompi-tcp "${sizes_args[@]}"
  done
  for mode in latency bw; do
    log "Open MPI vader (shared memory) BTL $mode"
    run "${mpirun_base[@]}" --mca btl self,vader "${extra[@]}" \
      "$here/mpi/pingpong" "$mode" --json --label ompi-vader "${sizes_args[@]}"
  done
else
  log "mpirun or bench/mpi/pingpong not available: skipping MPI baselines"
fi
