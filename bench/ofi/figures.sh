#!/usr/bin/env bash
# The ofi rail's figures, side by side on this machine (2 processes on one host):
#  1. 8 B half round trip and 1 MiB bandwidth per provider: railcomm --rails ofi,
#     the raw libfabric floor (bench/ofi/ofi-bench), and Open MPI's mtl ofi on tcp;
#  2. one-sided put (completed at the target), get, fetch-and-add and 1 MiB put
#     bandwidth over ofi/shm (and tcp;ofi_rxm): railcomm, raw libfabric, and Open
#     MPI osc rdma over btl ofi on the shm provider.
# Every run holds /tmp/railcomm-bench.lock (flock); runs are short (medians are
# what to compare on a shared machine). Needs make, cc, libfabric's headers and
# (for Open MPI) mpirun, mpicc.
#   bench/ofi/figures.sh [providers...]     (default: "tcp;ofi_rxm" shm)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
lock=/tmp/railcomm-bench.lock
providers=("$@")
[ ${#providers[@]} -eq 0 ] && providers=("tcp;ofi_rxm" shm)
export IPATH_NO_BACKTRACE=1 HFI_NO_BACKTRACE=1
make -s -C "$here" ofi-bench || exit 1
[ -x "$root/bench/mpi/pingpong" ] || make -s -C "$root/bench/mpi" pingpong osc 2>/dev/null
run() { flock "$lock" timeout 300 "$@"; }
railcomm() { run node "$root/dist/cli/main.js" "$@"; }

for p in "${providers[@]}"; do
  echo "## $p: point-to-point (8 B half round trip, 1 MiB bandwidth)"
  RAILCOMM_OFI_PROVIDERS="$p" railcomm bench latency --rails ofi --sizes 8,1048576 --iters 2000 --quiet
  RAILCOMM_OFI_PROVIDERS="$p" railcomm bench bw --rails ofi --sizes 1048576 --quiet
  run "$here/ofi-bench" latency -p "$p" --sizes 8,1048576
  run "$here/ofi-bench" bw -p "$p" --sizes 1048576
  echo "## $p: one-sided (put completed at the target, get, fetch-and-add, 1 MiB put bandwidth)"
  RAILCOMM_OFI_PROVIDERS="$p" railcomm bench put,get,atomic --rails ofi --sizes 8,1048576 --quiet
  run "$here/ofi-bench" rma -p "$p"
done

if command -v mpirun >/dev/null && [ -x "$root/bench/mpi/pingpong" ]; then
  echo "## Open MPI mtl ofi (pml cm) on tcp"
  for k in latency bw; do
    run mpirun --allow-run-as-root -np 2 --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp -x FI_PROVIDER=tcp \
      "$root/bench/mpi/pingpong" "$k" --sizes 8,1048576 --label ompi-mtl-ofi-tcp
  done
fi
if command -v mpirun >/dev/null && [ -x "$root/bench/mpi/osc" ]; then
  echo "## Open MPI osc rdma over btl ofi (shm provider)"
  for t in put get fadd putbw; do
    # (osc-ab.sh says why vader, osc_rdma_btls and --create: with btl self,ofi alone ob1 crashed.)
    run mpirun --allow-run-as-root -np 2 --mca pml ob1 --mca btl self,vader,ofi --mca osc rdma --mca osc_rdma_btls ofi \
      --mca btl_ofi_provider_include shm -x FI_PROVIDER=shm "$root/bench/mpi/osc" "$t" --create --sizes 8,1048576 --label ompi-osc-rdma-btl-ofi-shm
  done
fi
