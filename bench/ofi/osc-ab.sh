#!/usr/bin/env bash
# One-sided operations over libfabric's shm provider: railcomm's ofi rail
# (bench put,get,atomic --rails ofi), Open MPI's osc rdma over btl ofi on the
# same provider (bench/mpi/osc --create), and raw libfabric (ofi-bench rma),
# rounds interleaved. Open MPI: MPI_Win_create over malloc'd memory, so that
# osc rdma goes through the btl (with MPI_Win_allocate it maps a peer's window
# on this host and loads and stores it directly); pml ob1 needs a btl with a
# send path for the window's set-up (btl ofi in 4.1 has none: with
# `--mca btl self,ofi` ob1 crashed in MPI_Win_allocate), so vader is there
# for that and `osc_rdma_btls=ofi` keeps the one-sided traffic on ofi (a
# profile of the put loop shows mca_btl_ofi and libfabric, not vader).
#   bench/ofi/osc-ab.sh [rounds]   (default 3; nothing else should run beside it)
set -u
cd "$(dirname "$0")/../.."
rounds=${1:-3}
[ -x bench/mpi/osc ] || make -C bench/mpi osc >/dev/null
[ -x bench/ofi/ofi-bench ] || make -C bench/ofi >/dev/null
for r in $(seq 1 "$rounds"); do
  echo "## round $r railcomm"
  RAILCOMM_OFI_PROVIDERS=shm timeout 300 node dist/cli/main.js bench put,get,atomic --rails ofi --sizes 8,1048576 --quiet
  echo "## round $r Open MPI osc rdma, btl ofi (shm)"
  for t in put get fadd putbw; do
    timeout 300 mpirun --allow-run-as-root -np 2 --mca pml ob1 --mca btl self,vader,ofi --mca osc rdma \
      --mca osc_rdma_btls ofi --mca btl_ofi_provider_include shm -x FI_PROVIDER=shm \
      bench/mpi/osc "$t" --create --sizes 8,1048576 --label ompi-osc-rdma-btl-ofi-shm
  done
  echo "## round $r raw libfabric"
  timeout 300 bench/ofi/ofi-bench rma -p shm --sizes 8,1048576
done
