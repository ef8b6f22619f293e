#!/usr/bin/env bash
# Scalable endpoints against a domain per thread rank: bench/ofi/sep-pairs.mjs
# with RAILCOMM_OFI_SEP=1 then 0, rounds interleaved, 2 processes of K thread
# ranks on the sockets provider (the one with contexts here).
#   bench/ofi/sep-ab.sh [rounds] [K] [iterations]   (default: 3, 4, 5000)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
rounds=${1:-3}; k=${2:-4}; iters=${3:-5000}
run() { flock /tmp/railcomm-bench.lock timeout 300 "$@"; }
for r in $(seq 1 "$rounds"); do
  for sep in 1 0; do
    echo "## round $r, RAILCOMM_OFI_SEP=$sep"
    RAILCOMM_OFI_SEP=$sep RAILCOMM_OFI_PROVIDERS=sockets run node "$root/dist/cli/main.js" run -n $((2 * k)) --threads-per-process "$k" --rails ofi --timeout 240 \
      "$here/sep-pairs.mjs" "$iters" | grep '^\[0\] {' | cut -d' ' -f2-
  done
done
