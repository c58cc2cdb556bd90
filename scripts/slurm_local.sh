#!/usr/bin/env bash
# slurm_local.sh start|stop DIR: a one-node Slurm cluster on localhost (Debian's slurm-wlm and
# munge) for the tests: munged, slurmctld and slurmd with their state, logs and slurm.conf under
# DIR, node "$(hostname -s)" with this machine's cores, one partition "debug". Prints the
# SLURM_CONF path to use on stdout. Needs root (slurmd runs jobs as their user). Exit 1 with one
# line on stderr when a piece is missing or a daemon does not come up within 30 s.
set -euo pipefail
cmd=${1:?usage: slurm_local.sh start|stop DIR}
dir=$(mkdir -p "${2:?usage: slurm_local.sh start|stop DIR}" && cd "$2" && pwd)
fail() { echo "slurm_local: $*" >&2; exit 1; }

stop() {
    for p in slurmd slurmctld munged; do
        [ -f "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
    done
    sleep 1
    for p in slurmd slurmctld munged; do
        [ -f "$dir/$p.pid" ] && kill -9 "$(cat "$dir/$p.pid")" 2>/dev/null || true
        rm -f "$dir/$p.pid"
    done
}
if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || fail "unknown command '$cmd' (start|stop)"
[ "$(id -u)" -eq 0 ] || fail "needs root (slurmd starts job steps as their user)"
for b in munged slurmctld slurmd srun sbatch; do
    command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || fail "$b is not installed (apt-get install slurm-wlm munge)"
done
export PATH=$PATH:/usr/sbin
node=$(hostname -s)
# 16 CPUs on any machine (config_overrides: slurmd takes the configured count): the tests run
# more ranks than a 2-core machine has, as mpirun --oversubscribe does
cpus=16
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))
mkdir -p "$dir/munge" "$dir/spool" "$dir/state" "$dir/log"
# munge: its own key, socket and pid under DIR, so a system munged is not disturbed
[ -f "$dir/munge/munge.key" ] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 711 "$dir/munge"; chmod 400 "$dir/munge/munge.key"
sock="$dir/munge/munge.socket"
munged --force -S "$sock" --key-file="$dir/munge/munge.key" --pid-file="$dir/munged.pid" \
       --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" 2>>"$dir/log/munged.log" ||
    fail "munged did not start (see $dir/log/munged.log)"
port=$(( 16800 + (RANDOM % 400) * 2 ))
cat > "$dir/slurm.conf" <<CONF
ClusterName=hifa4local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" -i 2>>"$dir/log/slurmctld.log" || fail "slurmctld did not start (see $dir/log/slurmctld.log)"
slurmd -f "$SLURM_CONF" 2>>"$dir/log/slurmd.log" || fail "slurmd did not start (see $dir/log/slurmd.log)"
for _ in $(seq 60); do
    if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then echo "$SLURM_CONF"; exit 0; fi
    sleep 0.5
done
stop
fail "the node did not become idle within 30 s (see $dir/log/)"
