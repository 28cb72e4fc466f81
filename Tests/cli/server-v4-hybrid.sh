#!/usr/bin/env bash
# securepin server --algorithm EC_P384_ML_L3 (and _L5) with securepin client over loopback HTTP: the
# configuration string carries the P-384 master key (0x02) and the ML-DSA-65 one (0x03, a
# SubjectPublicKeyInfo), the client without --algorithm picks EC_P384_ML_L3 (the library default,
# offered by this string) and runs activate, confirm, status, validate, a counted wrong PIN, token-create,
# vault-unlock, change-pin and remove; a restart keeps both master keys; an EC_P384_ML_L5 server
# publishes 0x04 instead, and a client asking for a suite whose key the string lacks is refused;
# a client without --algorithm takes the stored activation's suite; an EC_P384 activation is
# upgraded to EC_P384_ML_L3 when its application moves (client upgrade).
# Usage: Tests/cli/server-v4-hybrid.sh PATH/TO/securepin
set -uo pipefail
B=${1:?usage: server-v4-hybrid.sh PATH/TO/securepin}
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
check() { # name, expected exit code, actual exit code
    local name=$1 want=$2 got=$3
    if [[ $got == "$want" ]]; then
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
keys_of() { # configuration string -> "id:length:first-byte ..." (SDK count encoding: 1, 2 or 4 bytes)
    python3 - "$1" <<'PY'
import base64, sys
b = base64.b64decode(sys.argv[1])
i = 1
def count():
    global i
    if b[i] < 0x80:
        i += 1
        return b[i - 1]
    if b[i] < 0xC0:
        i += 2
        return int.from_bytes(b[i - 2:i], "big") & 0x3FFF
    i += 4
    return int.from_bytes(b[i - 4:i], "big") & 0x3FFFFFFF
for _ in range(2):
    n = count()  # before "i +=": count() moves i
    i += n
out = []
for _ in range(count()):
    kid = b[i]; i += 1
    ln = count(); key = b[i:i + ln]; i += ln
    out.append(f"{kid}:{ln}:{key[0]:02x}")
assert i == len(b)
print(" ".join(out))
PY
}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/admin.token"
chmod 600 "$work/admin.token"
printf 'X-SecurePIN-Admin-Token: %s\n' "$(cat "$work/admin.token")" > "$work/admin.header"
admin() { curl -s -XPOST "$url/admin/activation/$1" -H @"$work/admin.header" -d "{\"requestObject\":$2}"; }

start_server "$work/l3.sqlite" "$work/l3.out" --algorithm EC_P384_ML_L3
grep -q '^algorithm: EC_P384_ML_L3$' "$work/l3.out"
check "server --algorithm EC_P384_ML_L3 starts and says so" 0 $?
config=$(sed -n 's/^configuration: //p' "$work/l3.out")
[[ $(keys_of "$config") =~ ^1:65:04\ 2:49:0[23]\ 3:1974:30$ ]]
check "the configuration string carries 0x01, 0x02 and 0x03 (ML-DSA-65 SubjectPublicKeyInfo, 1974 bytes)" 0 $?

C=(--url "$url" --config "$config" --state "$work/device")
printf '2468' > "$work/pin"
printf '1111' > "$work/wrong"
printf '97531' > "$work/newpin"
init=$(admin init '{"userId":"hybrid-user"}')
id=$(jq -r .responseObject.activationId <<<"$init")
"$B" client activate "${C[@]}" --code "$(jq -r .responseObject.activationCode <<<"$init")" --json \
    --pin-fd 3 3<"$work/pin" >"$work/act.json" 2>"$work/err"
check "client activate without --algorithm (EC_P384_ML_L3, the default this string offers)" 0 $?
[[ $(jq -r .activationId "$work/act.json") == "$id" && $(jq -r .state "$work/act.json") == PENDING_COMMIT ]]
check "client activate (hybrid): the activation id, PENDING_COMMIT" 0 $?
[[ $(jq -r .responseObject.fingerprint <<<"$(admin detail "{\"activationId\":\"$id\"}")") == "$(jq -r .fingerprint "$work/act.json")" ]]
check "the back office shows the fingerprint the device shows" 0 $?
admin commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client confirm "${C[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/conf.json"
[[ $(jq -r .confirmed "$work/conf.json") == true ]]
check "client confirm (hybrid): activation/confirm with the PIN" 0 $?
"$B" client status "${C[@]}" --json >"$work/st.json"
[[ $(jq -r .state "$work/st.json") == ACTIVE ]]
check "client status (hybrid): ACTIVE" 0 $?
"$B" client validate "${C[@]}" --json --pin-fd 3 3<"$work/pin" >/dev/null
check "client validate (hybrid) with the right PIN" 0 $?
"$B" client validate "${C[@]}" --json --pin-fd 3 3<"$work/wrong" >"$work/bad.json" 2>/dev/null
check "client validate (hybrid) with a wrong PIN -> 1" 1 $?
[[ $(jq -r .remainingAttempts "$work/bad.json") == 4 ]]
check "the wrong PIN was counted: 4 attempts remain" 0 $?
"$B" client token-create "${C[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/tok.json"
[[ $(jq -r .factors "$work/tok.json") == possession_knowledge ]]
check "client token-create (hybrid)" 0 $?
"$B" client vault-unlock "${C[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/vault.json"
[[ $(jq -r .vaultKeyBytes "$work/vault.json") == 32 ]]
check "client vault-unlock (hybrid): a 32-byte key, checked and wiped" 0 $?
"$B" client change-pin "${C[@]}" --json --pin-fd 3 --new-pin-fd 4 3<"$work/pin" 4<"$work/newpin" >/dev/null
check "client change-pin (hybrid): an ML-KEM + DHKEM exchange gives the new knowledge key" 0 $?
"$B" client validate "${C[@]}" --pin-fd 3 3<"$work/pin" >/dev/null 2>&1
check "the old PIN after the change -> 1" 1 $?
"$B" client validate "${C[@]}" --json --pin-fd 3 3<"$work/newpin" >/dev/null
check "the new PIN after the change" 0 $?
"$B" client validate "${C[@]}" --algorithm EC_P384_ML_L5 --pin-fd 3 3<"$work/newpin" >/dev/null 2>"$work/err"
check "client --algorithm EC_P384_ML_L5 with a string without key 0x04 -> 2" 2 $?
grep -q 'needs the ML-DSA master key (key 0x04)' "$work/err"
check "the refusal names the missing key 0x04" 0 $?
"$B" client remove "${C[@]}" --json --pin-fd 3 3<"$work/newpin" >/dev/null
check "client remove (hybrid)" 0 $?

stop_server
start_server "$work/l3.sqlite" "$work/l3-again.out" --algorithm EC_P384_ML_L3
[[ $(sed -n 's/^configuration: //p' "$work/l3-again.out") == "$config" ]]
check "a restart keeps the configuration string (both master keys are stored sealed)" 0 $?
stop_server

start_server "$work/l5.sqlite" "$work/l5.out" --algorithm EC_P384_ML_L5
config5=$(sed -n 's/^configuration: //p' "$work/l5.out")
[[ $(keys_of "$config5") =~ ^1:65:04\ 2:49:0[23]\ 4:2614:30$ ]]
check "an EC_P384_ML_L5 server publishes 0x04 (ML-DSA-87, 2614 bytes) instead of 0x03" 0 $?
D=(--url "$url" --config "$config5" --state "$work/device5" --algorithm EC_P384_ML_L5)
init=$(admin init '{"userId":"level5"}')
id=$(jq -r .responseObject.activationId <<<"$init")
"$B" client activate "${D[@]}" --code "$(jq -r .responseObject.activationCode <<<"$init")" --json \
    --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "client activate --algorithm EC_P384_ML_L5" 0 $?
"$B" client confirm "${D[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/conf5.json" 2>"$work/err"
check "client confirm before the commit, as the SDK's persist step does (EC_P384_ML_L5)" 0 $?
[[ $(jq -r .responseObject.state <<<"$(admin detail "{\"activationId\":\"$id\"}")") == PENDING_COMMIT ]]
check "confirmed before the commit: still PENDING_COMMIT on the server" 0 $?
admin commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client validate "${D[@]}" --json --pin-fd 3 3<"$work/pin" >/dev/null
check "client validate (EC_P384_ML_L5)" 0 $?
# A temporary block reports its end on V4 too (the status's customObject, seconds since 1970).
until=$(($(date +%s) + 600))
admin block "{\"activationId\":\"$id\",\"blockedUntil\":$until}" >/dev/null
"$B" client status "${D[@]}" --json >"$work/blk.json" 2>/dev/null
check "client status of a temporarily blocked EC_P384_ML_L5 activation -> 3" 3 $?
[[ $(jq -r .state "$work/blk.json") == BLOCKED && $(jq -r .blockExpirationTime "$work/blk.json") == "$until" ]]
check "client status --json (EC_P384_ML_L5): BLOCKED with blockExpirationTime, the block's end" 0 $?
[[ $(jq -r .customObject.blockExpirationTime "$work/blk.json") == "$until" ]]
check "client status --json prints the server's customObject as it came" 0 $?
admin unblock "{\"activationId\":\"$id\"}" >/dev/null
"$B" client status "${D[@]}" --json >"$work/blk.json"
[[ $(jq -r .state "$work/blk.json") == ACTIVE && $(jq -r .blockExpirationTime "$work/blk.json") == null ]]
check "unblocked: ACTIVE, no block end" 0 $?
"$B" client status --url "$url" --config "$config5" --state "$work/none" --json >/dev/null 2>&1
check "without --algorithm a string without 0x03 takes the strongest it offers: no activation there -> 2" 2 $?
"$B" client status --url "$url" --config "$config5" --state "$work/device5" --json >"$work/st5.json" 2>"$work/err"
[[ $? == 0 && $(jq -r .state "$work/st5.json") == ACTIVE ]]
check "client status without --algorithm takes the stored activation's suite (EC_P384_ML_L5): ACTIVE" 0 $?
"$B" client status --url "$url" --config "$config5" --state "$work/device5" --algorithm LEGACY_P256 >/dev/null 2>"$work/err"
check "--algorithm LEGACY_P256 over an EC_P384_ML_L5 activation -> 2" 2 $?
grep -q 'the activation uses EC_P384_ML_L5, --algorithm asks for LEGACY_P256: no downgrade' "$work/err"
check "the refusal names both suites and says there is no downgrade" 0 $?
stop_server

# The application moves from EC_P384 to EC_P384_ML_L3 (same database): the device upgrades.
start_server "$work/up.sqlite" "$work/up.out" --algorithm EC_P384
configA=$(sed -n 's/^configuration: //p' "$work/up.out")
U=(--state "$work/device-up")
init=$(admin init '{"userId":"upgrader"}')
id=$(jq -r .responseObject.activationId <<<"$init")
"$B" client activate --url "$url" "${U[@]}" --config "$configA" --code "$(jq -r .responseObject.activationCode <<<"$init")" \
    --json --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "client activate without --algorithm against an EC_P384 server (the strongest its string offers)" 0 $?
admin commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client confirm --url "$url" "${U[@]}" --config "$configA" --pin-fd 3 3<"$work/pin" >/dev/null
check "client confirm (EC_P384)" 0 $?
stop_server
start_server "$work/up.sqlite" "$work/up3.out" --algorithm EC_P384_ML_L3
configB=$(sed -n 's/^configuration: //p' "$work/up3.out")
"$B" client status --url "$url" "${U[@]}" --config "$configB" --json >"$work/up-st.json" 2>"$work/err"
[[ $? == 0 && $(jq -r .state "$work/up-st.json") == ACTIVE ]]
check "after the move the EC_P384 activation keeps working under the new string" 0 $?
grep -q 'the activation uses EC_P384, the configuration offers EC_P384_ML_L3: upgrade available' "$work/err"
check "client status notes the available upgrade, naming both suites" 0 $?
"$B" client validate --url "$url" "${U[@]}" --config "$configB" --algorithm EC_P384_ML_L3 --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "client validate --algorithm EC_P384_ML_L3 over the EC_P384 activation: it still signs in EC_P384" 0 $?
grep -q "the activation uses EC_P384, --algorithm asks for EC_P384_ML_L3: upgrade available: run 'securepin client upgrade --algorithm EC_P384_ML_L3'" "$work/err"
check "the note names both suites and the upgrade to run" 0 $?
"$B" client upgrade --url "$url" "${U[@]}" --config "$configB" --algorithm EC_P384_ML_L3 --json --pin-fd 3 3<"$work/pin" \
    >"$work/up.json" 2>"$work/err"
check "client upgrade --algorithm EC_P384_ML_L3 (EC_P384 -> EC_P384_ML_L3)" 0 $?
[[ $(jq -r .algorithm "$work/up.json") == EC_P384_ML_L3 ]]
check "the upgrade reports the new suite" 0 $?
[[ $(jq -r .responseObject.fingerprint <<<"$(admin detail "{\"activationId\":\"$id\"}")") == "$(jq -r .fingerprint "$work/up.json")" ]]
check "after the upgrade the back office shows the fingerprint the device shows" 0 $?
"$B" client validate --url "$url" "${U[@]}" --config "$configB" --json --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "client validate after the upgrade (the stored suite, EC_P384_ML_L3)" 0 $?
[[ ! -s "$work/err" ]]
check "no upgrade note any more" 0 $?
"$B" client upgrade --url "$url" "${U[@]}" --config "$configB" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "a second upgrade to the same suite is refused -> 1" 1 $?
grep -q 'the activation uses EC_P384_ML_L3, the upgrade asks for EC_P384_ML_L3: nothing to upgrade' "$work/err"
check "the refusal names both suites" 0 $?
stop_server

echo "server-v4-hybrid: $passed passed, $failed failed"
[[ $failed == 0 ]]
