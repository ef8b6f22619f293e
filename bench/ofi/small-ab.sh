#!/usr/bin/env bash
# The ofi rail's small messages: the 8 B half round trip through the async
# calls and the synchronous ones (railcomm bench latency --sync=both), beside
# the raw libfabric ping-pong (bench/ofi/ofi-bench, spinning on fi_cq_read;
# its CQ without a wait object, then with FI_WAIT_FD as the rail's), rounds
# interleaved; per provider.
#   bench/ofi/small-ab.sh [rounds] [providers...]   (default: 3, "tcp;ofi_rxm" shm)
source "$(dirname "${BASH_SOURCE[0]}")/ab-common.sh"
for r in $(seq 1 "$rounds"); do
  for p in "${providers[@]}"; do
    echo "## round $r, $p, railcomm async then sync"
    RAILCOMM_OFI_PROVIDERS="$p" run node "$root/dist/cli/main.js" bench latency --rails ofi --sync=both --sizes 8 --iters 20000 --quiet --json
    echo "## round $r, $p, raw libfabric"
    run "$here/ofi-bench" latency -p "$p" --sizes 8 --iters 20000 --json
    echo "## round $r, $p, raw libfabric, the CQ with FI_WAIT_FD (as the rail opens it)"
    run "$here/ofi-bench" latency -p "$p" --sizes 8 --iters 20000 --json --wait-fd
  done
done
