#!/usr/bin/env bash
# A real single-host Slurm for tests: munge with a fresh key, slurmctld and
# slurmd as root, state and spool under DIR. Needs Debian slurm-wlm + munge.
#   slurm.sh up DIR     (prints the SLURM_CONF path on success)
#   slurm.sh down DIR
set -euo pipefail
cmd=$1 dir=$2
if [ "$cmd" = up ]; then
  mkdir -p "$dir"/{state,spool,log,munge,run}
  host=$(hostname)
  dd if=/dev/urandom bs=1 count=1024 of="$dir/munge/munge.key" 2>/dev/null
  chmod 400 "$dir/munge/munge.key"
  munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" -f
  cat > "$dir/slurm.conf" <<CONF
ClusterName=railcomm-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=${SLURM_TEST_PORT:-16817}
SlurmdPort=$(( ${SLURM_TEST_PORT:-16817} + 1 ))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SchedulerType=sched/builtin
ReturnToService=2
MpiDefault=none
NodeName=$host CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
  export SLURM_CONF="$dir/slurm.conf"
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  for i in $(seq 50); do
    if sinfo -h -o %T 2>/dev/null | grep -q idle; then echo "$SLURM_CONF"; exit 0; fi
    sleep 0.2
  done
  echo "slurm did not come up" >&2
  exit 1
else
  # Daemons take a moment to stop (slurmctld saves its state): wait, then kill.
  stop() {
    local f=$1
    [ -f "$f" ] || return 0
    local pid
    pid=$(cat "$f")
    pkill -P "$pid" 2>/dev/null || true   # slurmd's slurmstepd children
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  }
  stop "$dir/run/slurmd.pid"
  stop "$dir/run/slurmctld.pid"
  stop "$dir/munge/munged.pid"
  rm -rf "$dir"
fi
