#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for tests/test_slurm.py.
#
#   bash tests/slurm/cluster.sh start STATE_DIR   # install (apt-get) if missing, then start
#   bash tests/slurm/cluster.sh stop STATE_DIR    # stop every daemon it started, by pid
#
# Debian's slurm-wlm 22.05 with slurmdbd on MariaDB (so sacct works, as the executor plugin
# expects) and munge. Every file lives under STATE_DIR: the configs (linked from
# /etc/slurm, where the job steps look; refused if a real SLURM config is there), spool and
# state folders, logs, the database and the pid files. The node offers one "gpu" generic resource backed by
# /dev/null, so GPU rules are scheduled with --gpus=1 wherever the machine has no GPU (the
# job then runs on the CPU). Needs root, as CI has.
set -euo pipefail

action=${1:?usage: cluster.sh start|stop STATE_DIR}
state=$(realpath -m "${2:?usage: cluster.sh start|stop STATE_DIR}")
node=$(hostname -s)
packages=(slurm-wlm slurmdbd mariadb-server munge)

log() { echo "cluster.sh: $*" >&2; }

stop_pid() {  # stop_pid NAME PIDFILE: TERM, then KILL after 20 s
    local name=$1 file=$2 pid
    [[ -s $file ]] || return 0
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        if kill -0 "$pid" 2>/dev/null; then log "$name ($pid) ignored TERM: KILL"; kill -9 "$pid"; fi
    fi
    rm -f "$file"
}

wait_for() {  # wait_for WHAT SECONDS COMMAND...
    local what=$1 seconds=$2
    shift 2
    for _ in $(seq $((seconds * 2))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
    log "$what did not come up within ${seconds} s; its log:"
    tail -n 30 "$state/log/"* "$state/mariadb/mariadb.log" >&2 || true
    return 1
}

if [[ $action == stop ]]; then
    stop_pid slurmd "$state/run/slurmd.pid"
    stop_pid slurmctld "$state/run/slurmctld.pid"
    stop_pid slurmdbd "$state/run/slurmdbd.pid"
    stop_pid mariadbd "$state/mariadb/mariadb.pid"
    stop_pid munged "$state/munge/munged.pid"
    for name in slurm.conf gres.conf slurmdbd.conf; do
        [[ $(readlink "/etc/slurm/$name" 2>/dev/null) == "$state/$name" ]] && rm -f "/etc/slurm/$name"
    done
    exit 0
fi
[[ $action == start ]] || { log "unknown action $action"; exit 2; }
[[ $(id -u) == 0 ]] || { log "needs root (it starts the SLURM daemons)"; exit 1; }

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$state"/{log,run,spool/ctld,spool/d,mysql}
cpus=$(nproc)
# Leave the operating system 1 GB; SLURM refuses a node that reports less than it claims.
memory_mb=$(($(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) - 1024))

# munge: the key the package made, on its usual socket (SLURM's clients do not all follow
# AuthInfo's socket= setting).
[[ -s /etc/munge/munge.key ]] || (umask 077 && dd if=/dev/urandom bs=1 count=1024 \
    of=/etc/munge/munge.key 2>/dev/null && chown munge: /etc/munge/munge.key)
mkdir -p /run/munge "$state/munge"
chown munge: /run/munge "$state/munge"
# A munged already serving the socket is used as it is (and left running at stop).
if ! (munge -n </dev/null | unmunge >/dev/null 2>&1); then
    runuser -u munge -- /usr/sbin/munged --pid-file="$state/munge/munged.pid" \
        --log-file="$state/munge/munged.log" --seed-file="$state/munge/munge.seed"
fi

# MariaDB for slurmdbd's accounting (what sacct reads).
if [[ ! -d $state/mysql/mysql ]]; then
    mariadb-install-db --user=mysql --datadir="$state/mysql" --skip-test-db \
        >"$state/log/mariadb-install.log" 2>&1
fi
mkdir -p "$state/mariadb"
chown -R mysql: "$state/mysql" "$state/mariadb"
/usr/sbin/mariadbd --user=mysql --datadir="$state/mysql" --socket="$state/mariadb/mysql.sock" \
    --pid-file="$state/mariadb/mariadb.pid" --skip-networking=0 --bind-address=127.0.0.1 \
    --port=3307 --log-error="$state/mariadb/mariadb.log" </dev/null >/dev/null 2>&1 &
wait_for MariaDB 60 mariadb --socket="$state/mariadb/mysql.sock" -e "SELECT 1"
mariadb --socket="$state/mariadb/mysql.sock" -e "
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'citeval';
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'citeval';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

cat >"$state/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3307
StorageUser=slurm
StoragePass=citeval
StorageLoc=slurm_acct_db
LogFile=$state/log/slurmdbd.log
PidFile=$state/run/slurmdbd.pid
EOF
chmod 600 "$state/slurmdbd.conf"

cat >"$state/slurm.conf" <<EOF
ClusterName=citeval
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$state/spool/ctld
SlurmdSpoolDir=$state/spool/d
SlurmctldPidFile=$state/run/slurmctld.pid
SlurmdPidFile=$state/run/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
SlurmctldPort=6917
SlurmdPort=6918
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6919
# Memory is enforced as on a real cluster: a job past its --mem is killed (OUT_OF_MEMORY).
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=1
JobAcctGatherParams=OverMemoryKill
# A job of the higher-tier partitions cancels one of "preemptible" that it needs room of.
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
JobCompType=jobcomp/none
# sacct shows each job's --comment (the executor plugin writes the rule's name there).
AccountingStoreFlags=job_comment
# Account for GPUs too, so sacct shows which jobs had one.
AccountingStorageTRES=gres/gpu
ReturnToService=2
# Keep finished jobs in squeue a while, and poll often: the tests wait on them.
MinJobAge=300
SchedulerParameters=sched_interval=2
# Three CPUs per real one (config_overrides lets the node claim them): the tests' jobs
# mostly sleep or wait on the scheduler, and their failure scenarios run beside the pipeline.
SlurmdParameters=config_overrides
NodeName=$node CPUs=$((cpus * 3)) RealMemory=$memory_mb Gres=gpu:1 State=UNKNOWN
PartitionName=cpu Nodes=$node Default=YES MaxTime=INFINITE State=UP PriorityTier=2
PartitionName=gpu Nodes=$node MaxTime=INFINITE State=UP PriorityTier=2
PartitionName=preemptible Nodes=$node MaxTime=INFINITE State=UP PriorityTier=1
EOF
sed -i "s/^DbdHost=localhost$/DbdHost=localhost\nDbdPort=6919/" "$state/slurmdbd.conf"
cat >"$state/gres.conf" <<EOF
AutoDetect=off
NodeName=$node Name=gpu Count=1 File=/dev/null
EOF

# The executor plugin's job step drops SLURM_CONF before it calls srun, so the config must
# also be where SLURM looks by default: link it there, never over a real cluster's.
for name in slurm.conf gres.conf slurmdbd.conf; do
    target=/etc/slurm/$name
    if [[ -e $target && ! -L $target ]]; then
        log "$target exists and is not ours: this machine has a SLURM set-up already"
        exit 1
    fi
    ln -sfn "$state/$name" "$target"
done
export SLURM_CONF=$state/slurm.conf
/usr/sbin/slurmdbd
wait_for slurmdbd 60 sacctmgr -n list cluster
sacctmgr -i add cluster citeval >/dev/null 2>&1 || true
/usr/sbin/slurmctld
wait_for slurmctld 60 scontrol ping
/usr/sbin/slurmd
wait_for "node $node" 60 bash -c "sinfo -h -N -o '%T' | grep -qE '^(idle|mixed|allocated)'"
log "SLURM is up: export SLURM_CONF=$state/slurm.conf"
