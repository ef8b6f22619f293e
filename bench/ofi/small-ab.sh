#!/usr/bin/env bash
# The ofi rail's small messages: the 8 B half round trip through the async
# calls and the synchronous ones (railcomm bench latency --sync=both), beside
# the raw libfabric ping-pong (bench/ofi/ofi-bench, spinning on fi_cq_read;
# its CQ without a wait object, then with FI_WAIT_FD as the rail's), rounds
# interleaved; per provider. On tcp;ofi_rxm railcomm runs twice: as by default
# (its queue with a wait fd) and with RAILCOMM_OFI_WAIT_FD=0 (none), and Open
# MPI's mtl ofi (pml cm, tcp) joins them where mpirun is installed.
#   bench/ofi/small-ab.sh [rounds] [providers...]   (default: 3, "tcp;ofi_rxm" shm)
source "$(dirname "${BASH_SOURCE[0]}")/ab-common.sh"
for r in $(seq 1 "$rounds"); do
  for p in "${providers[@]}"; do
    echo "## round $r, $p, railcomm async then sync"
    RAILCOMM_OFI_PROVIDERS="$p" run node "$root/dist/cli/main.js" bench latency --rails ofi --sync=both --sizes 8 --iters 20000 --quiet --json
    if [ "$p" = "tcp;ofi_rxm" ]; then
      echo "## round $r, $p, railcomm async then sync, RAILCOMM_OFI_WAIT_FD=0 (the queue without a wait object)"
      RAILCOMM_OFI_WAIT_FD=0 RAILCOMM_OFI_PROVIDERS="$p" run node "$root/dist/cli/main.js" bench latency --rails ofi --sync=both --sizes 8 --iters 20000 --quiet --json
    fi
    echo "## round $r, $p, raw libfabric"
    run "$here/ofi-bench" latency -p "$p" --sizes 8 --iters 20000 --json
    echo "## round $r, $p, raw libfabric, the CQ with FI_WAIT_FD (as the rail opens it)"
    run "$here/ofi-bench" latency -p "$p" --sizes 8 --iters 20000 --json --wait-fd
    if [ "$p" = "tcp;ofi_rxm" ] && [ -n "$mpi" ]; then
      echo "## round $r, $p, Open MPI mtl ofi (pml cm) on tcp"
      ompi_mtl_ofi latency --sizes 8
    fi
  done
done
