#!/usr/bin/env bash
# A throwaway, real Slurm cluster (2 nodes on this one host) plus sshd on
# 127.0.0.1:2222, for nemotron's end-to-end tests. Must run as root.
#
#   scripts/slurm-cluster.sh up      install what is missing, start what is not running, wait until healthy
#   scripts/slurm-cluster.sh wait    wait (up to NEMOTRON_SLURM_TIMEOUT s) until healthy, start nothing
#   scripts/slurm-cluster.sh status  print a summary; exit 1 when something is not healthy
#   scripts/slurm-cluster.sh down [--purge]   stop the daemons this script started (pid files);
#                                              --purge also removes the state dir and the configs
#
# Environment: NEMOTRON_SLURM_STATE (default /var/tmp/nemotron-slurm),
#              NEMOTRON_SLURM_TIMEOUT (default 90 s per wait),
#              NEMOTRON_CONTAINERS=off (leave container support as it is: no set-up),
#              and scripts/containers.sh's settings (where enroot and pyxis come from,
#              NEMOTRON_CONTAINER_IMAGE).
# See docs/dev/slurm-cluster.md for what is configured and why, docs/dev/containers.md
# for the containers.
set -euo pipefail

STATE="${NEMOTRON_SLURM_STATE:-/var/tmp/nemotron-slurm}"
TIMEOUT="${NEMOTRON_SLURM_TIMEOUT:-90}"
CLUSTER_NAME="nemotron"
ACCOUNT="testacct"
NODES=(n1 n2)
SLURMD_PORT_FIRST=17001
CTLD_PORT=16817
DBD_PORT=16819
DB_PORT=13306
SSH_PORT=2222
FAKE_GPUS_PER_NODE=8

SLURM_ETC=/etc/slurm
SLURM_CONF="$SLURM_ETC/slurm.conf"
DBD_CONF="$SLURM_ETC/slurmdbd.conf"
GRES_CONF="$SLURM_ETC/gres.conf"
MANAGED_MARK="# Managed by nemotron scripts/slurm-cluster.sh"
MUNGE_KEY=/etc/munge/munge.key
MUNGE_SOCKET=/run/munge/munge.socket.2

LOG="$STATE/log"
RUN="$STATE/run"
DB_DIR="$STATE/mysql"
DB_CNF="$DB_DIR/my.cnf"
DB_PASS_FILE="$DB_DIR/slurmdbd.pass"
SSH_DIR="$STATE/ssh"
SSH_KEY="$SSH_DIR/id_ed25519"
SSHD_CONFIG="$SSH_DIR/sshd_config"
ROOT_SSH=/root/.ssh

HOST="$(hostname -s)"

say() { echo "[slurm-cluster] $*"; }
fail() {
  # fail MESSAGE [LOGFILE...]: print the message and the tail of each log, exit 1.
  local msg="$1"; shift
  echo "[slurm-cluster] ERROR: $msg" >&2
  local f
  for f in "$@"; do
    if [ -s "$f" ]; then
      echo "----- last lines of $f -----" >&2
      tail -n 25 "$f" >&2
    fi
  done
  exit 1
}

# pid_of NAME: print the pid recorded in $RUN/NAME.pid if that process is alive and is
# still the program we started (guards against a recycled pid).
pid_of() {
  local f="$RUN/$1.pid" pid pat
  [ -s "$f" ] || return 1
  pid="$(tr -dc '0-9' <"$f")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  case "$1" in
    mysqld) pat='mariadbd|mysqld' ;;
    slurmd-*) pat='slurmd' ;;
    *) pat="$1" ;;
  esac
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qE "$pat" || return 1
  echo "$pid"
}

# wait_for SECONDS DESCRIPTION COMMAND...: retry COMMAND every 0.3 s until it succeeds.
wait_for() {
  local secs="$1" what="$2"; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      return 1
    fi
    sleep 0.3
  done
}

# start_bg LOGFILE COMMAND...: start a daemon detached from our session, stdin/stdout closed,
# so that callers capturing our output (CI, pytest) never wait on it.
start_bg() {
  local logfile="$1"; shift
  setsid "$@" </dev/null >>"$logfile" 2>&1 &
}

# The daemons bind to the address the host name resolves to: make sure it is loopback.
check_hostname() {
  local addr
  addr="$(getent hosts "$HOST" | awk '{print $1; exit}')"
  if [ -z "$addr" ]; then
    say "host name $HOST does not resolve: adding '127.0.1.1 $HOST' to /etc/hosts"
    echo "127.0.1.1 $HOST" >>/etc/hosts
  elif [[ "$addr" != 127.* ]]; then
    say "WARNING: $HOST resolves to $addr, not loopback: slurmctld and slurmdbd will listen there"
  fi
}

need_root() {
  [ "$(id -u)" = 0 ] || fail "must run as root (it installs packages, writes $SLURM_ETC and starts daemons)"
}

# --------------------------------------------------------------------------- packages
ensure_packages() {
  local missing=() pair cmd pkg
  for pair in slurmctld:slurmctld slurmd:slurmd slurmdbd:slurmdbd sbatch:slurm-client \
              munged:munge mysqld_safe:mariadb-server mysql:mariadb-client \
              sshd:openssh-server ssh:openssh-client; do
    cmd="${pair%%:*}"; pkg="${pair#*:}"
    if ! command -v "$cmd" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$cmd" ]; then
      missing+=("$pkg")
    fi
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]} (apt-get update first)"
  # Keep package scripts from starting their own daemons: we start ours below.
  local own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  local rc=0
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends "${missing[@]}"; } </dev/null >"$STATE/apt.log" 2>&1 || rc=$?
  [ "$own_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ "$rc" = 0 ] || fail "apt-get install ${missing[*]} failed (exit $rc)" "$STATE/apt.log"
  say "packages installed"
}

# --------------------------------------------------------------------------- munge
munge_ok() { munge -n -S "$MUNGE_SOCKET" </dev/null 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1; }

ensure_munge() {
  if [ ! -s "$MUNGE_KEY" ]; then
    say "munge: creating $MUNGE_KEY (1024 random bytes)"
    install -d -o munge -g munge -m 0700 /etc/munge
    dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
  fi
  chown munge:munge "$MUNGE_KEY"
  chmod 0400 "$MUNGE_KEY"
  if munge_ok; then
    return 0
  fi
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 "$STATE/munge"
  rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
  say "munge: starting munged"
  start_bg "$LOG/munged.out" runuser -u munge -- /usr/sbin/munged \
    --key-file="$MUNGE_KEY" --socket="$MUNGE_SOCKET" \
    --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/munge/munged.log" \
    --seed-file="$STATE/munge/munged.seed"
  wait_for 15 munged munge_ok \
    || fail "munged did not start" "$STATE/munge/munged.log" "$LOG/munged.out"
  # The pid file lives in a munge-owned dir; link it into $RUN for status/down.
  ln -sfn "$STATE/munge/munged.pid" "$RUN/munged.pid"
}

# --------------------------------------------------------------------------- mariadb
db_sql() { mysql --defaults-file="$DB_CNF" -u root --batch --skip-column-names "$@" </dev/null; }
db_ok() { mysqladmin --defaults-file="$DB_CNF" -u root --connect-timeout=2 ping >/dev/null 2>&1; }

ensure_mysql() {
  install -d -m 0755 "$DB_DIR"
  if [ ! -s "$DB_PASS_FILE" ]; then
    (umask 077; head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$DB_PASS_FILE")
  fi
  cat >"$DB_CNF" <<EOF
$MANAGED_MARK
[mysqld]
user=mysql
datadir=$DB_DIR/data
socket=$DB_DIR/run/mysqld.sock
pid-file=$DB_DIR/run/mysqld.pid
port=$DB_PORT
bind-address=127.0.0.1
skip-name-resolve
log-error=$LOG/mysqld.log
innodb_buffer_pool_size=64M
innodb_log_file_size=16M
performance_schema=OFF
[mysqld_safe]
log-error=$LOG/mysqld.log
pid-file=$DB_DIR/run/mysqld.pid
[client]
socket=$DB_DIR/run/mysqld.sock
EOF
  if pid_of mysqld >/dev/null && db_ok; then
    return 0
  fi
  if [ ! -d "$DB_DIR/data/mysql" ]; then
    say "mariadb: initialising datadir $DB_DIR/data"
    install -d -o mysql -g mysql -m 0750 "$DB_DIR/data"
    mysql_install_db --defaults-file="$DB_CNF" --user=mysql --skip-test-db \
      --auth-root-authentication-method=socket >"$LOG/mysql_install_db.log" 2>&1 \
      || fail "mysql_install_db failed" "$LOG/mysql_install_db.log"
  fi
  chown mysql:mysql "$DB_DIR/data"
  # mysqld runs as the mysql user: its socket, pid file and log must be writable by it.
  install -d -o mysql -g mysql -m 0755 "$DB_DIR/run"
  touch "$LOG/mysqld.log"
  chown mysql:mysql "$LOG/mysqld.log"
  ln -sfn "$DB_DIR/run/mysqld.pid" "$RUN/mysqld.pid"
  say "mariadb: starting mysqld_safe on 127.0.0.1:$DB_PORT"
  start_bg "$LOG/mysqld_safe.out" mysqld_safe --defaults-file="$DB_CNF"
  echo $! >"$RUN/mysqld_safe.pid"
  wait_for 60 mariadb db_ok || fail "mariadb did not come up" "$LOG/mysqld.log" "$LOG/mysqld_safe.out"
  local pass
  pass="$(cat "$DB_PASS_FILE")"
  db_sql -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
    ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
    FLUSH PRIVILEGES;" || fail "could not create the slurm_acct_db database/user" "$LOG/mysqld.log"
}

# --------------------------------------------------------------------------- configs
CONF_CHANGED=0
DBD_CONF_CHANGED=0

# write_if_changed FILE MODE CONTENT: write only when the content differs; return 0 if written.
write_if_changed() {
  local file="$1" mode="$2" content="$3"
  if [ -f "$file" ] && [ "$(cat "$file")" = "$content" ]; then
    return 1
  fi
  if [ -f "$file" ] && ! grep -qF "$MANAGED_MARK" "$file"; then
    local backup
    backup="$file.orig-$(date +%Y%m%d%H%M%S)"
    say "keeping the existing $file (not ours) as $backup"
    mv "$file" "$backup"
  fi
  (umask 077; printf '%s\n' "$content" >"$file.tmp")
  chmod "$mode" "$file.tmp"
  mv "$file.tmp" "$file"
  return 0
}

write_configs() {
  install -d -m 0755 "$SLURM_ETC"
  local cpus mem_mb last_port
  # CPUs each node offers Slurm: 4 per core by default (NEMOTRON_SLURM_CPUS_PER_NODE). The
  # test jobs mostly wait (on Slurm, a requeue, a sleep between steps), and two streams of
  # cluster tests run at once (scripts/test.sh): with one slot per core, one test's five
  # resilience jobs would hold the other stream's jobs in the queue for a minute.
  # config_overrides makes slurmd take these numbers instead of draining the node.
  cpus="${NEMOTRON_SLURM_CPUS_PER_NODE:-$(( $(nproc) * 4 ))}"
  [[ "$cpus" =~ ^[1-9][0-9]{0,3}$ ]] || fail "NEMOTRON_SLURM_CPUS_PER_NODE must be a whole number from 1 to 9999, not '$cpus'"
  # slurmd drains a node whose RealMemory exceeds what it finds: claim 80 % of it.
  mem_mb="$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.8}' /proc/meminfo)"
  last_port=$((SLURMD_PORT_FIRST + ${#NODES[@]} - 1))
  local nodelist="n[1-${#NODES[@]}]"
  local slurm_conf
  slurm_conf="$MANAGED_MARK
# Throwaway local test cluster: ${#NODES[@]} nodes on host $HOST, state in $STATE.
ClusterName=$CLUSTER_NAME
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=5,bf_interval=5
# 1 (what production sites use): a node the admin (or a test) sets DOWN stays down until
# resumed; one that stopped answering returns when its slurmd registers again. 2 would put
# a downed node back in service at its next ping, milliseconds later.
ReturnToService=1
JobRequeue=1
KillWait=5
# A requeued job may start again only after its credential lifetime (120 s by default):
# 10 s keeps the resilience tests (which requeue on purpose) from waiting two minutes each time.
AuthInfo=cred_expire=10
MinJobAge=300
InactiveLimit=0
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd/%n
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStorageEnforce=associations
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
# Count-only GPUs (no devices) so scripts with --gpus-per-node are accepted as on a real cluster.
GresTypes=gpu
NodeName=$nodelist NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$SLURMD_PORT_FIRST-$last_port CPUs=$cpus RealMemory=$mem_mb Gres=gpu:$FAKE_GPUS_PER_NODE State=UNKNOWN
PartitionName=debug Nodes=$nodelist Default=YES MaxTime=INFINITE State=UP
PartitionName=batch Nodes=$nodelist Default=NO MaxTime=INFINITE State=UP"
  write_if_changed "$SLURM_CONF" 0644 "$slurm_conf" && CONF_CHANGED=1
  # gres/gpu needs device files; empty regular files stand in for them.
  install -d -m 0755 "$STATE/fakegpu"
  local i
  for ((i = 0; i < FAKE_GPUS_PER_NODE; i++)); do touch "$STATE/fakegpu/nvidia$i"; done
  write_if_changed "$GRES_CONF" 0644 "$MANAGED_MARK
NodeName=$nodelist Name=gpu File=$STATE/fakegpu/nvidia[0-$((FAKE_GPUS_PER_NODE - 1))]" && CONF_CHANGED=1

  local dbd_conf
  dbd_conf="$MANAGED_MARK
AuthType=auth/munge
CommunicationParameters=NoInAddrAny
DbdHost=$HOST
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
LogFile=$LOG/slurmdbd.log
PidFile=$RUN/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$(cat "$DB_PASS_FILE")
StorageLoc=slurm_acct_db"
  write_if_changed "$DBD_CONF" 0600 "$dbd_conf" && DBD_CONF_CHANGED=1
  chown root:root "$DBD_CONF"
  chmod 0600 "$DBD_CONF"
  return 0
}

# --------------------------------------------------------------------------- slurm daemons
# stop_pid NAME: stop the daemon recorded in $RUN/NAME.pid (TERM, then KILL after 15 s).
stop_pid() {
  local name="$1" pid
  pid="$(pid_of "$name")" || { rm -f "$RUN/$name.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 15))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  rm -f "$RUN/$name.pid"
  say "stopped $name (pid $pid)"
}

dbd_ok() { sacctmgr -n -P show cluster format=cluster >/dev/null 2>&1; }

ensure_slurmdbd() {
  # keep it when it runs, answers and its config did not change; otherwise restart it
  if [ "$DBD_CONF_CHANGED" = 0 ] && pid_of slurmdbd >/dev/null && dbd_ok; then
    return 0
  fi
  stop_pid slurmdbd
  say "slurmdbd: starting on 127.0.0.1:$DBD_PORT"
  start_bg "$LOG/slurmdbd.out" slurmdbd
  wait_for 60 slurmdbd dbd_ok || fail "slurmdbd did not answer sacctmgr" "$LOG/slurmdbd.log" "$LOG/slurmdbd.out"
}

ensure_accounting() {
  local clusters accounts users
  clusters="$(sacctmgr -n -P show cluster format=cluster 2>/dev/null || true)"
  if ! grep -qx "$CLUSTER_NAME" <<<"$clusters"; then
    say "accounting: adding cluster $CLUSTER_NAME"
    sacctmgr -i add cluster "$CLUSTER_NAME" >/dev/null || fail "sacctmgr add cluster failed" "$LOG/slurmdbd.log"
  fi
  accounts="$(sacctmgr -n -P show account format=account 2>/dev/null || true)"
  if ! grep -qx "$ACCOUNT" <<<"$accounts"; then
    say "accounting: adding account $ACCOUNT"
    sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER_NAME" >/dev/null \
      || fail "sacctmgr add account failed" "$LOG/slurmdbd.log"
  fi
  users="$(sacctmgr -n -P show assoc where user=root account="$ACCOUNT" format=user 2>/dev/null || true)"
  if ! grep -qx root <<<"$users"; then
    say "accounting: adding user root to $ACCOUNT"
    sacctmgr -i add user root Account="$ACCOUNT" DefaultAccount="$ACCOUNT" >/dev/null \
      || fail "sacctmgr add user failed" "$LOG/slurmdbd.log"
  fi
}

ctld_ok() { scontrol ping 2>/dev/null | grep -q 'is UP'; }

ensure_slurmctld() {
  # keep it when it runs, answers and its config did not change; otherwise restart it
  if [ "$CONF_CHANGED" = 0 ] && pid_of slurmctld >/dev/null && ctld_ok; then
    return 0
  fi
  stop_pid slurmctld
  install -d -m 0755 "$STATE/slurmctld"
  say "slurmctld: starting on 127.0.0.1:$CTLD_PORT"
  start_bg "$LOG/slurmctld.out" slurmctld
  wait_for 60 slurmctld ctld_ok || fail "slurmctld did not answer scontrol ping" "$LOG/slurmctld.log" "$LOG/slurmctld.out"
}

ensure_slurmds() {
  local n
  for n in "${NODES[@]}"; do
    if [ "$CONF_CHANGED" = 1 ]; then
      stop_pid "slurmd-$n"
    fi
    if pid_of "slurmd-$n" >/dev/null; then
      continue
    fi
    install -d -m 0755 "$STATE/slurmd/$n"
    say "slurmd: starting node $n"
    start_bg "$LOG/slurmd-$n.out" slurmd -N "$n"
  done
}

# nodes_ready: every node is idle/mixed/allocated (not down, drained or unknown).
nodes_ready() {
  local out n st
  out="$(sinfo -h -N -o '%N %t' 2>/dev/null)" || return 1
  for n in "${NODES[@]}"; do
    st="$(awk -v n="$n" '$1 == n {print $2; exit}' <<<"$out")"
    case "$st" in
      idle|mix|alloc|comp) ;;
      *) return 1 ;;
    esac
  done
}

sacct_ok() { sacct -n -X -a -S now-1minutes >/dev/null 2>&1; }

wait_slurm_ready() {
  LAST_RESUME=0
  wait_for "$TIMEOUT" nodes wait_nodes_ready_or_resume \
    || fail "nodes did not become idle within ${TIMEOUT}s: $(sinfo -h -N -o '%N=%t' 2>&1 | sort -u | tr '\n' ' ')
$(sinfo -h -R -o '%N: %E' 2>&1)" "$LOG/slurmd-${NODES[0]}.log" "$LOG/slurmctld.log"
  wait_for "$TIMEOUT" sacct sacct_ok || fail "sacct does not work" "$LOG/slurmdbd.log" "$LOG/slurmctld.log"
}

# A node left drained/down by an earlier run (reboot, config change) is resumed, at most every 5 s.
LAST_RESUME=0
wait_nodes_ready_or_resume() {
  nodes_ready && return 0
  [ $((SECONDS - LAST_RESUME)) -ge 5 ] || return 1
  LAST_RESUME=$SECONDS
  local bad
  bad="$(sinfo -h -N -t drain,down,fail -o '%N' 2>/dev/null | sort -u | paste -sd, -)"
  if [ -n "$bad" ]; then
    scontrol update NodeName="$bad" State=RESUME >/dev/null 2>&1 || true
  fi
  return 1
}

# --------------------------------------------------------------------------- sshd
ssh_check() {
  timeout 20 ssh -i "$SSH_KEY" -p "$SSH_PORT" -o BatchMode=yes -o StrictHostKeyChecking=accept-new \
    -o ConnectTimeout=5 -o IdentitiesOnly=yes root@127.0.0.1 sinfo </dev/null
}

ensure_sshd() {
  install -d -m 0700 "$SSH_DIR"
  install -d -m 0700 "$ROOT_SSH"
  [ -f "$SSH_DIR/ssh_host_ed25519_key" ] \
    || ssh-keygen -q -t ed25519 -N '' -C "nemotron-test-sshd-hostkey" -f "$SSH_DIR/ssh_host_ed25519_key"
  [ -f "$SSH_KEY" ] || ssh-keygen -q -t ed25519 -N '' -C "nemotron-test-client" -f "$SSH_KEY"
  local pub
  pub="$(cat "$SSH_KEY.pub")"
  touch "$ROOT_SSH/authorized_keys"
  chmod 0600 "$ROOT_SSH/authorized_keys"
  grep -qxF "$pub" "$ROOT_SSH/authorized_keys" || echo "$pub" >>"$ROOT_SSH/authorized_keys"
  # known_hosts must match the current host key (a purged state regenerates it).
  local known="[127.0.0.1]:$SSH_PORT $(cut -d' ' -f1,2 "$SSH_DIR/ssh_host_ed25519_key.pub")"
  touch "$ROOT_SSH/known_hosts"
  if ! grep -qxF "$known" "$ROOT_SSH/known_hosts"; then
    ssh-keygen -q -R "[127.0.0.1]:$SSH_PORT" -f "$ROOT_SSH/known_hosts" >/dev/null 2>&1 || true
    echo "$known" >>"$ROOT_SSH/known_hosts"
    rm -f "$ROOT_SSH/known_hosts.old"
  fi
  local sftp=/usr/lib/openssh/sftp-server
  write_if_changed "$SSHD_CONFIG" 0600 "$MANAGED_MARK
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $SSH_DIR/ssh_host_ed25519_key
PidFile $RUN/sshd.pid
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding yes
AuthorizedKeysFile .ssh/authorized_keys
UsePAM no
PrintMotd no
MaxStartups 64:30:128
MaxSessions 64
Subsystem sftp $sftp" && stop_pid sshd
  if pid_of sshd >/dev/null; then
    return 0
  fi
  install -d -m 0755 /run/sshd
  /usr/sbin/sshd -t -f "$SSHD_CONFIG" 2>"$LOG/sshd.out" || fail "sshd_config is invalid" "$LOG/sshd.out"
  say "sshd: starting on 127.0.0.1:$SSH_PORT"
  start_bg "$LOG/sshd.out" /usr/sbin/sshd -f "$SSHD_CONFIG" -E "$LOG/sshd.log"
  wait_for 15 sshd pid_of sshd || fail "sshd did not start" "$LOG/sshd.log" "$LOG/sshd.out"
}

# --------------------------------------------------------------------------- commands
# Containers: pyxis + enroot and the test image, by scripts/containers.sh (idempotent;
# about 2 s when everything is there). Not fatal: the cluster works without containers;
# `containers.sh status` then says why (the container tests skip with that, or fail under
# CI=true, and scripts/test.sh repeats it in its last line).
CONTAINER_IMAGE_FILE="$STATE/container-image"
ensure_containers() {
  if [ "${NEMOTRON_CONTAINERS:-on}" = off ]; then
    # leaves what an earlier `up` set up (and its record) as it is
    say "containers: not set up (NEMOTRON_CONTAINERS=off)"; return 0
  fi
  local image="${NEMOTRON_CONTAINER_IMAGE:-/var/tmp/pyxis-enroot/images/bookworm-python3.sqsh}" why
  if NEMOTRON_CONTAINER_IMAGE="$image" bash "$(dirname "$0")/containers.sh" up \
      >"$LOG/containers.log" 2>&1 </dev/null; then
    echo "$image" >"$CONTAINER_IMAGE_FILE.tmp"
    mv -f "$CONTAINER_IMAGE_FILE.tmp" "$CONTAINER_IMAGE_FILE"
    say "containers: $(grep -o 'ready: .*' "$LOG/containers.log" | tail -n 1)"
    return 0
  fi
  why="$(sed -n 's/^\[containers\] error: //p' "$LOG/containers.log" | tail -n 1)"
  why="${why:-scripts/containers.sh up failed} (log: $LOG/containers.log)"
  rm -f "$CONTAINER_IMAGE_FILE"
  say "containers: NOT set up: $why"
}

make_dirs() {
  install -d -m 0755 "$STATE" "$LOG" "$RUN"
}

cmd_up() {
  need_root
  local t0=$SECONDS
  make_dirs
  ensure_packages
  check_hostname
  ensure_munge
  ensure_mysql
  write_configs
  ensure_slurmdbd
  ensure_accounting
  ensure_slurmctld
  ensure_slurmds
  wait_slurm_ready
  ensure_sshd
  ssh_check >/dev/null 2>"$LOG/ssh-check.err" \
    || fail "ssh -p $SSH_PORT root@127.0.0.1 sinfo failed" "$LOG/ssh-check.err" "$LOG/sshd.log"
  ensure_containers
  say "up: cluster '$CLUSTER_NAME' ready (nodes ${NODES[*]}, partitions debug/batch, account $ACCOUNT, ssh 127.0.0.1:$SSH_PORT) in $((SECONDS - t0))s"
}

cmd_wait() {
  wait_for 15 slurmctld ctld_ok || fail "slurmctld is not answering (run: scripts/slurm-cluster.sh up)" "$LOG/slurmctld.log"
  wait_slurm_ready
  wait_for "$TIMEOUT" ssh ssh_check || fail "ssh to 127.0.0.1:$SSH_PORT does not work" "$LOG/sshd.log"
  say "ready"
}

cmd_status() {
  local bad=0 name pid
  echo "state dir : $STATE"
  echo "configs   : $SLURM_CONF $DBD_CONF $GRES_CONF"
  for name in mysqld slurmdbd slurmctld "${NODES[@]/#/slurmd-}" sshd; do
    if pid="$(pid_of "$name")"; then
      printf '%-10s: running (pid %s)\n' "$name" "$pid"
    else
      printf '%-10s: NOT RUNNING\n' "$name"; bad=1
    fi
  done
  if munge_ok; then echo "munge     : ok"; else echo "munge     : NOT WORKING"; bad=1; fi
  if nodes_ready; then
    echo "nodes     : $(sinfo -h -N -o '%N=%t' | sort -u | paste -sd' ')"
  else
    echo "nodes     : NOT READY $(sinfo -h -N -o '%N=%t' 2>&1 | sort -u | paste -sd' ')"; bad=1
  fi
  echo "partitions: $(sinfo -h -o '%P' 2>/dev/null | paste -sd' ')"
  if sacct_ok; then echo "sacct     : ok (account $ACCOUNT)"; else echo "sacct     : NOT WORKING"; bad=1; fi
  if ssh_check >/dev/null 2>&1; then
    echo "ssh       : ok (ssh -i $SSH_KEY -p $SSH_PORT root@127.0.0.1)"
  else
    echo "ssh       : NOT WORKING (key $SSH_KEY, port $SSH_PORT)"; bad=1
  fi
  echo "logs      : $LOG"
  if [ "$bad" = 1 ]; then
    echo "status: NOT HEALTHY (run: scripts/slurm-cluster.sh up)"
    return 1
  fi
  echo "status: healthy"
}

cmd_down() {
  need_root
  local purge=0
  [ "${1:-}" = "--purge" ] && purge=1
  local n
  stop_pid sshd
  for n in "${NODES[@]}"; do stop_pid "slurmd-$n"; done
  stop_pid slurmctld
  stop_pid slurmdbd
  stop_pid mysqld
  stop_pid mysqld_safe
  stop_pid munged
  if [ "$purge" = 1 ]; then
    local f
    for f in "$SLURM_CONF" "$DBD_CONF" "$GRES_CONF"; do
      if [ -f "$f" ] && grep -qF "$MANAGED_MARK" "$f"; then rm -f "$f"; fi
    done
    if [ -f "$SSH_KEY.pub" ] && [ -f "$ROOT_SSH/authorized_keys" ]; then
      grep -vxF "$(cat "$SSH_KEY.pub")" "$ROOT_SSH/authorized_keys" >"$ROOT_SSH/authorized_keys.tmp" || true
      mv "$ROOT_SSH/authorized_keys.tmp" "$ROOT_SSH/authorized_keys"
      ssh-keygen -q -R "[127.0.0.1]:$SSH_PORT" -f "$ROOT_SSH/known_hosts" >/dev/null 2>&1 || true
    fi
    case "$STATE" in
      /|/var|/var/tmp|/tmp|"$HOME") fail "refusing to remove state dir $STATE" ;;
    esac
    rm -rf "$STATE"
    say "purged $STATE and the managed configs"
  fi
  say "down"
}

case "${1:-}" in
  up) cmd_up ;;
  wait) cmd_wait ;;
  status) cmd_status ;;
  down) shift; cmd_down "$@" ;;
  *) echo "usage: $0 up | wait | status | down [--purge]" >&2; exit 2 ;;
esac
