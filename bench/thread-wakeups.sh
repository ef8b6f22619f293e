#!/usr/bin/env bash
# Which threads of a 2-rank shared-memory ping-pong wake up while it runs
# (issue 18, the tails): runs bench/tails.mjs long enough to sample every
# thread of both rank processes 6 s and 16 s in (/proc/PID/task/TID/status and
# stat), then prints per thread the voluntary and involuntary context switches
# and CPU ticks between the two samples. SYNC=1 (default) times the synchronous
# calls, SYNC=0 the async ones. Needs npm run build.
#   bash bench/thread-wakeups.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
snap() {
  for p in $(pgrep -f 'bench/tails.mjs'); do
    [ "$(cat /proc/$p/comm 2>/dev/null)" = node ] || continue
    grep -q 'dist/cli/main.js' /proc/$p/cmdline && continue
    for t in /proc/$p/task/*; do
      echo "$p/$(basename "$t") $(tr ' ' _ < "$t/comm") $(awk '/^(voluntary|nonvoluntary)_ctxt_switches/ {printf "%s ", $2}' "$t/status") $(awk '{print $14+$15}' "$t/stat")"
    done
  done | sort
}
SYNC=${SYNC:-1} node dist/cli/main.js run -n 2 --rails shm,self bench/tails.mjs 300000 200000 > "$out/run.out" 2>&1 &
sleep 6; snap > "$out/a"; sleep 10; snap > "$out/b"; wait
join "$out/a" "$out/b" | awk '{printf "%-14s %-16s voluntary +%d, involuntary +%d, CPU ticks +%d\n", $1, $2, $7-$3, $8-$4, $9-$5}'
grep -o '"avgUs.*"slowestUs":[0-9.]*' "$out/run.out" || true
rm -rf "$out"
