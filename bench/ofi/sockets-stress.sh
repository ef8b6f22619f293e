#!/bin/bash
# The sockets-provider stress: the whole point-to-point suite (4 ranks) over
# --rails ofi with RAILCOMM_OFI_PROVIDERS=sockets, JOBS copies at once (the
# load that made the CI machine's one copy hang), RUNS times each. A run fails
# when a case does; for a run that hangs, the launcher's hang report and
# `ss -tnpim` (socket queues and memory, the evidence of a shut receive window)
# are kept under $OUT. Extra environment goes to every run, e.g. the kernel's
# autotuned buffers instead of railcomm's fixed ones:
#   bash bench/ofi/sockets-stress.sh 45 4                           # railcomm's default (1 MiB)
#   FI_SOCKETS_MAX_BUF_SZ=0 bash bench/ofi/sockets-stress.sh 45 4   # libfabric's default (autotuned)
# Prints one line per failed run and a count. Not a benchmark: ~4 s a run per
# job on 2 cores; nothing else should run beside it.
set -u
cd "$(dirname "$0")/../.."
RUNS=${1:-45}
JOBS=${2:-4}
NODE=${NODE:-node}
OUT=${OUT:-$(mktemp -d /tmp/sockets-stress.XXXXXX)}
mkdir -p "$OUT"

loop() {
  local id=$1 i rc out pid
  for i in $(seq 1 "$RUNS"); do
    out="$OUT/$id-$i"
    RAILCOMM_OFI_PROVIDERS=sockets RAILCOMM_HANG_TIMEOUT=10000 \
      timeout 120 "$NODE" dist/cli/main.js run -n 4 --rails ofi --timeout 60 test/jobs/p2p-suite.mjs > "$out.out" 2> "$out.err" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
      if [ ! -e "$out.ss" ] && grep -q 'hang report' "$out.err" 2>/dev/null; then ss -tnpim > "$out.ss" 2>&1; fi
      sleep 0.5
    done
    wait "$pid"; rc=$?
    if [ "$rc" -eq 0 ]; then rm -f "$out.out" "$out.err"; echo "ok" >> "$OUT/count"
    else echo "job $id run $i: exit $rc: $(grep -m1 -h -E 'FAIL|hang report' "$out.out" "$out.err" | cut -c1-200)" | tee -a "$OUT/count"; fi
  done
}

for j in $(seq 1 "$JOBS"); do loop "$j" & done
wait
runs=$(wc -l < "$OUT/count"); bad=$(grep -vc '^ok$' "$OUT/count")
echo "sockets stress: $bad of $runs runs failed (FI_SOCKETS_MAX_BUF_SZ=${FI_SOCKETS_MAX_BUF_SZ:-railcomm default}, $JOBS jobs at once, $("$NODE" --version)); evidence in $OUT"
