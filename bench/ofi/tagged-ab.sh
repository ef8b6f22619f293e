#!/usr/bin/env bash
# Issue 21's two-sided mode, measured before it is built: what the provider's
# tag matching (FI_TAGGED: fi_tsend/fi_trecv) costs against plain
# fi_send/fi_recv in a raw libfabric ping-pong and stream (bench/ofi/ofi-bench
# --tagged), beside railcomm's active-message path (software matching in JS,
# async and synchronous calls) at the same sizes; rounds interleaved, per
# provider.
#   bench/ofi/tagged-ab.sh [rounds] [providers...]   (default: 3, "tcp;ofi_rxm" shm)
source "$(dirname "${BASH_SOURCE[0]}")/ab-common.sh"
sizes=8,1024,16384,32768,65536
for r in $(seq 1 "$rounds"); do
  for p in "${providers[@]}"; do
    echo "## round $r, $p, railcomm async then sync (the CQ with a wait fd, as always)"
    RAILCOMM_OFI_PROVIDERS="$p" run node "$root/dist/cli/main.js" bench latency --rails ofi --sync=both --sizes "$sizes" --iters 5000 --quiet --json
    for mode in "" --tagged; do
      echo "## round $r, $p, raw libfabric latency ${mode:-untagged}, the CQ with FI_WAIT_FD where the provider has one"
      wfd=--wait-fd; [ "$p" = shm ] && wfd= # (shm has no wait fd)
      run "$here/ofi-bench" latency -p "$p" --sizes "$sizes" --iters 5000 --json $wfd $mode
      echo "## round $r, $p, raw libfabric bw ${mode:-untagged}"
      run "$here/ofi-bench" bw -p "$p" --sizes "$sizes" --json $wfd $mode
    done
  done
done
