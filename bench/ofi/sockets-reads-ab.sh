#!/usr/bin/env bash
# The sockets provider's large messages: rendezvous by remote read (railcomm's
# default) against CTS and DATA frames (RAILCOMM_RDMA_RGET_MIN=0), beside the
# raw libfabric stream and ping-pong (bench/ofi/ofi-bench), rounds interleaved.
# The sockets provider carries some 500 MB/s here, so the bandwidth runs are
# short (--iters 100; rget-ab.sh's defaults take minutes a run on it).
#   bench/ofi/sockets-reads-ab.sh [rounds]   (default 3; nothing else should run beside it)
set -u
cd "$(dirname "$0")/../.."
rounds=${1:-3}
for r in $(seq 1 "$rounds"); do
  for min in 65536 0; do
    echo "## round $r RGET_MIN=$min"
    RAILCOMM_RDMA_RGET_MIN=$min RAILCOMM_OFI_PROVIDERS=sockets timeout 300 node dist/cli/main.js bench bw --rails ofi --sizes 65536,1048576,4194304 --iters 100
    RAILCOMM_RDMA_RGET_MIN=$min RAILCOMM_OFI_PROVIDERS=sockets timeout 300 node dist/cli/main.js bench latency --rails ofi --sizes 1048576 --iters 200
  done
  echo "## round $r raw"
  timeout 300 bench/ofi/ofi-bench bw -p sockets --sizes 65536,1048576,4194304
  timeout 300 bench/ofi/ofi-bench latency -p sockets --sizes 1048576
done
