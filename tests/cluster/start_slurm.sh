#!/usr/bin/env bash
# A real, single-node SLURM on this machine (Debian's slurmctld, slurmd and munge), for the
# cluster test (tests/test_slurm.py) and for trying `hydra/launcher=slurm` without a cluster.
# Needs root: installs the packages if they are missing, writes /etc/slurm/slurm.conf for this
# host, starts munged, slurmctld and slurmd, and waits until the node takes jobs.
#   sudo bash tests/cluster/start_slurm.sh        # then: sinfo; squeue
#   sudo bash tests/cluster/start_slurm.sh stop
set -euo pipefail

if [[ "${1:-}" == "stop" ]]; then
    pkill -x slurmd || true; pkill -x slurmctld || true; pkill -x munged || true
    exit 0
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurmctld slurmd slurm-client munge >/dev/null
fi

host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
# No cgroup plugins (a container may not let slurmd use them): processes are tracked through
# /proc. (Leave /etc/slurm/cgroup.conf absent: slurmd 22.05 knows no "disabled" plugin.)
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=fusebench
SlurmctldHost=${host}
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=30
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=${host} CPUs=${cpus} RealMemory=${mem_mb} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

if [[ ! -s /etc/munge/munge.key ]]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd

for _ in $(seq 60); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
        echo "slurm: node ${host} up ($(sinfo -h -o '%T %c CPUs'))"
        exit 0
    fi
    sleep 1
done
echo "slurm: the node did not come up; see /var/log/slurm/" >&2
tail -5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
