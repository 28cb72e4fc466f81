#!/usr/bin/env bash
# securepin server --algorithm EC_P384 and securepin client --algorithm EC_P384 over loopback HTTP:
# the configuration string carries the
# P-384 master key (id 0x02), the V4 endpoints answer and refuse as documented, the V4 master key
# survives a restart, and a LEGACY_P256 server refuses the V4 paths. The hybrid suites have their
# own script, server-v4-hybrid.sh. The full V4 exchange (keystore,
# activation, codes, status, token, vault) is driven by the Swift suites V4EndpointTests and
# V4HTTPTests; securepin client --algorithm EC_P384 runs its steps below.
# Usage: Tests/cli/server-v4.sh PATH/TO/securepin
set -uo pipefail
B=${1:?usage: server-v4.sh PATH/TO/securepin}
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
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
check() { # name, expected exit code, actual exit code, [condition result]
    local name=$1 want=$2 got=$3 ok=${4:-0}
    if [[ $got == "$want" && $ok == 0 ]]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $name (exit $got, wanted $want)" >&2
    fi
}
start_server() { # db, out, extra args...
    local db=$1 out=$2
    shift 2
    "$B" server --port 0 --db "$db" --admin-token-file "$work/admin.token" "$@" >"$out" 2>/dev/null &
    server_pid=$!
    for _ in $(seq 100); do grep -q '^back office' "$out" && break; sleep 0.1; done
    port=$(sed -n 's|.*listening on http://127.0.0.1:||p' "$out")
    url="http://127.0.0.1:$port"
}
post() { # path, body, [header] -> prints "STATUS BODY"
    curl -s -o "$work/body" -w '%{http_code}' -XPOST "$url$1" -H 'Content-Type: application/json' \
        ${3:+-H "$3"} -d "$2"
}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/admin.token"
chmod 600 "$work/admin.token"

start_server "$work/v4.sqlite" "$work/v4.out" --algorithm EC_P384
grep -q '^algorithm: EC_P384$' "$work/v4.out"
check "server --algorithm EC_P384 starts and says so" 0 $?
config=$(sed -n 's/^configuration: //p' "$work/v4.out")
keys=$(python3 - "$config" <<'PY'
import base64, sys
b = base64.b64decode(sys.argv[1])
assert b[0] == 1 and b[1] == 16 and b[18] == 16
i = 35
n = b[i]; i += 1
out = []
for _ in range(n):
    kid = b[i]; ln = b[i + 1]; key = b[i + 2:i + 2 + ln]; i += 2 + ln
    out.append(f"{kid}:{ln}:{key[0]:02x}")
print(" ".join(out))
PY
)
[[ $keys =~ ^1:65:04\ 2:49:0[23]$ ]]
check "the configuration string carries key 0x01 (P-256) and key 0x02 (P-384, compressed)" 0 $? 

code=$(post /pa/v4/keystore/create '{"jwt":"a.b.c"}')
[[ $code == 400 && $(jq -r .responseObject.code "$work/body") == ERR_TEMPORARY_KEY ]]
check "keystore/create refuses a JWT that is not HS384/HS256 of the application" 0 $?
code=$(post /pa/v4/auth/validate '{}')
[[ $code == 401 && $(jq -r .responseObject.code "$work/body") == ERR_AUTHENTICATION ]]
check "auth/validate without a V4 code is 401" 0 $?
code=$(post /pa/v4/auth/validate '{}' 'X-PowerAuth-Authorization: PowerAuth pa_version="3.3"')
[[ $code == 401 ]]
check "auth/validate with a V3 header is 401" 0 $?
code=$(post /pa/v4/activation/status '{}')
[[ $code == 400 && $(jq -r .responseObject.code "$work/body") == ERR_ENCRYPTION ]]
check "activation/status without X-PowerAuth-Encryption is an encryption error" 0 $?
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/pa/v4/activation/create")
[[ $code == 405 ]]
check "GET on a V4 POST endpoint is 405" 0 $?

# securepin client --algorithm EC_P384 against it: activate, commit, status, validate, a wrong PIN
# counted, token-create, vault-unlock, change-pin (the old PIN refused afterwards), remove.
printf 'X-SecurePIN-Admin-Token: %s\n' "$(cat "$work/admin.token")" > "$work/admin.header"
admin() { curl -s -XPOST "$url/admin/activation/$1" -H @"$work/admin.header" -d "{\"requestObject\":$2}"; }
C=(--url "$url" --config "$config" --state "$work/device" --algorithm EC_P384)
printf '2468' > "$work/pin"
printf '1111' > "$work/wrong"
init=$(admin init '{"userId":"v4-user"}')
id=$(jq -r .responseObject.activationId <<<"$init")
qr="$(jq -r .responseObject.activationCode <<<"$init")#$(jq -r .responseObject.activationSignature <<<"$init")"
"$B" client activate "${C[@]}" --code "$qr" --json --pin-fd 3 3<"$work/pin" >"$work/act.json" 2>"$work/err"
check "client activate --algorithm EC_P384" 0 $?
[[ $(jq -r .activationId "$work/act.json") == "$id" && $(jq -r .state "$work/act.json") == PENDING_COMMIT ]]
check "client activate (V4): the activation id and PENDING_COMMIT" 0 $?
[[ $(jq -r .responseObject.fingerprint <<<"$(admin detail "{\"activationId\":\"$id\"}")") == "$(jq -r .fingerprint "$work/act.json")" ]]
check "the back office shows the V4 fingerprint the device shows" 0 $?
admin commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client status "${C[@]}" --json >"$work/st.json"
check "client status (V4)" 0 $?
[[ $(jq -r .state "$work/st.json") == ACTIVE && $(jq -r .failedAttempts "$work/st.json") == 0 ]]
check "client status (V4): ACTIVE, no failures" 0 $?
"$B" client confirm "${C[@]}" --json --pin-fd 3 3<"$work/wrong" >/dev/null 2>"$work/err"
check "client confirm (V4) with a wrong PIN is refused -> 1" 1 $?
"$B" client confirm "${C[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/conf.json"
check "client confirm (V4): activation/confirm with the PIN" 0 $?
[[ $(jq -r .confirmed "$work/conf.json") == true && $(jq -r .activationId "$work/conf.json") == "$id" ]]
check "client confirm (V4) says confirmed, for this activation" 0 $?
"$B" client status "${C[@]}" --json >"$work/st.json"
[[ $(jq -r .failedAttempts "$work/st.json") == 0 ]]
check "the right PIN at confirm reset the failure the wrong one counted" 0 $?
"$B" client validate "${C[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/val.json"
check "client validate (V4) with the right PIN" 0 $?
"$B" client validate "${C[@]}" --json --pin-fd 3 3<"$work/wrong" >"$work/bad.json" 2>"$work/err"
check "client validate (V4) with a wrong PIN is refused -> 1" 1 $?
[[ $(jq -r .remainingAttempts "$work/bad.json") == 4 ]]
check "the wrong PIN was counted: 4 attempts remain" 0 $?
"$B" client validate "${C[@]}" --factors possession --json >/dev/null
check "client validate (V4) with possession only" 0 $?
until=$(($(date +%s) + 600))
admin block "{\"activationId\":\"$id\",\"blockedUntil\":$until}" >/dev/null
"$B" client status "${C[@]}" --json >"$work/blk.json" 2>/dev/null
check "client status of a temporarily blocked EC_P384 activation -> 3" 3 $?
[[ $(jq -r .state "$work/blk.json") == BLOCKED && $(jq -r .blockExpirationTime "$work/blk.json") == "$until" ]]
check "client status --json (EC_P384): BLOCKED with blockExpirationTime, the block's end" 0 $?
admin unblock "{\"activationId\":\"$id\"}" >/dev/null
"$B" client token-create "${C[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/tok.json"
check "client token-create (V4)" 0 $?
[[ $(jq -r .factors "$work/tok.json") == possession_knowledge ]]
check "client token-create (V4): a possession_knowledge token" 0 $?
"$B" client vault-unlock "${C[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/vault.json"
check "client vault-unlock (V4)" 0 $?
[[ $(jq -r .vaultKeyBytes "$work/vault.json") == 32 ]]
check "client vault-unlock (V4): a 32-byte key, checked and wiped" 0 $?
printf '97531' > "$work/newpin"
"$B" client change-pin "${C[@]}" --json --pin-fd 3 --new-pin-fd 4 3<"$work/pin" 4<"$work/newpin" >"$work/chg.json"
check "client change-pin (V4): the server rotates the knowledge key" 0 $?
[[ $(jq -r .changed "$work/chg.json") == true ]]
check "client change-pin (V4) says changed" 0 $?
"$B" client validate "${C[@]}" --pin-fd 3 3<"$work/pin" >/dev/null 2>&1
check "client validate (V4) with the old PIN after the change -> 1" 1 $?
"$B" client validate "${C[@]}" --json --pin-fd 3 3<"$work/newpin" >/dev/null
check "client validate (V4) with the new PIN" 0 $?
cp "$work/pin" "$work/oldpin"
cp "$work/newpin" "$work/pin"
"$B" client remove "${C[@]}" --json --pin-fd 3 3<"$work/pin" >/dev/null
check "client remove (V4)" 0 $?
[[ $(jq -r .responseObject.state <<<"$(admin detail "{\"activationId\":\"$id\"}")") == REMOVED ]]
check "the server shows the V4 activation REMOVED" 0 $?
"$B" client status "${C[@]}" >/dev/null 2>&1
check "client status after remove: no activation -> 2" 2 $?

stop_server
start_server "$work/v4.sqlite" "$work/v4-again.out" --algorithm EC_P384
[[ $(sed -n 's/^configuration: //p' "$work/v4-again.out") == "$config" ]]
check "a restart keeps the configuration string (the V4 master key is stored sealed)" 0 $?
stop_server

"$B" server --port 0 --db "$work/x.sqlite" --algorithm ML_L3 >/dev/null 2>"$work/err"
check "server --algorithm ML_L3 (a testing-only upstream suite) is a usage error" 2 $?
grep -q 'LEGACY_P256, EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5' "$work/err"
check "the usage error names the four algorithms served" 0 $?

start_server "$work/legacy.sqlite" "$work/legacy.out"
grep -q '^algorithm: LEGACY_P256$' "$work/legacy.out"
check "the default algorithm is LEGACY_P256" 0 $?
code=$(post /pa/v4/auth/validate '{}')
[[ $code == 400 && $(jq -r .responseObject.message "$work/body") == *LEGACY_P256* ]]
check "a LEGACY_P256 server refuses the V4 paths, naming its algorithm" 0 $?

# The upgrade: a V3.3 activation on the LEGACY_P256 server, the server restarted as EC_P384 on the
# same database, then securepin client upgrade with the new configuration string.
legacy_config=$(sed -n 's/^configuration: //p' "$work/legacy.out")
L=(--url "$url" --config "$legacy_config" --state "$work/old-device")
init=$(admin init '{"userId":"v3-user"}')
id=$(jq -r .responseObject.activationId <<<"$init")
"$B" client activate "${L[@]}" --code "$(jq -r .responseObject.activationCode <<<"$init")" --json \
    --pin-fd 3 3<"$work/oldpin" >/dev/null 2>"$work/err"
check "client activate (V3.3) on the LEGACY_P256 server" 0 $?
admin commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client confirm "${L[@]}" --pin-fd 3 3<"$work/oldpin" >/dev/null 2>"$work/err"
check "client confirm on a V3.3 activation is a usage error (V3.3 has no confirmation) -> 2" 2 $?
stop_server
start_server "$work/legacy.sqlite" "$work/upgraded.out" --algorithm EC_P384
U=(--url "$url" --config "$(sed -n 's/^configuration: //p' "$work/upgraded.out")" --state "$work/old-device")
"$B" client upgrade "${U[@]}" --algorithm LEGACY_P256 --pin-fd 3 3<"$work/oldpin" >/dev/null 2>"$work/err"
check "client upgrade --algorithm LEGACY_P256 is a usage error" 2 $?
"$B" client validate "${U[@]}" --algorithm EC_P384 --json --pin-fd 3 3<"$work/oldpin" >/dev/null
check "before the upgrade, an EC_P384 client still validates the V3.3 activation in V3.3" 0 $?
"$B" client upgrade "${U[@]}" --algorithm EC_P384 --json --pin-fd 3 3<"$work/wrong" >/dev/null 2>"$work/err"
check "client upgrade with a wrong PIN is refused -> 1" 1 $?
"$B" client upgrade "${U[@]}" --algorithm EC_P384 --json --pin-fd 3 3<"$work/oldpin" >"$work/up.json" 2>"$work/err"
check "client upgrade --algorithm EC_P384" 0 $?
[[ $(jq -r .activationId "$work/up.json") == "$id" && $(jq -r .protocol "$work/up.json") == 4.0 ]]
check "client upgrade: the same activation id, protocol 4.0" 0 $?
[[ $(jq -r .responseObject.fingerprint <<<"$(admin detail "{\"activationId\":\"$id\"}")") == "$(jq -r .fingerprint "$work/up.json")" ]]
check "the back office shows the upgraded activation's V4 fingerprint" 0 $?
ls "$work/old-device" | grep -q upgrade
check "no pending upgrade file is left" 1 $?
"$B" client validate "${U[@]}" --algorithm EC_P384 --json --pin-fd 3 3<"$work/oldpin" >/dev/null
check "after the upgrade the device validates in V4" 0 $?
"$B" client status "${U[@]}" --algorithm EC_P384 --json >"$work/st.json"
[[ $(jq -r .state "$work/st.json") == ACTIVE ]]
check "after the upgrade the V4 status is ACTIVE" 0 $?
"$B" client upgrade "${U[@]}" --algorithm EC_P384 --pin-fd 3 3<"$work/oldpin" >/dev/null 2>"$work/err"
check "a second client upgrade is refused -> 1" 1 $?
stop_server

echo "server-v4: $passed passed, $failed failed"
[[ $failed == 0 ]]
