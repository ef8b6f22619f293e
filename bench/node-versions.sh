#!/usr/bin/env bash
# The version-specific fast paths on each supported Node (cached by
# scripts/node-dist.mjs): whether V8 still reads a shared word again in an
# optimized spin (bench/plain-read-probe.mjs), and the CPU time of an 8-byte
# hop over shm (bench/hop-cpu.mjs, public stage, CPU clock) with plain or
# Atomics shared-word reads (RAILCOMM_PLAIN_SYNC=1/0) and with or without
# railcomm run's V8 inlining flags (RAILCOMM_NODE_FLAGS). Needs npm run build.
#   bash bench/node-versions.sh [reps=3] [majors="20 22 24 26"]
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
majors=${2:-20 22 24 26}
for v in $majors; do
  node=$(node scripts/node-dist.mjs "$v" | cut -d' ' -f3)/bin/node
  "$node" bench/plain-read-probe.mjs | tail -1
done
for rep in $(seq "$reps"); do
  for v in $majors; do
    node=$(node scripts/node-dist.mjs "$v" | cut -d' ' -f3)/bin/node
    for plain in 0 1; do
      for flags in default none; do
        if [ "$flags" = none ]; then export RAILCOMM_NODE_FLAGS=""; else unset RAILCOMM_NODE_FLAGS; fi
        ns=$(HOP_CPU_STAGE=public HOP_CPU_PHASES=8 HOP_CPU_CLOCK=cpu RAILCOMM_PLAIN_SYNC=$plain "$node" dist/cli/main.js run -n 2 --rails shm,self bench/hop-cpu.mjs 2>&1 | grep -o '"public":[0-9.]*' | cut -d: -f2)
        echo "hop node=$v plain=$plain flags=$flags cpu-ns=$ns rep=$rep"
      done
    done
  done
done
