#!/usr/bin/env bash
# A throw-away PostgreSQL 15 cluster for the tests, in a directory of the build folder.
#
#   cluster.sh start DIR     initdb + pg_ctl start; writes DIR/dsn (0600) and DIR/port
#   cluster.sh restart DIR   stop (immediate, as a crash) and start again on the same port
#   cluster.sh stop DIR      stop and remove DIR (harmless when nothing runs)
#
# Unix socket only (no TCP listener), in DIR/socket, mode 0700; trust authentication on it.
# Run as root, the cluster runs as the unprivileged user `nobody` (PostgreSQL refuses root).
set -euo pipefail

command=${1:?usage: cluster.sh start|restart|stop DIR}
dir=${2:?usage: cluster.sh start|restart|stop DIR}
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
[ -x "$bin/pg_ctl" ] || { echo "cluster.sh: no PostgreSQL 15 in $bin (apt-get install postgresql-15)" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}

start_server() {
  local port=$1
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir/socket -c listen_addresses='' -c unix_socket_permissions=0700 -c max_connections=300 -c fsync=on" \
    start >/dev/null
}

case $command in
start)
  "$0" stop "$dir"
  mkdir -p "$dir/socket"
  dir=$(cd "$dir" && pwd)
  if [ "$(id -u)" = 0 ]; then chown -R nobody:nogroup "$dir"; fi
  as_owner "$bin/initdb" -D "$dir/data" -U securepin --auth=trust -E UTF8 --no-locale >"$dir/initdb.log"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  start_server "$port"
  umask 077
  echo "host=$dir/socket port=$port user=securepin dbname=postgres" >"$dir/dsn"
  echo "$port" >"$dir/port"
  echo "postgres cluster: started in $dir (port $port, socket only)"
  ;;
restart)
  port=$(cat "$dir/port")
  as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
  start_server "$port"
  ;;
stop)
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: cluster.sh start|restart|stop DIR" >&2
  exit 2
  ;;
esac
