#!/bin/bash
# The udp;ofi_rxd stress: the point-to-point suite's case "thousands of
# outstanding requests in all directions" (4 ranks, 3000 requests each) run
# N times over --rails ofi with RAILCOMM_OFI_PROVIDERS='udp;ofi_rxd'; a run
# fails when the case does (a peer failed on a malformed frame, or a hang).
# Extra environment goes to every run, e.g. the provider's own window:
#   bash bench/ofi/rxd-stress.sh 60                                # railcomm's default (32)
#   FI_OFI_RXD_MAX_UNACKED=128 bash bench/ofi/rxd-stress.sh 60     # libfabric's default
# Prints one line per failed run (its first failure line) and a count.
# Not a benchmark: ~4 s a run; nothing else should run beside it.
set -u
cd "$(dirname "$0")/../.."
N=${1:-30}
NODE=${NODE:-node}
CASE='thousands of outstanding requests in all directions'
bad=0
for i in $(seq 1 "$N"); do
  out=$(RAILCOMM_OFI_PROVIDERS='udp;ofi_rxd' RAILCOMM_HANG_TIMEOUT=10000 ONLY_CASE="$CASE" \
    timeout 120 "$NODE" dist/cli/main.js run -n 4 --rails ofi --timeout 100 test/jobs/p2p-suite.mjs 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then
    bad=$((bad + 1))
    echo "run $i: exit $rc: $(echo "$out" | grep -m1 -E 'FAIL|failed|hang report' | cut -c1-240)"
  fi
done
echo "udp;ofi_rxd stress: $bad of $N runs failed (FI_OFI_RXD_MAX_UNACKED=${FI_OFI_RXD_MAX_UNACKED:-railcomm default}, $("$NODE" --version))"
