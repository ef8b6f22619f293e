# Sourced by the ofi A/B scripts (rget-ab.sh, small-ab.sh), with their
# arguments: sets here, root, rounds (first argument, default 3) and providers
# (the rest, default "tcp;ofi_rxm" shm), builds ofi-bench, and defines run
# (each benchmark under the shared lock, at most 300 s).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
rounds=${1:-3}; shift || true
providers=("$@")
[ ${#providers[@]} -eq 0 ] && providers=("tcp;ofi_rxm" shm)
make -s -C "$here" ofi-bench || exit 1
run() { flock /tmp/railcomm-bench.lock timeout 300 "$@"; }
