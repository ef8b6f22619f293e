#!/usr/bin/env bash
# Wire-up time (issue 7): ms from a rank's start until it can exchange
# messages with every rank, for 2, 8, 32, 64 ranks as processes and as
# threads under railcomm run, and under Open MPI's mpirun when installed
# (rank 0's service at MASTER_ADDR, and the launcher's PMIx server).
# Three runs each; prints one JSON line per run.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
for n in ${SIZES:-2 8 32 64}; do
  for r in $(seq "$RUNS"); do
    node dist/cli/main.js bench wireup -n "$n" --json
    node dist/cli/main.js bench wireup -n "$n" --threads --json
    if command -v mpirun >/dev/null && [ "$n" -le 8 ]; then
      port=$((30000 + RANDOM % 20000))
      RAILCOMM_NO_PMIX=1 mpirun --allow-run-as-root --oversubscribe -n "$n" -x RAILCOMM_NO_PMIX -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$port node dist/bench/wireup.js 2>/dev/null | grep '^{'
      # Through the launcher's PMIx server (the PMIx module built): no MASTER_* needed.
      mpirun --allow-run-as-root --oversubscribe -n "$n" node dist/bench/wireup.js 2>/dev/null | grep '^{' | sed 's/}$/,"wireup":"pmix"}/'
    fi
  done
done
