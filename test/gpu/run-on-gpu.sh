#!/bin/bash
# Issue 16's GPU checks, in one call on the lent GPU machine (one H100, CUDA 13,
# driver 580, g++ and make, no Node, no registry). Runs from the repository
# root of a tree built on the development machine, and writes everything to
# $OUT (or gpu-out/): env.txt, abi-check.txt, ptx.txt, info.txt, tests.tap,
# tests-nvcc-ptx.tap, bench/ (bench.md, bench.json, logs), summary.txt.
#
# Prepare on the development machine (from the repository root):
#   npm run build && npm run build:native      # dist/, native/build/ (the CUDA part included), native/sab/build/
#   mkdir -p .gpu && xz -k -c "$(command -v node)" > .gpu/node.xz
# Run through the device tool, carrying the ignored paths it needs:
#   carry: ["dist", "native/build", "native/sab/build", ".gpu"]
#   command: bash test/gpu/run-on-gpu.sh        timeout_s: 540
# It should finish in 2 to 5 minutes (each step has its own time limit; a failed
# step is recorded and the next one runs). BENCH_BEFORE=300 (s): the benchmark runs
# only if less has been spent; BENCH_LIMIT=150 (s): its own limit.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
T0=$(date +%s)
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
elapsed() { echo $(( $(date +%s) - T0 )); }
# step NAME LIMIT_SECONDS COMMAND...: run with a time limit, output to $OUT/NAME.txt, exit code noted.
step() {
  local name=$1 limit=$2; shift 2
  local t=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  note "$name: exit $rc in $(( $(date +%s) - t )) s (at $(elapsed) s)"
  return $rc
}

# 1. Node: unpack the carried copy (xz, else Python's lzma).
mkdir -p .gpu/bin
if [ ! -x .gpu/bin/node ]; then
  if command -v xz >/dev/null; then xz -d -c .gpu/node.xz > .gpu/bin/node
  else python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(".gpu/node.xz"), open(".gpu/bin/node","wb"))'; fi
  chmod +x .gpu/bin/node
fi
export PATH="$PWD/.gpu/bin:$PATH"
note "node $(node --version) unpacked at $(elapsed) s"

# 2. The machine.
{
  uname -a; nproc; free -g | head -2
  nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv 2>&1
  CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}; echo "CUDA_HOME=$CUDA_HOME"
  "$CUDA_HOME/bin/nvcc" --version 2>&1 | tail -2
  g++ --version | head -1
  ldconfig -p | grep libcuda.so
} > "$OUT/env.txt" 2>&1
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export CUDA_HOME

# 3. The addon's CUDA prototypes against this machine's cuda.h.
step abi-check 60 g++ -std=c++17 -fsyntax-only -I"$CUDA_HOME/include" -Inative/src native/cuda/abi-check.cc

# 4. The PTX: nvcc regenerates it from reduce.cu (the command of native/cuda/gen-ptx.sh, kept apart
#    from the tree), ptxas checks the shipped one for this GPU.
step ptx 60 bash -c "'$CUDA_HOME/bin/nvcc' -ptx -arch=compute_75 -O3 -o '$OUT/reduce-nvcc.ptx' native/cuda/reduce.cu &&
  '$CUDA_HOME/bin/ptxas' -arch=sm_90 -o /dev/null native/cuda/reduce.ptx && echo 'shipped PTX assembles for sm_90' &&
  diff <(grep -v '^//' native/cuda/reduce.ptx | sed 's/^\.version .*//') <(grep -v '^//' '$OUT/reduce-nvcc.ptx' | sed 's/^\.version .*//') > '$OUT/ptx-diff.txt' &&
  echo 'nvcc output equals the shipped PTX (but for .version)' || echo 'nvcc output differs from the shipped PTX: see ptx-diff.txt'"

# 5. railcomm info: the CUDA component as it reports itself.
step info 60 node dist/cli/main.js info

# 6. The GPU tests (test/gpu/device.test.mjs): kernels, 2 processes every size 0 B .. 1 GiB,
#    RAILCOMM_CUDA_IPC=0, 2 thread ranks, collectives on 2 and 4 ranks, a rank killed mid-transfer.
step tests 240 node --test --test-concurrency=1 --test-reporter=tap test/gpu/device.test.mjs
cp "$OUT/tests.txt" "$OUT/tests.tap"
note "$(grep -E '^# (tests|pass|fail|skipped)' "$OUT/tests.tap" | tr '\n' ' ')"
grep -E '^not ok' "$OUT/tests.tap" | tee -a "$SUMMARY"

# 7. The kernels once more, from nvcc's fresh PTX.
if [ -s "$OUT/reduce-nvcc.ptx" ]; then
  step tests-nvcc-ptx 60 env RAILCOMM_CUDA_PTX="$OUT/reduce-nvcc.ptx" node --test --test-reporter=tap --test-name-pattern='reduction kernels' test/gpu/device.test.mjs
fi

# 8. The benchmark (raw driver baseline and railcomm in the same call), if time is left.
if [ "$(elapsed)" -lt "${BENCH_BEFORE:-300}" ]; then
  step bench "${BENCH_LIMIT:-150}" node bench/gpu/run.mjs "$OUT/bench"
  [ -f "$OUT/bench/bench.md" ] && cat "$OUT/bench/bench.md" >> "$SUMMARY"
else
  note "bench skipped: $(elapsed) s already spent"
fi

# 9. Nothing left behind.
note "leftover railcomm segments in /dev/shm: $(ls /dev/shm | grep -c '^railcomm-')"
note "done in $(elapsed) s"
