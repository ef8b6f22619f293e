#!/bin/bash
# RAILCOMM_TCP_PEER_TIMEOUT (rail/tcp/peer-check.ts): how long after a cut the
# peer fails, and that a busy peer does not. Two hosts (network namespaces,
# test/helpers/netns-links.sh) over one tcp lane (l1); test/jobs/tcp-peer-cut.mjs
# in three modes: idle (both ranks wait to receive; rank 0 drops l1 both ways
# with nft), send (rank 0 sends 64 MiB after the cut, rank 1 waits for it), busy
# (no cut: rank 1 computes BUSY_MS without its event loop while 64 MiB are sent
# to it). Prints each rank's RESULT (code, ms after the cut or start) per round.
# Needs root and nft. Knobs: T=3 (the timeout, s), ROUNDS=3, BUSY_MS=40000,
# PEER_TIMEOUT_OFF=1 also runs idle with the check off (T=0: the job's
# --timeout, 30 s, ends it). Runs under /tmp/railcomm-bench.lock.
set -u
cd "$(dirname "$0")/.."
T=${T:-3} ROUNDS=${ROUNDS:-3} BUSY_MS=${BUSY_MS:-40000}
tag=$((10 + ($$ % 80))); A=rc${tag}a; B=rc${tag}b
links=test/helpers/netns-links.sh
$links down $tag >/dev/null 2>&1
$links up $tag >/dev/null || { echo "cannot create the namespaces (root and nft needed)"; exit 1; }
trap '$links down $tag >/dev/null 2>&1' EXIT
flush() { ip netns exec $A nft flush chain inet rclanes out; ip netns exec $B nft flush chain inet rclanes out; }
CUT="nft add rule inet rclanes out ip daddr 10.81.$tag.2 drop; ip netns exec $B nft add rule inet rclanes out ip daddr 10.81.$tag.1 drop"
job() { # mode timeout
  flush
  LINGER_MS=$((3 * $2 * 1000 + 2000)) MODE=$1 BUSY_MS=$BUSY_MS CUT="$CUT" RAILCOMM_TCP_DEVICES=l1 RAILCOMM_TCP_PEER_TIMEOUT=$2 \
    flock /tmp/railcomm-bench.lock timeout 120 node dist/cli/main.js run --hosts $A:1,$B:1 --rsh 'ip netns exec' \
    --kv-host 10.77.$tag.1 --rails tcp,self --timeout ${JOB_TIMEOUT:-90} test/jobs/tcp-peer-cut.mjs 2>&1 |
    grep -E 'RESULT|exceeded --timeout' | sed -E 's/^\[([0-9])\] RESULT ([A-Z_a-z]+) ([0-9]+).*/rank \1: \2 after \3 ms/'
  flush
}
echo "# tcp peer check, timeout ${T} s, $(date -u +%FT%TZ), $(uname -r), node $(node -v)"
for r in $(seq 1 "$ROUNDS"); do
  for mode in idle send busy; do echo "round $r $mode:"; job $mode "$T" | sed 's/^/  /'; done
done
if [ "${PEER_TIMEOUT_OFF:-0}" = 1 ]; then echo "idle, check off (T=0):"; JOB_TIMEOUT=30 job idle 0 | sed 's/^/  /'; fi
