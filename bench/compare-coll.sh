#!/usr/bin/env bash
# Collective benchmarks side by side, as issue 5 asks: railcomm (tcp rail
# until the shared-memory rails land) and Open MPI (vader = shared memory,
# and tcp), osu_allreduce style, average us per call over the ranks.
# Usage: bench/compare-coll.sh [ranks...]   (default: 2 4)
# Needs `make -C bench/mpi` (Open MPI: apt-get install openmpi-bin libopenmpi-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-8,1024,65536,1048576}
for n in "${@:-2 4}"; do
  for kind in allreduce bcast allgather alltoall; do
    node dist/cli/main.js bench "$kind" -n "$n" --sizes "$SIZES" --json
    mpirun --allow-run-as-root --oversubscribe -n "$n" --mca pml ob1 --mca btl self,vader bench/mpi/coll "$kind" --sizes "$SIZES" --json --label ompi-vader
    mpirun --allow-run-as-root --oversubscribe -n "$n" --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo bench/mpi/coll "$kind" --sizes "$SIZES" --json --label ompi-tcp
  done
done
