#!/usr/bin/env bash
# Interoperability, protocol V4 (EC_P384 and the hybrid EC_P384_ML_L3 / EC_P384_ML_L5): SecurePIN
# against a PowerAuth V4 client written in Python from the upstream PowerAuth documents and
# reference code only (README.md, "Protocol V4").
#   (0) powerauth4.py against the official V4 vector files (Tests/Vectors/powerauth/v4);
#   (1)-(3) pa_client4.py's scenario against `securepin server --algorithm SUITE`, one server a suite.
# Each server runs on 127.0.0.1 in a throw-away folder under the build folder and is always stopped.
# Every suite runs once per dialect (dialect.py: android, ios, plain) and per store: SQLite, and
# PostgreSQL when PostgreSQL 15 is installed (one throw-away cluster, Tests/postgres/cluster.sh, one
# database per server, always stopped). INTEROP_DIALECT and INTEROP_STORES (comma lists) narrow the loops.
# Usage: Tests/interop/run4.sh PATH/TO/securepin [PYTHON]   (BUILD_DIR: the build folder, default .build)
set -uo pipefail
B=${1:?usage: run4.sh PATH/TO/securepin [PYTHON]}
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PY=${2:-$root/.build/pyenv/bin/python3}
build=${BUILD_DIR:-.build}
[[ $build == /* ]] || build=$root/$build
mkdir -p "$build"
work=$(mktemp -d "$build/interop4.XXXXXX")
pid=
pg_dir=
cleanup() {
    if [[ -n $pid ]]; then
        kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    fi
    [[ -n $pg_dir ]] && "$root/Tests/postgres/cluster.sh" stop "$pg_dir" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
dialects=${INTEROP_DIALECT:-android ios plain}
dialects=${dialects//,/ }
stores=${INTEROP_STORES:-sqlite,postgres}
stores=${stores//,/ }
pg_bin=${PG_BIN:-/usr/lib/postgresql/15/bin}

passed=0
failed=0
known=0
check() { # name, condition result (0 = true), [detail]
    if [[ $2 == 0 ]]; then
        passed=$((passed + 1))
        echo "ok - $1"
    else
        failed=$((failed + 1))
        echo "FAIL - $1 ${3:-}"
    fi
}

echo "== (0) PowerAuth V4 crypto in Python against the official V4 vectors"
"$PY" "$here/powerauth4.py" selftest "$root/Tests/Vectors/powerauth/v4" >"$work/vectors.log" 2>&1
rc=$?
cat "$work/vectors.log"
check "powerauth4.py matches every CURRENT V4 vector file" $rc

pg_ready=
pg_start() {
    [[ -n $pg_ready ]] && return 0
    pg_dir=$work/pg
    if ! "$root/Tests/postgres/cluster.sh" start "$pg_dir" >"$work/pg.log" 2>&1; then
        check "the throw-away PostgreSQL cluster started" 1 "$(tail -n 5 "$work/pg.log")"
        return 1
    fi
    pg_ready=1
}

# One suite: its own server (own database and token), the scenario, the server stopped again.
run_suite() { # n, suite, dialect, store
    local n=$1 suite=$2 d=$3 store=$4 dir="$work/$3-$4-$2" up line k dsn
    local -a storeargs=(--db "$dir/server.sqlite")
    mkdir -p "$dir"
    echo "== ($n) [$d, $store] Python V4 client against securepin server --algorithm $suite"
    if [[ $store == postgres ]]; then
        pg_start || return
        dsn=$(cat "$pg_dir/dsn")
        local db="interop4_${d}_${suite,,}"
        "$pg_bin/psql" -q "$dsn" -c "CREATE DATABASE $db" >/dev/null 2>"$dir/psql.err"
        check "PostgreSQL database $db created" $? "$(cat "$dir/psql.err")"
        (umask 077 && echo "${dsn/dbname=postgres/dbname=$db}" >"$dir/server.dsn")
        storeargs=(--store postgres --dsn-file "$dir/server.dsn" --key-file "$dir/server.key")
    fi
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/admin.token"
    chmod 600 "$dir/admin.token"
    "$B" server --port 0 "${storeargs[@]}" --admin-token-file "$dir/admin.token" --algorithm "$suite" \
        >"$dir/sp.out" 2>"$dir/sp.err" &
    pid=$!
    up=1
    for _ in $(seq 1 300); do
        if grep -qs '^back office' "$dir/sp.out"; then
            up=0
            break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    check "securepin server --algorithm $suite started on loopback" $up "$(cat "$dir/sp.out" "$dir/sp.err" 2>/dev/null)"
    if [[ $up == 0 ]]; then
        url=$(sed -n 's/.*listening on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$dir/sp.out")
        config=$(sed -n 's/^configuration: //p' "$dir/sp.out")
        grep -q "^algorithm: $suite\$" "$dir/sp.out"
        check "the server says algorithm: $suite" $?
        "$PY" "$here/pa_client4.py" scenario --url "$url" --config "$config" --admin-token "$(cat "$dir/admin.token")" \
            --suite "$suite" --dialect "$d" --known-differences "$here/known-differences.txt" >"$dir/client.log" 2>&1
        grep -v '^ok - \|^interop4: ' "$dir/client.log"
        line=$(grep '^interop4: ' "$dir/client.log" | tail -n 1)
        if [[ $line =~ ^interop4:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
            passed=$((passed + BASH_REMATCH[1]))
            failed=$((failed + BASH_REMATCH[2]))
            k=$(sed -n 's/^known differences: \([0-9]*\) .*/\1/p' "$dir/client.log")
            known=$((known + ${k:-0}))
            echo "[$d, $store] $suite: ${BASH_REMATCH[1]} passed, ${BASH_REMATCH[2]} failed, ${k:-0} known differences"
        else
            failed=$((failed + 1))
            echo "FAIL - the V4 client scenario ($suite) did not finish"
            tail -n 20 "$dir/client.log"
        fi
        kill -0 "$pid" 2>/dev/null
        check "securepin server ($suite) still running after the V4 scenario" $?
        if [[ -n ${INTEROP_LOG_DIR:-} ]]; then
            mkdir -p "$INTEROP_LOG_DIR"
            cp "$dir/client.log" "$INTEROP_LOG_DIR/client-v4-$d-$store-$suite.txt"
        fi
    fi
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    pid=
}

for d in $dialects; do
    for st in $stores; do
        if [[ $st == postgres && ! -x $pg_bin/pg_ctl ]]; then
            echo "(PostgreSQL 15 is not installed: the V4 suites run on SQLite only)"
            continue
        fi
        p0=$passed f0=$failed k0=$known
        run_suite 1 EC_P384 "$d" "$st"
        run_suite 2 EC_P384_ML_L3 "$d" "$st"
        run_suite 3 EC_P384_ML_L5 "$d" "$st"
        echo "interop [$d, $st] V4: $((passed - p0)) passed, $((failed - f0)) failed, $((known - k0)) known differences" |
            tee -a "$work/groups.txt"
    done
done
echo "== interop V4 summary"
cat "$work/groups.txt" 2>/dev/null
echo "checks: $passed passed, $failed failed, $known known differences (Tests/interop/known-differences.txt)"
echo "interop4: $passed passed, $failed failed"
[[ $failed == 0 ]]
