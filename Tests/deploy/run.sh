#!/usr/bin/env bash
# The deployment an operator runs, end to end: nginx from Debian terminating TLS with a
# certificate from a throw-away CA, two `securepin server` instances on one PostgreSQL behind it
# (--trusted-proxy), and the client story over https: activation, status, signing, wrong PINs
# counted exactly across both instances, a token, a server-bound vault, removal; one instance
# killed mid-run and the story going on through the other. Then the client's TLS strategies
# against the same nginx: the CA via --ca-file and refused without it, a right and a wrong pin,
# an expired certificate, --insecure-skip-tls-verify, and plain http to a non-loopback host.
# Then the storage key is rotated with the instances stopped, and the story goes on.
# Everything is started here and always stopped.
# Usage: Tests/deploy/run.sh PATH/TO/securepin PYTHON   (PYTHON with the `cryptography` package)
set -uo pipefail
B=${1:?usage: run.sh PATH/TO/securepin PYTHON}
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
PY=${2:?usage: run.sh PATH/TO/securepin PYTHON}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
declare -A server_pid=()
nginx_pid=
cleanup() {
    for n in "${!server_pid[@]}"; do kill -TERM "${server_pid[$n]}" 2>/dev/null && wait "${server_pid[$n]}" 2>/dev/null; done
    [[ -n $nginx_pid ]] && kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
    "$root/Tests/postgres/cluster.sh" stop "$work/pg" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
check() { # name, expected exit code, actual exit code, [condition result], [detail file]
    local name=$1 want=$2 got=$3 ok=${4:-0}
    if [[ $got == "$want" && $ok == 0 ]]; then
        passed=$((passed + 1))
        echo "ok - $name"
    else
        failed=$((failed + 1))
        echo "FAIL - $name (exit $got, wanted $want)"
        [[ -n ${5:-} && -f ${5:-} ]] && sed 's/^/    /' "$5"
    fi
}
field() { jq -r ".$1" "$2"; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The throw-away CA, the server's certificate (and an expired one), the pins.
"$PY" "$here/certs.py" "$work"
check "a throw-away CA and certificates are made" 0 $?

# One PostgreSQL, one storage key file and one admin token for both instances.
"$root/Tests/postgres/cluster.sh" start "$work/pg" >/dev/null
check "PostgreSQL 15 starts" 0 $?
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/admin.token"
chmod 600 "$work/admin.token"
printf 'X-SecurePIN-Admin-Token: %s\n' "$(cat "$work/admin.token")" >"$work/admin.header"

start_instance() { # n [port: nginx's upstream, when it restarts]
    local n=$1
    rm -f "$work/ready$n"
    "$B" server --store postgres --dsn-file "$work/pg/dsn" --key-file "$work/storage.key" \
        --admin-token-file "$work/admin.token" --port "${2:-0}" --trusted-proxy 127.0.0.1 \
        --ready-file "$work/ready$n" --log-file "$work/access$n.log" >"$work/server$n.out" 2>"$work/server$n.err" &
    server_pid[$n]=$!
    for _ in $(seq 300); do [[ -s $work/ready$n ]] && break; sleep 0.1; done
    port[$n]=$(tr -d '\n' <"$work/ready$n")
}
declare -A port=()
start_instance 1
start_instance 2
[[ -n ${port[1]} && -n ${port[2]} ]]
check "two instances on one PostgreSQL, behind a trusted proxy" 0 0 $? "$work/server2.err"
config=$(sed -n 's/^configuration: //p' "$work/server1.out")
[[ -n $config && $config == "$(sed -n 's/^configuration: //p' "$work/server2.out")" ]]
check "both instances print the same configuration string" 0 0 $?

# nginx: TLS on one port with the valid certificate, on another with the expired one.
tls=$(free_port)
expired=$(free_port)
mkdir -p "$work/nginx/logs"
user_line=""
[[ $(id -u) == 0 ]] && user_line="user root root;"
sed -e "s|@WORK@|$work|g" -e "s|@TLS@|$tls|g" -e "s|@EXPIRED@|$expired|g" -e "s|@P1@|${port[1]}|g" \
    -e "s|@P2@|${port[2]}|g" -e "s|@USER@|$user_line|" "$here/nginx.conf" >"$work/nginx/nginx.conf"
nginx -t -p "$work/nginx" -c "$work/nginx/nginx.conf" >"$work/nginx/test.out" 2>&1
check "nginx accepts the configuration (nginx -t)" 0 $? 0 "$work/nginx/test.out"
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' 2>"$work/nginx/stderr" &
nginx_pid=$!
for _ in $(seq 100); do curl -s -o /dev/null --cacert "$work/ca.pem" "https://localhost:$tls/" && break; sleep 0.1; done
url="https://localhost:$tls"
admin() { curl -s --cacert "$work/ca.pem" -XPOST "$url/admin/$1" -H @"$work/admin.header" -d "{\"requestObject\":$2}"; }
[[ $(admin activation/list '{}' | jq -r .status) == OK ]]
check "the back office answers over https through nginx" 0 0 $?

# The client story over https, the CA given with --ca-file.
C=(--url "$url" --config "$config" --state "$work/device" --store files --ca-file "$work/ca.pem")
printf '2468' >"$work/pin"
printf '1111' >"$work/wrong"
init=$(admin activation/init '{"userId":"deployed"}')
id=$(jq -r .responseObject.activationId <<<"$init")
qr="$(jq -r .responseObject.activationCode <<<"$init")#$(jq -r .responseObject.activationSignature <<<"$init")"
"$B" client activate "${C[@]}" --code "$qr" --json --pin-fd 3 3<"$work/pin" >"$work/act.json" 2>"$work/err"
check "client activate over https" 0 $? 0 "$work/err"
admin activation/commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client status "${C[@]}" --json >"$work/st.json" 2>"$work/err"
check "client status over https: ACTIVE" 0 $? "$([[ $(field state "$work/st.json") == ACTIVE ]]; echo $?)" "$work/err"
"$B" client validate "${C[@]}" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "client validate (a signed request) with the right PIN" 0 $? 0 "$work/err"
for i in 1 2 3; do
    "$B" client validate "${C[@]}" --pin-fd 3 3<"$work/wrong" >/dev/null 2>"$work/err"
    check "wrong PIN $i -> 1" 1 $? 0 "$work/err"
done
"$B" client status "${C[@]}" --json >"$work/st.json"
[[ $(field failedAttempts "$work/st.json") == 3 && $(field remainingAttempts "$work/st.json") == 2 ]]
check "three wrong PINs over two instances are counted exactly: 3 failed, 2 remaining" 0 0 $? "$work/st.json"
served=0
for n in 1 2; do grep -q '"endpoint":"/pa/v3/signature/validate"' "$work/access$n.log" && served=$((served + 1)); done
check "both instances answered signed requests (nginx spreads them)" 0 0 "$([[ $served == 2 ]]; echo $?)"
grep -q '"client":"127.0.0.1"' "$work/access1.log" && ! grep -q '"client":"[^1]' "$work/access1.log"
check "the access log names the client nginx forwards" 0 0 $?
"$B" client token-create "${C[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/tok.json" 2>"$work/err"
check "client token-create over https" 0 $? 0 "$work/err"
"$B" client status "${C[@]}" --json >"$work/st.json"
[[ $(field failedAttempts "$work/st.json") == 0 ]]
check "the right PIN reset the count" 0 0 $?

# One instance killed mid-run: the story goes on through the other.
kill -KILL "${server_pid[1]}"
wait "${server_pid[1]}" 2>/dev/null
unset 'server_pid[1]'
"$B" client status "${C[@]}" --json >"$work/st.json" 2>"$work/err"
check "instance 1 killed: client status still answers" 0 $? 0 "$work/err"
"$B" client validate "${C[@]}" --pin-fd 3 3<"$work/wrong" >/dev/null 2>"$work/err"
check "instance 1 killed: a wrong PIN is refused -> 1" 1 $? 0 "$work/err"
"$B" client status "${C[@]}" --json >"$work/st.json"
[[ $(field failedAttempts "$work/st.json") == 1 ]]
check "... and counted once" 0 0 $? "$work/st.json"
"$B" client validate "${C[@]}" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "instance 1 killed: the right PIN is accepted" 0 $? 0 "$work/err"
V=(--vault "$work/vault" --ca-file "$work/ca.pem")
printf 'refresh-token' | "$B" vault init "${V[@]}" --bind server --url "$url" --config "$config" -t 2 -k 19456 \
    --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "vault init --bind server over https" 0 $? 0 "$work/err"
start_instance 1 "${port[1]}"
check "instance 1 restarts on the same database and port" 0 0 "$([[ -n ${port[1]} ]]; echo $?)"
"$B" vault unlock "${V[@]}" --pin-fd 3 3<"$work/pin" >"$work/unlocked" 2>"$work/err"
check "the server-bound vault unlocks over https" 0 $? "$([[ $(cat "$work/unlocked") == refresh-token ]]; echo $?)" \
    "$work/err"
"$B" vault unlock --vault "$work/vault" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "the vault's server is refused without the CA -> 4, nothing counted" 4 $? \
    "$(grep -q "whose TLS is not trusted" "$work/err"; echo $?)" "$work/err"

# The client's TLS strategies against the same nginx: what is accepted first, then what is
# refused, which must leave the local state as it was.
S=(--config "$config" --state "$work/device" --store files)
"$B" client status --url "$url" "${S[@]}" --ca-file "$work/ca.pem" --pin-sha256 "$(cat "$work/server.pin")" \
    >/dev/null 2>"$work/err"
check "--pin-sha256 with the server's key: accepted" 0 $? 0 "$work/err"
"$B" client status --url "$url" "${S[@]}" --ca-file "$work/ca.pem" --pin-sha256 "$(cat "$work/wrong.pin")" \
    --pin-sha256 "$(cat "$work/server.pin")" >/dev/null 2>"$work/err"
check "--pin-sha256 twice (a backup key and the live one): accepted" 0 $? 0 "$work/err"
"$B" client status --url "https://localhost:$expired" "${S[@]}" --insecure-skip-tls-verify --json \
    >"$work/st.json" 2>"$work/err"
check "--insecure-skip-tls-verify: the expired certificate is accepted, with a warning" 0 $? \
    "$(grep -q "warning: HTTP client for localhost: TLS certificate validation is off" "$work/err"; echo $?)" \
    "$work/err"
cp -a "$work/device" "$work/device.before"
"$B" client status --url "$url" "${S[@]}" >/dev/null 2>"$work/err"
check "no --ca-file: the system store does not trust the throw-away CA -> 1" 1 $? \
    "$(grep -q "the server is not trusted: the server's certificate is not trusted" "$work/err"; echo $?)" \
    "$work/err"
"$B" client status --url "$url" "${S[@]}" --ca-file "$work/other-ca.pem" >/dev/null 2>"$work/err"
check "another CA's file: not trusted -> 1" 1 $? "$(grep -q "is not trusted" "$work/err"; echo $?)" "$work/err"
"$B" client validate --url "$url" "${S[@]}" --ca-file "$work/ca.pem" --pin-sha256 "$(cat "$work/wrong.pin")" \
    --pin-fd 3 3<"$work/wrong" >/dev/null 2>"$work/err"
check "a wrong pin: refused -> 1" 1 $? "$(grep -q "not one of the pinned keys" "$work/err"; echo $?)" "$work/err"
"$B" client status --url "https://localhost:$expired" "${S[@]}" --ca-file "$work/ca.pem" >/dev/null 2>"$work/err"
check "an expired certificate: refused -> 1" 1 $? "$(grep -q "certificate has expired" "$work/err"; echo $?)" \
    "$work/err"
"$B" client status --url "http://192.0.2.1:8080" "${S[@]}" >/dev/null 2>"$work/err"
check "plain http to a non-loopback host: refused before any request -> 2" 2 $? \
    "$(grep -q "is plain http to 192.0.2.1, which is not loopback: use https, or --allow-insecure-http" "$work/err"
        echo $?)" "$work/err"
"$B" client status --url "$url" "${S[@]}" --pin-sha256 "not-base64" >/dev/null 2>"$work/err"
check "a malformed pin: refused -> 2" 2 $? "$(grep -q -- "--pin-sha256 must be the Base64" "$work/err"; echo $?)"
"$B" client status --url "$url" "${S[@]}" --ca-file "$work/wrong.pin" >/dev/null 2>"$work/err"
check "a CA file without a certificate: refused -> 2" 2 $? "$(grep -q "cannot be used" "$work/err"; echo $?)"
"$B" client status --url "$url" "${S[@]}" --ca-file "$work/ca.pem" --insecure-skip-tls-verify >/dev/null \
    2>"$work/err"
check "--insecure-skip-tls-verify with --ca-file: a usage error -> 2" 2 $?
# A signed request moves the counter before it is sent, as upstream's SDKs do (the server's
# look-ahead window absorbs it); everything else stays, and no file goes.
same_state() { jq -S 'del(.counter, .counterHistory, .counterIndex)' "$1/securepin-client.activation"; }
[[ $(ls "$work/device") == "$(ls "$work/device.before")" &&
    $(same_state "$work/device") == "$(same_state "$work/device.before")" ]]
check "no TLS failure or refusal removed or changed the activation (beyond the signed request's counter)" 0 0 $?
"$B" client status --url "$url" "${S[@]}" --json --ca-file "$work/ca.pem" >"$work/st.json" 2>/dev/null
[[ $(field failedAttempts "$work/st.json") == 0 ]]
check "no TLS failure counted as a wrong PIN (the wrong PIN behind a wrong pin was never sent)" 0 0 $? "$work/st.json"

# The storage key rotated as docs/deployment.md says: every instance stopped, the database
# re-sealed under a new key file, the file put in place, the instances started again; the
# activation, its counter and the server-bound vault carry on.
for n in "${!server_pid[@]}"; do kill -TERM "${server_pid[$n]}" && wait "${server_pid[$n]}" 2>/dev/null; done
server_pid=()
"$B" storage-key rotate --store postgres --dsn-file "$work/pg/dsn" --key-file "$work/storage.key" \
    --new-key-file "$work/storage.key.new" >"$work/rotate.out" 2>"$work/err"
check "storage-key rotate on the stopped deployment's PostgreSQL" 0 $? \
    "$(grep -q "^  vault verifiers: *1$" "$work/rotate.out" && grep -q "^  activation server keys: *[1-9]" "$work/rotate.out"
        echo $?)" "$work/err"
"$B" server --store postgres --dsn-file "$work/pg/dsn" --key-file "$work/storage.key" --port 0 \
    >/dev/null 2>"$work/err"
check "an instance started with the old key after the rotation refuses to start -> 1" 1 $? \
    "$(grep -q "does not open with its key file" "$work/err"; echo $?)" "$work/err"
install -m 600 "$work/storage.key.new" "$work/storage.key"
start_instance 1 "${port[1]}"
start_instance 2 "${port[2]}"
[[ -n ${port[1]} && -n ${port[2]} && $(sed -n 's/^configuration: //p' "$work/server2.out") == "$config" ]]
check "both instances start with the new key file, the configuration unchanged" 0 0 $? "$work/server1.err"
"$B" client validate "${C[@]}" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "after the rotation: the right PIN is accepted" 0 $? 0 "$work/err"
"$B" vault unlock "${V[@]}" --pin-fd 3 3<"$work/pin" >"$work/unlocked" 2>"$work/err"
check "after the rotation: the server-bound vault unlocks" 0 $? "$([[ $(cat "$work/unlocked") == refresh-token ]]; echo $?)" \
    "$work/err"

# Removal, over https through the instance that came back.
"$B" client remove "${C[@]}" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "client remove over https" 0 $? 0 "$work/err"
[[ $(admin activation/detail "{\"activationId\":\"$id\"}" | jq -r .responseObject.state) == REMOVED ]]
check "the activation is REMOVED on the server" 0 0 $?

echo "deploy: $passed passed, $failed failed"
[[ $failed == 0 ]]
