#!/usr/bin/env bash
# A throw-away PostgreSQL 15 cluster for the tests, in a directory of the build folder.
#
#   cluster.sh start DIR     initdb + pg_ctl start; writes DIR/dsn (0600) and DIR/port
#   cluster.sh restart DIR   stop (immediate, as a crash) and start again on the same port
#   cluster.sh stop DIR      stop and remove DIR (harmless when nothing runs)
#
# Unix socket only (no TCP listener), in DIR/socket, mode 0700; trust authentication on it.
# Run as root, the cluster runs as the unprivileged user `nobody` (PostgreSQL refuses root). When
# `nobody` cannot reach DIR (a checkout under a 0700 home) or the socket path would be too long
# for a Unix socket, the data and socket go to a private mktemp directory under /tmp instead,
# named in DIR/elsewhere and removed with DIR.
set -euo pipefail

command=${1:?usage: cluster.sh start|restart|stop DIR}
dir=${2:?usage: cluster.sh start|restart|stop DIR}
# Absolute: the server runs in its data directory, and the socket path is given to it.
if [ -d "$dir" ]; then dir=$(cd "$dir" && pwd); fi
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
[ -x "$bin/pg_ctl" ] || { echo "cluster.sh: no PostgreSQL 15 in $bin (apt-get install postgresql-15)" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}

# Where the data and the socket are: DIR itself, or the directory DIR/elsewhere names.
home_of() { if [ -f "$dir/elsewhere" ]; then cat "$dir/elsewhere"; else echo "$dir"; fi; }

start_server() {
  local port=$1 home
  home=$(home_of)
  as_owner "$bin/pg_ctl" -D "$home/data" -l "$home/server.log" -w -t 60 \
    -o "-p $port -k $home/socket -c listen_addresses='' -c unix_socket_permissions=0700 -c max_connections=300 -c fsync=on" \
    start >/dev/null
}

case $command in
start)
  "$0" stop "$dir"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  home=$dir
  if [ "$(id -u)" = 0 ]; then
    chown nobody:nogroup "$dir"
    runuser -u nobody -- test -w "$dir" || home=""
  fi
  # sun_path holds 107 bytes: "$home/socket/.s.PGSQL.NNNNN" must fit.
  if [ -z "$home" ] || [ $((${#home} + 24)) -gt 107 ]; then
    home=$(mktemp -d /tmp/securepin-pg.XXXXXX)
    echo "$home" >"$dir/elsewhere"
  fi
  mkdir -p "$home/socket"
  if [ "$(id -u)" = 0 ]; then chown -R nobody:nogroup "$home"; fi
  as_owner "$bin/initdb" -D "$home/data" -U securepin --auth=trust -E UTF8 --no-locale >"$dir/initdb.log"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  start_server "$port"
  umask 077
  echo "host=$home/socket port=$port user=securepin dbname=postgres" >"$dir/dsn"
  echo "$port" >"$dir/port"
  echo "postgres cluster: started in $home (port $port, socket only)"
  ;;
restart)
  port=$(cat "$dir/port")
  as_owner "$bin/pg_ctl" -D "$(home_of)/data" -m immediate -w stop >/dev/null
  start_server "$port"
  ;;
stop)
  home=$(home_of)
  if [ -f "$home/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$home/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  case $home in /tmp/securepin-pg.*) rm -rf "$home" ;; esac
  rm -rf "$dir"
  ;;
*)
  echo "usage: cluster.sh start|restart|stop DIR" >&2
  exit 2
  ;;
esac
