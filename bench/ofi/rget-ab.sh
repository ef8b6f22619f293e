#!/usr/bin/env bash
# The ofi rail's large messages with and without rendezvous by remote read
# (RAILCOMM_RDMA_RGET_MIN=0: CTS and DATA frames), beside the raw libfabric
# stream (bench/ofi/ofi-bench), rounds interleaved; per provider: 1 MiB and
# 4 MiB bandwidth and the 1 MiB half round trip; on tcp;ofi_rxm Open MPI's mtl
# ofi (pml cm, tcp) too, where mpirun is installed. Table: bench/ofi/rget-table.mjs.
#   bench/ofi/rget-ab.sh [rounds] [providers...]   (default: 3, "tcp;ofi_rxm" shm)
# SIZES (default 1048576,4194304) and BW_ITERS (default: the benchmark's) set
# the bandwidth runs; on sockets, some 500 MB/s here, use BW_ITERS=100:
#   SIZES=65536,1048576,4194304 BW_ITERS=100 bench/ofi/rget-ab.sh 3 sockets
source "$(dirname "${BASH_SOURCE[0]}")/ab-common.sh"
sizes=${SIZES:-1048576,4194304}
bw_iters=()
[ -n "${BW_ITERS:-}" ] && bw_iters=(--iters "$BW_ITERS")
for r in $(seq 1 "$rounds"); do
  for p in "${providers[@]}"; do
    for min in 65536 0; do
      echo "## round $r, $p, RAILCOMM_RDMA_RGET_MIN=$min"
      RAILCOMM_RDMA_RGET_MIN=$min RAILCOMM_OFI_PROVIDERS="$p" run node "$root/dist/cli/main.js" bench bw --rails ofi --sizes "$sizes" "${bw_iters[@]}" --quiet
      RAILCOMM_RDMA_RGET_MIN=$min RAILCOMM_OFI_PROVIDERS="$p" run node "$root/dist/cli/main.js" bench latency --rails ofi --sizes 1048576 --iters 200 --quiet
    done
    echo "## round $r, $p, raw libfabric"
    run "$here/ofi-bench" bw -p "$p" --sizes "$sizes"
    run "$here/ofi-bench" latency -p "$p" --sizes 1048576
    if [ "$p" = "tcp;ofi_rxm" ] && [ -n "$mpi" ]; then
      echo "## round $r, $p, Open MPI mtl ofi (pml cm) on tcp"
      for k in bw latency; do ompi_mtl_ofi "$k" --sizes 1048576,4194304; done
    fi
  done
done
