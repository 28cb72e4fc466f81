#!/usr/bin/env bash
# Interoperability: SecurePIN against a PowerAuth V3 client and server written in Python from
# the upstream PowerAuth documents only (README.md in this folder).
#   (0) the Python crypto against the official vectors;
#   (1) the Python client against the Python server (both from the documents);
#   (a) the Python client against `securepin server`;
#   (b) `securepin client` against the Python server.
# Usage: Tests/interop/run.sh PATH/TO/securepin [PYTHON]
set -uo pipefail
B=${1:?usage: run.sh PATH/TO/securepin [PYTHON]}
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PY=${2:-$root/.build/pyenv/bin/python3}
known_file=$here/known-differences.txt
work=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
known=0
skipped=0
# known-differences.txt: "check name prefix | issue" lines, for checks that fail on a known,
# reported disagreement (README.md lists them). Empty when SecurePIN and the documents agree.
known_issue() { # name -> the issue on stdout, status 0 when known
    local prefix issue
    [[ -f $known_file ]] || return 1
    while IFS='|' read -r prefix issue; do
        prefix=${prefix%"${prefix##*[![:space:]]}"}
        [[ -z $prefix || $prefix == \#* ]] && continue
        if [[ $1 == "$prefix"* ]]; then
            echo "$issue"
            return 0
        fi
    done <"$known_file"
    return 1
}
check() { # name, condition result (0 = true), [detail]
    local issue
    if [[ $2 == 0 ]]; then
        passed=$((passed + 1))
        echo "ok - $1"
    elif issue=$(known_issue "$1"); then
        known=$((known + 1))
        echo "known difference: $1 --$issue ${3:-}"
    else
        failed=$((failed + 1))
        echo "FAIL - $1 ${3:-}"
    fi
}
# The summary line of pa_client ("pa_client: N passed, M failed, K known differences ...").
add_client_counts() {
    local line
    line=$(grep '^pa_client: ' "$1" | tail -n 1)
    if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ known ]]; then
        passed=$((passed + BASH_REMATCH[1]))
        failed=$((failed + BASH_REMATCH[2]))
        known=$((known + BASH_REMATCH[3]))
    else
        failed=$((failed + 1))
        echo "FAIL - $2: the client scenario did not finish"
        tail -n 20 "$1"
    fi
}
# Starts a server in the background; waits for its first three lines.
start() { # name, output file, command...
    local name=$1 out=$2
    shift 2
    "$@" >"$out" 2>"$out.err" &
    pids+=($!)
    for _ in $(seq 1 300); do
        [[ -f $out && $(wc -l <"$out") -ge 3 ]] && return 0
        kill -0 "${pids[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    failed=$((failed + 1))
    echo "FAIL - $name did not start:"
    cat "$out" "$out.err" 2>/dev/null
    return 1
}
json() { # file, python expression over `d`
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null
}

# ------------------------------------------------------------------------------------------------
echo "== (0) PowerAuth crypto in Python against the official vectors"
vdir=$root/../shared/vectors/powerauth
[[ -d $vdir ]] || vdir=$root/Tests/Vectors/powerauth
"$PY" "$here/powerauth.py" selftest "$vdir" | tee "$work/vectors.log"
grep -q 'all passed$' "$work/vectors.log"
check "powerauth.py matches the official vectors" $?

# ------------------------------------------------------------------------------------------------
echo "== (1) Python client against the Python server (both from the documents)"
if start pa_server "$work/pas1.out" "$PY" "$here/pa_server.py" --port 0; then
    url=$(sed -n '1s/.*listening on //p' "$work/pas1.out")
    "$PY" "$here/pa_client.py" scenario --url "$url" --config "$(sed -n 2p "$work/pas1.out")" \
        --admin-token "$(sed -n '3s/^admin-token: //p' "$work/pas1.out")" --admin-style pa_server >"$work/c1.log" 2>&1
    grep -v '^ok - ' "$work/c1.log"
    add_client_counts "$work/c1.log" "python client vs python server"
fi
# The same server set to refuse 3.0-3.2: the matrix must see clean refusals.
if start pa_server-3.3 "$work/pas2.out" "$PY" "$here/pa_server.py" --port 0 --versions 3.3; then
    url=$(sed -n '1s/.*listening on //p' "$work/pas2.out")
    "$PY" "$here/pa_client.py" scenario --url "$url" --config "$(sed -n 2p "$work/pas2.out")" --matrix-only \
        --expect-refused 3.0,3.1,3.2 --admin-token "$(sed -n '3s/^admin-token: //p' "$work/pas2.out")" \
        --admin-style pa_server >"$work/c2.log" 2>&1
    grep -v '^ok - ' "$work/c2.log"
    add_client_counts "$work/c2.log" "python client vs python server (3.3 only)"
fi

# ------------------------------------------------------------------------------------------------
echo "== (a) Python client against securepin server"
token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$token" >"$work/admin.token"
chmod 600 "$work/admin.token"
if start "securepin server" "$work/sp.out" "$B" server --port 0 --db "$work/server.sqlite" \
    --admin-token-file "$work/admin.token"; then
    url=$(sed -n '1s/.*listening on \(http[^ ]*\).*/\1/p' "$work/sp.out")
    # The second line is the configuration string: its last word.
    config=$(sed -n 2p "$work/sp.out" | awk '{print $NF}')
    echo "securepin server at $url"
    "$PY" "$here/pa_client.py" scenario --url "$url" --config "$config" --admin-token "$token" \
        --admin-style securepin --known-differences "$known_file" >"$work/ca.log" 2>&1
    grep -v '^ok - ' "$work/ca.log"
    add_client_counts "$work/ca.log" "python client vs securepin server"
    kill -0 "${pids[-1]}" 2>/dev/null
    check "securepin server still running after the scenario" $?
fi

# ------------------------------------------------------------------------------------------------
echo "== (b) securepin client against the Python server"
if ! "$B" client --help >/dev/null 2>&1; then
    skipped=$((skipped + 1))
    echo "SKIPPED: 'securepin client' is not in this build yet (see Tests/interop/README.md for the spec"
    echo "         this part drives); nothing of part (b) was run or counted."
elif start pa_server "$work/pas3.out" "$PY" "$here/pa_server.py" --port 0; then
    url=$(sed -n '1s/.*listening on //p' "$work/pas3.out")
    config=$(sed -n 2p "$work/pas3.out")
    atoken=$(sed -n '3s/^admin-token: //p' "$work/pas3.out")
    admin() { # op, json body -> responseObject on stdout
        curl -sS -X POST -H 'Content-Type: application/json' -H "X-Test-Admin-Token: $atoken" \
            --data "{\"requestObject\":$2}" "$url/test-admin/$1" |
            "$PY" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["responseObject"]))'
    }
    pin=4739
    client() { # state dir, pin, args... (JSON on stdout; exit code kept)
        local dir=$1 p=$2
        shift 2
        "$B" client "$@" --url "$url" --config "$config" --state "$dir" --json --pin-fd 3 3<<<"$p"
    }
    client_nopin() {
        local dir=$1
        shift
        "$B" client "$@" --url "$url" --config "$config" --state "$dir" --json
    }
    detail() { admin detail "{\"activationId\":\"$1\"}" >"$work/detail.json"; }

    admin init '{"userId":"sp-client"}' >"$work/init.json"
    aid=$(json "$work/init.json" 'd["activationId"]')
    code=$(json "$work/init.json" 'd["activationCode"]')
    client "$work/s1" "$pin" activate --code "AAAAA${code:5}" >"$work/bad.json" 2>"$work/bad.err"
    rc=$?
    detail "$aid"
    [[ $rc != 0 && $(json "$work/detail.json" 'd["state"]') == CREATED ]]
    check "client activate: a code failing its CRC refused locally (exit $rc), activation untouched" $?
    rm -rf "$work/s1"
    client "$work/s1" "$pin" activate --code "$code" --name "interop" >"$work/act.json" 2>"$work/act.err"
    rc=$?
    detail "$aid"
    [[ $rc == 0 && $(json "$work/act.json" 'd["activationId"]') == "$aid" &&
        $(json "$work/detail.json" 'd["state"]') == PENDING_COMMIT ]]
    check "client activate: exit 0, activationId, server PENDING_COMMIT" $? "(exit $rc: $(cat "$work/act.json" "$work/act.err"))"
    [[ $(json "$work/act.json" 'd["fingerprint"]') == "$(json "$work/detail.json" 'd["fingerprint"]')" ]]
    check "client activate: fingerprint equals the server's (V3 fingerprint of both keys)" $? \
        "(client $(json "$work/act.json" 'd.get("fingerprint")'), server $(json "$work/detail.json" 'd["fingerprint"]'))"
    [[ $(json "$work/detail.json" '",".join(d["versionsSeen"])') == 3.3 && $(json "$work/detail.json" 'd["stats"]["keystoreIssued"]') -ge 1 ]]
    check "client activate spoke 3.3 with a temporary key" $? "($(cat "$work/detail.json"))"
    admin commit "{\"activationId\":\"$aid\"}" >/dev/null
    client_nopin "$work/s1" status >"$work/st.json"
    rc=$?
    [[ $rc == 0 && $(json "$work/st.json" 'd["state"].upper()') == ACTIVE && $(json "$work/st.json" 'd["failedAttempts"]') == 0 &&
        $(json "$work/st.json" 'd["maxFailedAttempts"]') == 5 && $(json "$work/st.json" 'd["remainingAttempts"]') == 5 ]]
    check "client status: ACTIVE, 0 of 5 failures, 5 remaining" $? "(exit $rc: $(cat "$work/st.json"))"
    for f in possession possession_knowledge possession_biometry possession_knowledge_biometry; do
        client "$work/s1" "$pin" validate --factors $f >/dev/null 2>"$work/err"
        rc=$?
        check "client validate --factors $f with the right PIN: exit 0" "$([[ $rc == 0 ]] && echo 0 || echo 1)" "(exit $rc: $(head -c 300 "$work/err"))"
    done
    client "$work/s1" 0000 validate >/dev/null 2>&1
    rc=$?
    detail "$aid"
    [[ $rc == 1 && $(json "$work/detail.json" 'd["failedAttempts"]') == 1 ]]
    check "client validate with a wrong PIN: exit 1, counted once at the server" $? "(exit $rc, $(cat "$work/detail.json"))"
    client_nopin "$work/s1" status >"$work/st.json"
    [[ $(json "$work/st.json" 'd["failedAttempts"]') == 1 && $(json "$work/st.json" 'd["remainingAttempts"]') == 4 ]]
    check "client status reads the failure from the status blob: 1 failed, 4 remaining" $? "($(cat "$work/st.json"))"
    client "$work/s1" "$pin" validate >/dev/null 2>&1
    rc=$?
    detail "$aid"
    [[ $rc == 0 && $(json "$work/detail.json" 'd["failedAttempts"]') == 0 ]]
    check "client validate right PIN after a wrong one: exit 0, failures reset" $? "(exit $rc)"
    client "$work/s1" "$pin" token-create >"$work/tok.json" 2>"$work/err"
    rc=$?
    detail "$aid"
    tid=$(json "$work/tok.json" 'd["tokenId"]')
    [[ $rc == 0 && -n $tid && $(json "$work/detail.json" '",".join(d["tokenIds"])') == *"$tid"* ]]
    check "client token-create: exit 0, tokenId known to the server" $? "(exit $rc: $(cat "$work/tok.json" "$work/err"))"
    client "$work/s1" "$pin" vault-unlock >"$work/vault.json" 2>"$work/err"
    rc=$?
    detail "$aid"
    [[ $rc == 0 && $(json "$work/detail.json" 'd["vaultUnlocks"]') == 1 ]]
    check "client vault-unlock: exit 0, the server unlocked the vault" $? "(exit $rc: $(cat "$work/vault.json" "$work/err"))"
    client "$work/s1" 0000 vault-unlock >/dev/null 2>&1
    rc=$?
    detail "$aid"
    [[ $rc == 1 && $(json "$work/detail.json" 'd["failedAttempts"]') == 1 ]]
    check "client vault-unlock with a wrong PIN: exit 1, counted" $? "(exit $rc)"
    [[ $(json "$work/detail.json" '",".join(d["versionsSeen"])') == 3.3 ]]
    check "securepin client spoke only 3.3" $? "($(json "$work/detail.json" 'd["versionsSeen"]'))"
    client "$work/s1" "$pin" remove >/dev/null 2>"$work/err"
    rc=$?
    detail "$aid"
    [[ $rc == 0 && $(json "$work/detail.json" 'd["state"]') == REMOVED ]]
    check "client remove: exit 0, server REMOVED" $? "(exit $rc: $(head -c 300 "$work/err"))"

    # blocked: a second activation, wrong PINs up to the maximum
    admin init '{"userId":"sp-client-2"}' >"$work/init2.json"
    aid2=$(json "$work/init2.json" 'd["activationId"]')
    client "$work/s2" "$pin" activate --code "$(json "$work/init2.json" 'd["activationCode"]')" >/dev/null 2>&1
    admin commit "{\"activationId\":\"$aid2\"}" >/dev/null
    codes=""
    for _ in 1 2 3 4 5; do
        client "$work/s2" 0000 validate >/dev/null 2>&1
        codes="$codes $?"
    done
    detail "$aid2"
    [[ $(json "$work/detail.json" 'd["state"]') == BLOCKED && $codes == " 1 1 1 1 "[13] ]]
    check "5 wrong PINs: server BLOCKED, exits 1 1 1 1 then 1 or 3" $? "(exits$codes, $(json "$work/detail.json" 'd["state"]'))"
    client "$work/s2" "$pin" validate >/dev/null 2>&1
    rc=$?
    check "client validate on a blocked activation: exit 3" "$([[ $rc == 3 ]] && echo 0 || echo 1)" "(exit $rc)"
    client_nopin "$work/s2" status >"$work/st.json"
    [[ $(json "$work/st.json" 'd["state"].upper()') == BLOCKED && $(json "$work/st.json" 'd["remainingAttempts"]') == 0 ]]
    check "client status: BLOCKED, 0 remaining" $? "($(cat "$work/st.json"))"
    "$B" client validate --url "$url" --config "$config" --state "$work/s2" --bogus >/dev/null 2>&1
    rc=$?
    check "client usage error: exit 2" "$([[ $rc == 2 ]] && echo 0 || echo 1)" "(exit $rc)"
fi

# Full transcripts (every ok line too) when asked: INTEROP_LOG_DIR=DIR.
if [[ -n ${INTEROP_LOG_DIR:-} ]]; then
    mkdir -p "$INTEROP_LOG_DIR"
    for f in c1 c2 ca; do
        [[ -f $work/$f.log ]] && cp "$work/$f.log" "$INTEROP_LOG_DIR/client-$f.txt"
    done
    echo "full client transcripts in $INTEROP_LOG_DIR"
fi
echo "== interop summary"
echo "checks: $passed passed, $failed failed, $known known differences, $skipped parts skipped"
[[ $known -gt 0 ]] && echo "known differences are listed in Tests/interop/known-differences.txt"
echo "interop: $passed passed, $failed failed"
[[ $failed == 0 ]]
