#!/bin/bash
# Where the 16-rank tails go (issue 18, section 2 at 16 ranks): bench/coll-stalls.mjs
# (per-call times, GC pauses, context switches per rank thread, the host's IPIs) over
# 16 processes and 16 thread ranks, async and sync, 8 B and 64 KiB, with variants that
# take a suspect away: pinned ranks (RAILCOMM_BIND=core), V8's GC on the main thread
# only (--single-threaded-gc), no background recompilation (norecomp), V8 with no
# helper threads at all (single), or background recompilation back (concurrent). Open
# MPI's vader runs the same counts, each call timed as well (--per-call): its own tail.
# Writes $OUT/ (or stalls-out/): stalls.jsonl (one line per job and round, with the
# hypervisor's steal time over the job), summary.md (medians over rounds), and the
# jobs' logs only with KEEP_LOGS=1 (the device tool brings few files back). Same
# preparation and carry as bench/sixteen-ranks.sh. Every job takes 2-3 s, all of them
# about 1.5 minutes a round: pick with ONLY, as RESULTS' runs did, e.g.
#   ROUNDS=5 ONLY='^(vader|processes (async|sync)( concurrent)?|threads (async|sync)) (8|65536)$'
# Knobs: N=16, ONLY=regex of job labels, ROUNDS=1 (jobs interleaved round by round),
# CALLS8=20000, CALLS64=2000; COLL_STALLS_WARM_MS (coll-stalls.mjs) passes through.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/stalls-out}
LOGS=$OUT/logs
[ "${KEEP_LOGS:-0}" = 1 ] || LOGS=$(mktemp -d)
mkdir -p "$OUT" "$LOGS"
ROUNDS=${ROUNDS:-1}
N=${N:-16}
CALLS8=${CALLS8:-20000}
CALLS64=${CALLS64:-2000}
. bench/lib/carried-node.sh
make -C bench/mpi coll > "$LOGS/make.txt" 2>&1 || { echo "make bench/mpi failed:"; tail -5 "$LOGS/make.txt"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NODE_FLAGS=$(node -e "import('./dist/core/params.js').then((m) => console.log(m.DEFAULT_NODE_FLAGS.join(' ')))")
RC=(node dist/cli/main.js run -n "$N")
T0=$(date +%s)
job() {
  local label=$1; shift
  [[ "$label" =~ ${ONLY:-.} ]] || return 0
  local log="$LOGS/$(echo "$label" | tr ' /=' '___').r$round.txt" steal0 steal1
  # The hypervisor's steal time over all CPUs (/proc/stat, 1/100 s), around the job.
  steal0=$(awk '/^cpu /{print $9}' /proc/stat)
  timeout --kill-after=10 90 "$@" > "$log" 2>&1
  local rc=$? line
  steal1=$(awk '/^cpu /{print $9}' /proc/stat)
  line=$(sed -n 's/^\(\[0\] \)\?\({"benchmark".*\)$/\2/p' "$log" | head -1)
  if [ -n "$line" ]; then echo "{\"label\":\"$label\",\"round\":$round,\"steal_cs\":$((steal1 - steal0)),\"result\":$line}" >> "$OUT/stalls.jsonl"
  else echo "$label failed (exit $rc): $(tail -2 "$log" | tr '\n' ' ')"; fi
  echo "round $round: $label done at $(( $(date +%s) - T0 )) s"
}
for round in $(seq 1 "$ROUNDS"); do
for size in 65536 8; do
  calls=$CALLS64; [ "$size" = 8 ] && calls=$CALLS8
  job "vader $size" mpirun --allow-run-as-root -n "$N" --bind-to core --mca pml ob1 --mca btl self,vader bench/mpi/coll allreduce --sizes "$size" --iters "$calls" --json --per-call --label ompi-vader
  for mode in async sync; do
    job "processes $mode $size" "${RC[@]}" bench/coll-stalls.mjs "$size" "$calls" "$mode"
    job "threads $mode $size" "${RC[@]}" --threads bench/coll-stalls.mjs "$size" "$calls" "$mode"
    job "processes $mode bind $size" env RAILCOMM_BIND=core "${RC[@]}" bench/coll-stalls.mjs "$size" "$calls" "$mode"
    job "threads $mode bind $size" env RAILCOMM_BIND=core "${RC[@]}" --threads bench/coll-stalls.mjs "$size" "$calls" "$mode"
    job "processes $mode stgc $size" env RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded-gc" "${RC[@]}" bench/coll-stalls.mjs "$size" "$calls" "$mode"
    job "processes $mode norecomp $size" env RAILCOMM_NODE_FLAGS="$NODE_FLAGS --no-concurrent-recompilation" "${RC[@]}" bench/coll-stalls.mjs "$size" "$calls" "$mode"
    # The inlining flags alone, as processes start by default: V8 compiles on its background
    # threads (probe 5 ran while 924bf40 had 16 processes on 16 CPUs start without them).
    job "processes $mode concurrent $size" env RAILCOMM_NODE_FLAGS="$NODE_FLAGS" "${RC[@]}" bench/coll-stalls.mjs "$size" "$calls" "$mode"
    job "processes $mode single $size" env RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded" "${RC[@]}" bench/coll-stalls.mjs "$size" "$calls" "$mode"
    job "processes $mode single bind $size" env RAILCOMM_BIND=core RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded" "${RC[@]}" bench/coll-stalls.mjs "$size" "$calls" "$mode"
  done
done
done
[ "${KEEP_LOGS:-0}" = 1 ] || rm -rf "$LOGS"
# summary.md: per job, medians over rounds of rank 0's median call and average call, and each
# round's average, time lost in slow calls, and the rank threads' involuntary switches.
node - "$OUT/stalls.jsonl" > "$OUT/summary.md" <<'EOF2'
const rows = require('fs').readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const med = (xs) => { const s = xs.filter(Number.isFinite).sort((a, b) => a - b); return s.length === 0 ? NaN : s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const by = {};
for (const j of rows) {
  const r = j.result;
  const o = r.benchmark === 'coll-stalls'
    ? { med: r.rank0.medianUs, avg: r.rank0.averageUs, lost: r.rank0.lostMs, invol: r.allRanks.involuntary, gcs: r.allRanks.gcs }
    : { med: r.results[0].usec_median, avg: r.results[0].usec, lost: r.results[0].lost_ms, invol: NaN, gcs: NaN };
  (by[j.label] ??= []).push({ ...o, steal: j.steal_cs });
}
const out = ['| job | median call us | average us | averages by round | ms lost in slow calls | involuntary switches | GCs | steal (1/100 s) |', '|---|---|---|---|---|---|---|---|'];
for (const [label, xs] of Object.entries(by)) {
  const list = (f, d) => xs.map((x) => (Number.isFinite(f(x)) ? f(x).toFixed(d) : '-')).join(' / ');
  out.push(`| ${label} | ${med(xs.map((x) => x.med)).toFixed(2)} | ${med(xs.map((x) => x.avg)).toFixed(2)} | ${list((x) => x.avg, 1)} | ${list((x) => x.lost, 0)} | ${list((x) => x.invol, 0)} | ${list((x) => x.gcs, 0)} | ${list((x) => x.steal, 0)} |`);
}
console.log(out.join('\n'));
EOF2
cat "$OUT/summary.md"
echo "done in $(( $(date +%s) - T0 )) s"
