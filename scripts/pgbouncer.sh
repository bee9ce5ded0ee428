#!/usr/bin/env bash
# Runs Debian's PgBouncer in transaction pool mode in front of a local Postgres, for testing the service through a
# transaction pooler: `scripts/pgbouncer.sh start <dir> [port] [server-port] [user]` writes pgbouncer.ini and the user
# list into <dir> and starts the pooler as a daemon on 127.0.0.1:<port>, in front of the Postgres on
# 127.0.0.1:<server-port> (trust authentication, as the local server's); `scripts/pgbouncer.sh stop <dir>` stops it.
# Every database of the server is reachable through it (a wildcard entry), so the databases tests create on the server
# answer through the pooler at once. Named prepared statements are refused (max_prepared_statements = 0 on versions
# that know the setting; 1.18 never keeps them), as a managed pooler in transaction mode would.
set -euo pipefail

usage='usage: pgbouncer.sh start|stop <dir> [port] [server-port] [user]'
command=${1:?$usage}
dir=${2:?$usage}
port=${3:-6433}
server_port=${4:-5432}
user=${5:-postgres}
pid="$dir/pgbouncer.pid"

case "$command" in
start)
  mkdir -p "$dir"
  cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$server_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
ignore_startup_parameters = extra_float_digits,options,statement_timeout
logfile = $dir/pgbouncer.log
pidfile = $pid
INI
  # Versions from 1.21 on can keep prepared statements for their clients; this pooler must not.
  if pgbouncer --version | head -1 | grep -qE ' 1\.(2[1-9]|[3-9][0-9])| [2-9]\.'; then
    echo 'max_prepared_statements = 0' >>"$dir/pgbouncer.ini"
  fi
  echo "\"$user\" \"\"" >"$dir/userlist.txt"
  # PgBouncer does not run as root; the directory must then belong to the user it runs as.
  if [ "$(id -u)" = 0 ]; then
    chown -R postgres "$dir"
    pgbouncer -d -u postgres "$dir/pgbouncer.ini"
  else
    pgbouncer -d "$dir/pgbouncer.ini"
  fi
  for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && exit 0
    sleep 0.1
  done
  echo "pgbouncer did not start listening on 127.0.0.1:$port; see $dir/pgbouncer.log" >&2
  exit 1
  ;;
stop)
  [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
  ;;
*)
  echo "$usage" >&2
  exit 2
  ;;
esac
