#!/usr/bin/env bash
# Collectives on one host through the shared-memory path, side by side with
# Open MPI's vader in the same round: railcomm processes (shm rail, segment +
# futex doorbell), railcomm thread ranks (SharedArrayBuffer + waitAsync), and
# the point-to-point algorithms for reference (RAILCOMM_COLL_SHARED_MAX=0).
# With BEFORE=<another built checkout>, its processes and threads run in the
# same round too (rails shm-shared-before, threads-shared-before).
# Usage: bench/compare-coll-shared.sh [ranks...]   (default: 2 4); ROUNDS=3
#        KINDS="allreduce bcast allgather" SIZES=8,65536,1048576 P2P=1 BEFORE=
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-8,65536,1048576}
for round in $(seq 1 "${ROUNDS:-3}"); do
  for n in "${@:-2 4}"; do
    for kind in ${KINDS:-allreduce bcast allgather}; do
      flock /tmp/railcomm-bench.lock bash -c "
        node dist/cli/main.js bench $kind -n $n --sizes $SIZES --json | sed 's/\"rails\":\"shm\"/\"rails\":\"shm-shared\"/'
        node dist/cli/main.js bench $kind -n $n --threads --sizes $SIZES --json | sed 's/\"rails\":\"tbsm\"/\"rails\":\"threads-shared\"/'
        if [ -n '${BEFORE:-}' ]; then
          node '${BEFORE:-}/dist/cli/main.js' bench $kind -n $n --sizes $SIZES --json | sed 's/\"rails\":\"shm\"/\"rails\":\"shm-shared-before\"/'
          node '${BEFORE:-}/dist/cli/main.js' bench $kind -n $n --threads --sizes $SIZES --json | sed 's/\"rails\":\"tbsm\"/\"rails\":\"threads-shared-before\"/'
        fi
        if [ '${P2P:-1}' = 1 ]; then
          RAILCOMM_COLL_SHARED_MAX=0 node dist/cli/main.js bench $kind -n $n --sizes $SIZES --json | sed 's/\"rails\":\"shm\"/\"rails\":\"shm-p2p\"/'
        fi
        mpirun --allow-run-as-root --oversubscribe -n $n --mca pml ob1 --mca btl self,vader bench/mpi/coll $kind --sizes $SIZES --json --label ompi-vader
        echo '{\"load\":\"'\$(cut -d' ' -f1-3 /proc/loadavg)'\",\"round\":$round,\"ranks\":$n}'"
    done
  done
done
