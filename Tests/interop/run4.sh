#!/usr/bin/env bash
# Interoperability, protocol V4 (EC_P384 and the hybrid EC_P384_ML_L3 / EC_P384_ML_L5): SecurePIN
# against a PowerAuth V4 client written in Python from the upstream PowerAuth documents and
# reference code only (README.md, "Protocol V4").
#   (0) powerauth4.py against the official V4 vector files (Tests/Vectors/powerauth/v4);
#   (1)-(3) pa_client4.py's scenario against `securepin server --algorithm SUITE`, one server a suite.
# Each server runs on 127.0.0.1 in a throw-away folder under the build folder and is always stopped.
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
cleanup() {
    if [[ -n $pid ]]; then
        kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    fi
    rm -rf "$work"
}
trap cleanup EXIT

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

# One suite: its own server (own database and token), the scenario, the server stopped again.
run_suite() { # n, suite
    local n=$1 suite=$2 dir="$work/$2" up line k
    mkdir -p "$dir"
    echo "== ($n) Python V4 client against securepin server --algorithm $suite"
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/admin.token"
    chmod 600 "$dir/admin.token"
    "$B" server --port 0 --db "$dir/server.sqlite" --admin-token-file "$dir/admin.token" --algorithm "$suite" \
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
            --suite "$suite" --known-differences "$here/known-differences.txt" >"$dir/client.log" 2>&1
        grep -v '^ok - \|^interop4: ' "$dir/client.log"
        line=$(grep '^interop4: ' "$dir/client.log" | tail -n 1)
        if [[ $line =~ ^interop4:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
            passed=$((passed + BASH_REMATCH[1]))
            failed=$((failed + BASH_REMATCH[2]))
            k=$(sed -n 's/^known differences: \([0-9]*\) .*/\1/p' "$dir/client.log")
            known=$((known + ${k:-0}))
            echo "$suite: ${BASH_REMATCH[1]} passed, ${BASH_REMATCH[2]} failed, ${k:-0} known differences"
        else
            failed=$((failed + 1))
            echo "FAIL - the V4 client scenario ($suite) did not finish"
            tail -n 20 "$dir/client.log"
        fi
        kill -0 "$pid" 2>/dev/null
        check "securepin server ($suite) still running after the V4 scenario" $?
        if [[ -n ${INTEROP_LOG_DIR:-} ]]; then
            mkdir -p "$INTEROP_LOG_DIR"
            if [[ $suite == EC_P384 ]]; then
                cp "$dir/client.log" "$INTEROP_LOG_DIR/client-v4.txt"
            else
                cp "$dir/client.log" "$INTEROP_LOG_DIR/client-v4-$suite.txt"
            fi
        fi
    fi
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    pid=
}

run_suite 1 EC_P384
run_suite 2 EC_P384_ML_L3
run_suite 3 EC_P384_ML_L5
echo "== interop V4 summary"
echo "checks: $passed passed, $failed failed, $known known differences (Tests/interop/known-differences.txt)"
echo "interop4: $passed passed, $failed failed"
[[ $failed == 0 ]]
