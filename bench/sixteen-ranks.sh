#!/bin/bash
# Issue 18's figures on a host with 16 cores (the lent GPU machine: 16 cores,
# Open MPI 4.1.6 with mpicc, no Node): 16-rank allreduce (8 B, 64 KiB, 1 MiB)
# and barrier, railcomm processes and thread ranks, async and sync, against
# Open MPI's vader in the same call, rounds interleaved; the shared path's
# flat phases (every rank watches every flag) against leader phases at 16
# ranks (RAILCOMM_COLL_SHARED_FLAT=16 vs the default 8); async calls with
# V8's single-threaded GC (the thread-rank slowdown's suspect); and the 2-rank 8-byte
# half round trip, sendSync/recvSync and async, over shm and tbsm, against
# vader (averages over batch-timed round trips, as osu_latency). Writes
# $OUT/ (or sixteen-out/): env.txt, runs.jsonl (one line per job and round),
# summary.md (medians over rounds, ratios to vader), logs.
#
# Prepare on the development machine (from the repository root):
#   npm run build && npm run build:native
#   mkdir -p .gpu && xz -k -c "$(command -v node)" > .gpu/node.xz
# Run through the device tool, carrying what it needs (bench/mpi/*.c travel as tracked files):
#   carry: ["dist", "native/build", "native/sab/build", ".gpu"]   (Node 20 maps /dev/shm through the V8 shim in native/sab)
#   command: bash bench/sixteen-ranks.sh        timeout_s: 540
# Each collective job's line also has the median batch (the timed calls run in 20 batches, the
# clock read per batch) and the slowest rank's average, to tell stalls from a uniform slowdown;
# "bind" jobs pin each rank's thread to a core (RAILCOMM_BIND=core).
# Knobs: ONLY=regex (run the jobs whose label matches), N=16 (ranks), ROUNDS=2, SIZES=8,65536,1048576, LATENCY=1 (the 2-rank part).
# It takes about 3-5 minutes with the defaults (each job has its own time limit).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/sixteen-out}
mkdir -p "$OUT/logs"
N=${N:-16}
ROUNDS=${ROUNDS:-2}
SIZES=${SIZES:-8,65536,1048576}
T0=$(date +%s)
RUNS="$OUT/runs.jsonl"
: > "$RUNS"
note() { echo "$*" | tee -a "$OUT/notes.txt"; }

# Node: the carried copy, unless one is on PATH.
. bench/lib/carried-node.sh
{ uname -a; nproc; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA'; free -g | head -2; cat /proc/loadavg
  node --version; mpirun --version | head -1; } > "$OUT/env.txt" 2>&1
note "node $(node --version), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

# The C baselines, built here (mpicc of this machine's Open MPI).
make -C bench/mpi coll pingpong > "$OUT/logs/make.txt" 2>&1 || note "make bench/mpi failed: see logs/make.txt"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
VADER=(mpirun --allow-run-as-root -n "$N" --bind-to core --mca pml ob1 --mca btl self,vader)

# job LABEL LIMIT COMMAND...: runs it, keeps its JSON line (rank 0's, prefix stripped) in runs.jsonl tagged with the label.
job() {
  local label=$1 limit=$2; shift 2
  [[ "$label" =~ ${ONLY:-.} ]] || return 0
  local log="$OUT/logs/$(echo "$label" | tr ' /=' '___').r$round.txt"
  timeout --kill-after=10 "$limit" "$@" > "$log" 2>&1
  local rc=$? line
  line=$(sed -n 's/^\(\[0\] \)\?\({"benchmark".*\)$/\2/p' "$log" | head -1)
  if [ -n "$line" ]; then echo "{\"label\":\"$label\",\"round\":$round,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"result\":$line}" >> "$RUNS"
  else note "round $round: $label failed (exit $rc): $(tail -2 "$log" | tr '\n' ' ')"; fi
}
RC=(node dist/cli/main.js run -n "$N")
# The launcher's default node flags (core/params.ts DEFAULT_NODE_FLAGS), to add one to.
NODE_FLAGS=$(node -e "import('./dist/core/params.js').then((m) => console.log(m.DEFAULT_NODE_FLAGS.join(' ')))")
for round in $(seq 1 "$ROUNDS"); do
  for kind in allreduce barrier; do
    sizes=$SIZES; [ "$kind" = barrier ] && sizes=0
    job "$kind ompi-vader" 120 "${VADER[@]}" bench/mpi/coll "$kind" --sizes "$sizes" --json --label ompi-vader
    job "$kind processes" 120 "${RC[@]}" dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind processes sync" 120 env RAILCOMM_BENCH_SYNC=1 "${RC[@]}" dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind threads" 120 "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind threads sync" 120 env RAILCOMM_BENCH_SYNC=1 "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    # Flat phases at this rank count (every rank watches every flag), for the choice of RAILCOMM_COLL_SHARED_FLAT's default.
    job "$kind processes flat" 120 env RAILCOMM_COLL_SHARED_FLAT="$N" "${RC[@]}" dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind threads flat" 120 env RAILCOMM_COLL_SHARED_FLAT="$N" "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    # Why 16 thread ranks were 10x slower than 16 processes at 8 B: the async calls allocate (a promise
    # reaction per await), and the isolates of one process share V8's 4 platform threads, which parallel
    # scavenges wait for while 16 ranks spin on 16 cores. Single-threaded GC, and the sync calls (no
    # allocation at all, above), take that away.
    job "$kind threads stgc" 120 env RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded-gc" "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    # Each rank's thread pinned to a core of its own (RAILCOMM_BIND=core), as Open MPI's --bind-to core above.
    job "$kind processes bind" 120 env RAILCOMM_BIND=core "${RC[@]}" dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind processes sync bind" 120 env RAILCOMM_BIND=core RAILCOMM_BENCH_SYNC=1 "${RC[@]}" dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind threads bind" 120 env RAILCOMM_BIND=core "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind threads sync bind" 120 env RAILCOMM_BIND=core RAILCOMM_BENCH_SYNC=1 "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    # Thread ranks stall (median batch 6-8 us, average 37-71 at 8 B): V8's concurrent compiler
    # and GC threads off altogether, and a spin long enough that no wait ever blocks.
    job "$kind threads single" 120 env RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded" "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind threads sync single" 120 env RAILCOMM_BENCH_SYNC=1 RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded" "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind threads single bind" 120 env RAILCOMM_BIND=core RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded" "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind threads norecomp" 120 env RAILCOMM_NODE_FLAGS="$NODE_FLAGS --no-concurrent-recompilation" "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind processes single" 120 env RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded" "${RC[@]}" dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind processes single bind" 120 env RAILCOMM_BIND=core RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded" "${RC[@]}" dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind processes sync single bind" 120 env RAILCOMM_BIND=core RAILCOMM_BENCH_SYNC=1 RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded" "${RC[@]}" dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind threads sync spin" 120 env RAILCOMM_BENCH_SYNC=1 RAILCOMM_COLL_SPIN_US=100000000 "${RC[@]}" --threads dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind processes sync bind spin" 120 env RAILCOMM_BIND=core RAILCOMM_BENCH_SYNC=1 RAILCOMM_COLL_SPIN_US=100000000 "${RC[@]}" dist/bench/coll.js "$kind" "$sizes" 1000
    job "$kind processes stgc" 120 env RAILCOMM_NODE_FLAGS="$NODE_FLAGS --single-threaded-gc" "${RC[@]}" dist/bench/coll.js "$kind" "$sizes" 1000
  done
  if [ "${LATENCY:-1}" = 1 ]; then
    job "latency ompi-vader" 120 mpirun --allow-run-as-root -n 2 --bind-to core --mca pml ob1 --mca btl self,vader bench/mpi/pingpong latency --json --label ompi-vader --sizes 8
    job "latency shm" 180 node dist/cli/main.js bench latency --rails shm --sizes 8 --json
    job "latency shm sync" 180 node dist/cli/main.js bench latency --rails shm --sync --sizes 8 --json
    job "latency tbsm" 180 node dist/cli/main.js bench latency --threads --sizes 8 --json
    job "latency tbsm sync" 180 node dist/cli/main.js bench latency --threads --sync --sizes 8 --json
  fi
  note "round $round done at $(( $(date +%s) - T0 )) s"
done

# summary.md: per job and size, the median over rounds of usec (collectives: average per call over
# the ranks; latency: usec_batch_avg, the average over batch-timed round trips, and usec_batch, the
# median batch), and the median over rounds of the ratio to vader's figure of the same round.
node - "$RUNS" "$N" > "$OUT/summary.md" <<'EOF'
const [file, n] = process.argv.slice(2);
const runs = require('fs').readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const med = (xs) => { const s = xs.filter(Number.isFinite).sort((a, b) => a - b); return s.length === 0 ? NaN : s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const fig = (row, kind) => (kind === 'latency' ? row.usec_batch_avg : row.usec);
const by = {};
for (const r of runs) {
  const kind = r.label.split(' ')[0];
  const jobs = (by[kind] ??= {});
  const sizes = (jobs[r.label] ??= {});
  for (const row of r.result.results) (sizes[row.size] ??= []).push({ round: r.round, v: fig(row, kind), median: row.usec_batch, worst: row.usec_max_rank });
}
const fx = (x, d) => (Number.isFinite(x) ? x.toFixed(d) : '-');
const out = [`# Issue 18 on this host: ${n} ranks (latency: 2), medians over rounds`, ''];
for (const [kind, jobs] of Object.entries(by)) {
  out.push(`## ${kind}${kind === 'latency' ? ' (8 B half round trip, us: average over batch-timed round trips; median batch)' : ' (us per call, average over the ranks)'}`, '');
  out.push('| job | size | us | x vader (per-round ratio, median) | median batch us | average / median batch |' + (kind === 'latency' ? '' : ' slowest rank us |'), kind === 'latency' ? '|---|---|---|---|---|---|' : '|---|---|---|---|---|---|---|');
  const vader = jobs[`${kind} ompi-vader`] ?? {};
  for (const [label, sizes] of Object.entries(jobs)) for (const [size, xs] of Object.entries(sizes)) {
    const ratio = med(xs.map((x) => { const v = (vader[size] ?? []).find((y) => y.round === x.round); return v ? x.v / v.v : NaN; }));
    const cells = [label, size, med(xs.map((x) => x.v)).toFixed(2), Number.isFinite(ratio) ? ratio.toFixed(2) : '-'];
    // The median batch: a rank's median over its 20 batches (collectives: averaged over the ranks; Open MPI's has none).
    cells.push(fx(med(xs.map((x) => x.median)), 3), fx(med(xs.map((x) => x.v / x.median)), 2));
    if (kind !== 'latency') cells.push(fx(med(xs.map((x) => x.worst)), 2));
    out.push(`| ${cells.join(' | ')} |`);
  }
  out.push('');
}
console.log(out.join('\n'));
EOF
cat "$OUT/summary.md"
note "done in $(( $(date +%s) - T0 )) s"
