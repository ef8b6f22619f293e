# Sourced by the ofi A/B scripts (rget-ab.sh, small-ab.sh), with their
# arguments: sets here, root, rounds (first argument, default 3) and providers
# (the rest, default "tcp;ofi_rxm" shm), builds ofi-bench, and defines run
# (each benchmark under the shared lock, at most 300 s), mpi (1 where mpirun
# and bench/mpi/pingpong are here) and ompi_mtl_ofi (bench/mpi/pingpong's
# arguments, run over Open MPI's mtl ofi, pml cm, on libfabric's tcp provider).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
rounds=${1:-3}; shift || true
providers=("$@")
[ ${#providers[@]} -eq 0 ] && providers=("tcp;ofi_rxm" shm)
make -s -C "$here" ofi-bench || exit 1
run() { flock /tmp/railcomm-bench.lock timeout 300 "$@"; }
mpi=""
if command -v mpirun >/dev/null; then
  [ -x "$root/bench/mpi/pingpong" ] || make -s -C "$root/bench/mpi" pingpong 2>/dev/null
  [ -x "$root/bench/mpi/pingpong" ] && mpi=1
fi
ompi_mtl_ofi() {
  run mpirun --allow-run-as-root -np 2 --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp -x FI_PROVIDER=tcp \
    "$root/bench/mpi/pingpong" "$@" --label ompi-mtl-ofi-tcp
}
