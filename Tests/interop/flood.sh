#!/usr/bin/env bash
# Unauthenticated key-request floods against one `securepin server` (SQLite, loopback):
#   (1) with the per-address limit raised out of the way: 20,000 application-scope
#       keystore/create requests from eight loopback addresses (127.0.0.2 ... 127.0.0.9) are all
#       answered, the server's resident set grows by less than 16 MiB (temporary keys are stateless:
#       nothing is kept per key), and then a legitimate activation, token and server-bound vault
#       unlock from 127.0.0.1 all succeed;
#   (2) with the default limit: one address gets 429 with upstream's ERR_TEMPORARY_KEY body and a
#       Retry-After after its burst, the vault's register answers 429 too, and another address is
#       still served;
#   (3) behind a trusted proxy (--trusted-proxy 127.0.0.2/32): the limit counts each forwarded
#       client apart, a forged X-Forwarded-For from an untrusted address is ignored, and the access
#       log names the real client.
# Usage: Tests/interop/flood.sh PATH/TO/securepin PYTHON
set -uo pipefail
B=${1:?usage: flood.sh PATH/TO/securepin PYTHON}
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
PY=${2:?usage: flood.sh PATH/TO/securepin PYTHON}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
server_pid=
stop_server() {
    [[ -n $server_pid ]] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    server_pid=
}
cleanup() {
    stop_server
    rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
check() { # name, condition result (0 = true), [detail]
    if [[ $2 == 0 ]]; then
        passed=$((passed + 1))
        echo "ok - $1"
    else
        failed=$((failed + 1))
        echo "FAIL - $1 ${3:-}"
    fi
}
start_server() { # db, extra args...
    local db=$1
    shift
    "$B" server --port 0 --db "$db" --admin-token-file "$work/admin.token" "$@" >"$work/server.out" 2>/dev/null &
    server_pid=$!
    for _ in $(seq 100); do grep -q '^back office' "$work/server.out" && break; sleep 0.1; done
    port=$(sed -n 's|.*listening on http://127.0.0.1:||p' "$work/server.out")
    url="http://127.0.0.1:$port"
    config=$(sed -n 's/^configuration: //p' "$work/server.out")
}
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status"; }
status_count() { jq -r ".status[\"$1\"] // 0" "$2"; }

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/admin.token"
chmod 600 "$work/admin.token"
printf 'X-SecurePIN-Admin-Token: %s\n' "$(cat "$work/admin.token")" >"$work/admin.header"
addresses=127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8,127.0.0.9

# (1) The store cannot be filled: every key request answered, memory flat, legitimate use works.
start_server "$work/flood.sqlite" --key-request-rate 100000
"$PY" "$here/flood.py" "$url" "$config" 800 "$addresses" >"$work/warm.json"
before=$(rss_kib)
started=$SECONDS
"$PY" "$here/flood.py" "$url" "$config" 20000 "$addresses" >"$work/flood.json"
seconds=$((SECONDS - started))
after=$(rss_kib)
ok=$(status_count 200 "$work/flood.json")
check "20,000 application-scope keystore/create from 8 addresses: all answered 200" \
    "$([[ $ok == 20000 ]]; echo $?)" "$(cat "$work/flood.json")"
growth=$((after - before))
echo "  resident set: ${before} KiB before, ${after} KiB after ($growth KiB), ${seconds} s for the flood"
check "the server's resident set grew by less than 16 MiB over the flood" "$([[ $growth -lt 16384 ]]; echo $?)"

admin() { curl -s -XPOST "$url/admin/$1" -H @"$work/admin.header" -d "{\"requestObject\":$2}"; }
C=(--url "$url" --config "$config" --state "$work/device")
printf '2468' >"$work/pin"
init=$(admin activation/init '{"userId":"after-the-flood"}')
id=$(jq -r .responseObject.activationId <<<"$init")
qr="$(jq -r .responseObject.activationCode <<<"$init")#$(jq -r .responseObject.activationSignature <<<"$init")"
"$B" client activate "${C[@]}" --code "$qr" --json \
    --pin-fd 3 3<"$work/pin" >"$work/act.json" 2>"$work/err"
check "after the flood: client activate (two ECIES layers under a fresh temporary key)" $? "$(cat "$work/err")"
admin activation/commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client token-create "${C[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/tok.json" 2>"$work/err"
check "after the flood: client token-create" $? "$(cat "$work/err")"
V=(--vault "$work/vault")
printf 'refresh-token' | "$B" vault init "${V[@]}" --bind server --url "$url" --config "$config" -t 2 -k 19456 \
    --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "after the flood: vault init --bind server" $? "$(cat "$work/err")"
"$B" vault unlock "${V[@]}" --pin-fd 3 3<"$work/pin" >"$work/unlocked" 2>"$work/err"
check "after the flood: the server-bound vault unlocks" $? "$(cat "$work/err")"
[[ $(cat "$work/unlocked") == refresh-token ]]
check "after the flood: the vault gives its secret back" $?
stop_server

# (2) The default per-address limit: a burst, then 429 with upstream's body; others still served.
start_server "$work/limit.sqlite"
"$PY" "$here/flood.py" "$url" "$config" 200 127.0.0.2 >"$work/limit.json"
limited=$(status_count 429 "$work/limit.json")
served=$(status_count 200 "$work/limit.json")
check "default limit: one address's 200 requests: a burst of about 64 served, the rest 429" \
    "$([[ $served -ge 64 && $served -lt 100 && $limited -gt 100 ]]; echo $?)" "$(cat "$work/limit.json")"
[[ $(jq -r '.first429.body.status' "$work/limit.json") == ERROR &&
    $(jq -r '.first429.body.responseObject.code' "$work/limit.json") == ERR_TEMPORARY_KEY &&
    $(jq -r '.first429.retryAfter' "$work/limit.json") -ge 1 ]]
check "429 carries upstream's error body (ERR_TEMPORARY_KEY) and a Retry-After" $? "$(cat "$work/limit.json")"
"$PY" "$here/flood.py" "$url" "$config" 100 127.0.0.3 /securepin/v1/vault/register >"$work/register.json"
[[ $(status_count 429 "$work/register.json") -gt 0 &&
    $(jq -r '.first429.body.error' "$work/register.json") == rate-limited ]]
check "the vault's register is limited per address too (429 rate-limited)" $? "$(cat "$work/register.json")"
"$PY" "$here/flood.py" "$url" "$config" 4 127.0.0.4 >"$work/other.json"
check "another address is still served" "$([[ $(status_count 200 "$work/other.json") == 4 ]]; echo $?)" \
    "$(cat "$work/other.json")"
stop_server

# (3) Behind a trusted proxy the limit and the log see the client the proxy names.
start_server "$work/proxy.sqlite" --trusted-proxy 127.0.0.2/32 --log-file "$work/access.log"
FLOOD_FORWARDED_FOR="203.0.113.1, 198.51.100.1" "$PY" "$here/flood.py" "$url" "$config" 200 127.0.0.2 \
    >"$work/p1.json"
check "through the proxy, one forwarded client's 200 requests: a burst served, the rest 429" \
    "$([[ $(status_count 200 "$work/p1.json") -ge 64 && $(status_count 200 "$work/p1.json") -lt 100 &&
        $(status_count 429 "$work/p1.json") -gt 100 ]]; echo $?)" "$(cat "$work/p1.json")"
FLOOD_FORWARDED_FOR="198.51.100.2" "$PY" "$here/flood.py" "$url" "$config" 8 127.0.0.2 >"$work/p2.json"
check "through the same proxy, another forwarded client is served in full" \
    "$([[ $(status_count 200 "$work/p2.json") == 8 ]]; echo $?)" "$(cat "$work/p2.json")"
FLOOD_FORWARDED_FOR="198.51.100.2" "$PY" "$here/flood.py" "$url" "$config" 200 127.0.0.3 >"$work/p3.json"
check "from an untrusted address, X-Forwarded-For is ignored: its own address is limited" \
    "$([[ $(status_count 429 "$work/p3.json") -gt 100 ]]; echo $?)" "$(cat "$work/p3.json")"
FLOOD_FORWARDED_FOR="198.51.100.2" "$PY" "$here/flood.py" "$url" "$config" 8 127.0.0.2 >"$work/p4.json"
check "... and the forwarded client it named was not charged for it" \
    "$([[ $(status_count 200 "$work/p4.json") == 8 ]]; echo $?)" "$(cat "$work/p4.json")"
stop_server
clients=$(jq -r '.client' "$work/access.log" | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')
[[ $clients == "127.0.0.3=200 198.51.100.1=200 198.51.100.2=16 " ]]
check "the access log names the forwarded clients and the untrusted peer" $? "$clients"

echo "flood: $passed passed, $failed failed"
[[ $failed == 0 ]]
