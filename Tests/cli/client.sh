#!/usr/bin/env bash
# securepin client against securepin server over loopback HTTP: every step, its JSON, its exit
# code, the V3 counting rule, blocking, and that a network error leaves the local state alone.
# Usage: Tests/cli/client.sh PATH/TO/securepin
set -uo pipefail
B=${1:?usage: client.sh PATH/TO/securepin}
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
work=$(mktemp -d)
server_pid=
cleanup() {
    [[ -n $server_pid ]] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
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
field() { jq -r ".$1" "$2"; }

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/admin.token"
chmod 600 "$work/admin.token"
printf 'X-SecurePIN-Admin-Token: %s\n' "$(cat "$work/admin.token")" > "$work/admin.header"
"$B" server --port 0 --db "$work/server.sqlite" --admin-token-file "$work/admin.token" \
    >"$work/server.out" 2>/dev/null &
server_pid=$!
for _ in $(seq 100); do grep -q '^back office' "$work/server.out" && break; sleep 0.1; done
port=$(sed -n 's|.*listening on http://127.0.0.1:||p' "$work/server.out")
config=$(sed -n 's/^configuration: //p' "$work/server.out")
url="http://127.0.0.1:$port"
admin() { curl -s -XPOST "$url/admin/activation/$1" -H @"$work/admin.header" -d "{\"requestObject\":$2}"; }
# Files, whatever the session offers: these checks look at the state directory.
C=(--url "$url" --config "$config" --state "$work/device" --store files)
printf '2468' > "$work/pin"
printf '1111' > "$work/wrong"

init=$(admin init '{"userId":"cli-user"}')
id=$(jq -r .responseObject.activationId <<<"$init")
qr="$(jq -r .responseObject.activationCode <<<"$init")#$(jq -r .responseObject.activationSignature <<<"$init")"

"$B" client activate "${C[@]}" --code "${qr%%#*}X" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "client activate: a mistyped code is bad input, nothing sent" 2 $?
[[ ! -e $work/device/securepin-client.activation ]]
check "client activate: no state after a refused code" 0 0 $?

"$B" client activate "${C[@]}" --code "$qr" --name "cli phone" --json --pin-fd 3 3<"$work/pin" >"$work/act.json"
check "client activate --code CODE#SIGNATURE" 0 $?
[[ $(field activationId "$work/act.json") == "$id" && $(field state "$work/act.json") == PENDING_COMMIT ]]
check "client activate: activationId and state PENDING_COMMIT" 0 0 $?
detail=$(admin detail "{\"activationId\":\"$id\"}")
[[ $(jq -r .responseObject.fingerprint <<<"$detail") == "$(field fingerprint "$work/act.json")" ]]
check "the back office shows the device's fingerprint before the commit" 0 0 $?
[[ $(stat -c %a "$work/device") == 700 ]]
check "client: the state directory is 0700" 0 0 $?

admin commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client status "${C[@]}" --json >"$work/st.json"
check "client status" 0 $?
[[ $(field state "$work/st.json") == ACTIVE && $(field remainingAttempts "$work/st.json") == 5 ]]
check "client status: ACTIVE, 5 remaining" 0 0 $?

"$B" client validate "${C[@]}" --pin-fd 3 3<"$work/pin" --json >"$work/v.json"
check "client validate with the right PIN -> 0" 0 $?
"$B" client validate "${C[@]}" --pin-fd 3 3<"$work/wrong" >/dev/null 2>"$work/err"
check "client validate with a wrong PIN -> 1" 1 $?
grep -q "4 of 5 attempts remaining" "$work/err"
check "client validate: the remaining attempts are said" 0 0 $?
"$B" client validate "${C[@]}" --factors possession >/dev/null
check "client validate --factors possession -> 0" 0 $?
"$B" client status "${C[@]}" --json >"$work/st.json"
[[ $(field failedAttempts "$work/st.json") == 1 ]]
check "a possession code does not reset the count (V3)" 0 0 $?

"$B" client token-create "${C[@]}" --pin-fd 3 3<"$work/pin" --json >"$work/tok.json"
check "client token-create" 0 $?
tok=$(field tokenId "$work/tok.json")
[[ -f $work/device/securepin-client.token-$tok && $(stat -c %a "$work/device/securepin-client.token-$tok") == 600 ]]
check "client token-create: the token is kept 0600" 0 0 $?
! grep -rq "tokenSecret" "$work/tok.json"
check "client token-create: no secret printed" 0 0 $?

"$B" client vault-unlock "${C[@]}" --pin-fd 3 3<"$work/pin" --json >"$work/vault.json"
check "client vault-unlock" 0 $?
[[ $(field unlocked "$work/vault.json") == true ]]
check "client vault-unlock: unlocked" 0 0 $?
"$B" client status "${C[@]}" --json >"$work/st.json"
[[ $(field failedAttempts "$work/st.json") == 0 ]]
check "the right PIN reset the count" 0 0 $?

# The server down: a network error, exit 1, and the local state untouched.
cp -a "$work/device" "$work/device.before"
"$B" client status --url "http://127.0.0.1:1" --config "$config" --state "$work/device" >/dev/null 2>"$work/err"
check "client status with no server -> 1" 1 $?
diff -r "$work/device" "$work/device.before" >/dev/null
check "a network error changes nothing in the state directory" 0 0 $?

for i in 1 2 3 4; do
    "$B" client validate "${C[@]}" --pin-fd 3 3<"$work/wrong" >/dev/null 2>&1
    check "wrong PIN $i of 5 -> 1" 1 $?
done
"$B" client validate "${C[@]}" --pin-fd 3 3<"$work/wrong" >/dev/null 2>"$work/err"
check "the fifth wrong PIN blocks -> 3" 3 $?
"$B" client status "${C[@]}" --json >"$work/st.json"
check "client status of a blocked activation -> 3" 3 $?
[[ $(field state "$work/st.json") == BLOCKED ]]
check "client status: BLOCKED" 0 0 $?
"$B" client validate "${C[@]}" --pin-fd 3 3<"$work/pin" >/dev/null 2>&1
check "blocked: even the right PIN is refused -> 3" 3 $?

admin unblock "{\"activationId\":\"$id\"}" >/dev/null
"$B" client remove "${C[@]}" --pin-fd 3 3<"$work/pin" --json >"$work/rm.json"
check "client remove" 0 $?
[[ ! -e $work/device/securepin-client.activation ]]
check "client remove: the local state is gone" 0 0 $?
[[ $(jq -r .responseObject.state <<<"$(admin detail "{\"activationId\":\"$id\"}")") == REMOVED ]]
check "client remove: REMOVED on the server" 0 0 $?
"$B" client status "${C[@]}" >/dev/null 2>&1
check "client status without an activation -> 2" 2 $?

"$B" client status --config "$config" --state "$work/device" >/dev/null 2>&1
check "client status without --url -> 2" 2 $?

# Removed on the server while this device still holds the activation (the back office removed
# it): status says so and exits 1, activate says what to do, remove --local forgets it and its
# tokens without the server, and a new activation works.
R=(--url "$url" --config "$config" --state "$work/removed" --store files)
init=$(admin init '{"userId":"removed-user"}')
rid=$(jq -r .responseObject.activationId <<<"$init")
rqr="$(jq -r .responseObject.activationCode <<<"$init")#$(jq -r .responseObject.activationSignature <<<"$init")"
"$B" client activate "${R[@]}" --code "$rqr" --pin-fd 3 3<"$work/pin" >/dev/null 2>&1
admin commit "{\"activationId\":\"$rid\"}" >/dev/null
"$B" client token-create "${R[@]}" --pin-fd 3 3<"$work/pin" --json >"$work/rtok.json"
check "a token for the activation about to be removed" 0 $?
admin remove "{\"activationId\":\"$rid\"}" >/dev/null
"$B" client status "${R[@]}" --json >"$work/st.json" 2>"$work/err"
check "client status of an activation REMOVED on the server -> 1" 1 $? \
    "$([[ $(field state "$work/st.json") == REMOVED ]] && grep -q "the server has REMOVED this activation" "$work/err" &&
        grep -q "client remove --local" "$work/err"; echo $?)"
init2=$(admin init '{"userId":"removed-user"}')
rqr2="$(jq -r .responseObject.activationCode <<<"$init2")#$(jq -r .responseObject.activationSignature <<<"$init2")"
"$B" client activate "${R[@]}" --code "$rqr2" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "client activate over a removed activation -> 1, saying to remove it locally first" 1 $? \
    "$(grep -q "was REMOVED on the server: forget it here first ('securepin client remove --local')" "$work/err"; echo $?)"
[[ -n $(find "$work/removed" -name 'securepin-client.token-*') ]]
check "the token is still kept before remove --local" 0 0 $?
"$B" client remove "${R[@]}" --local --json >"$work/rm.json" 2>"$work/err"
check "client remove --local (no PIN, no server)" 0 $? \
    "$([[ $(field removedLocally "$work/rm.json") == true && $(field activationId "$work/rm.json") == "$rid" ]]; echo $?)"
[[ ! -e $work/removed/securepin-client.activation && -z $(find "$work/removed" -name 'securepin-client.*') ]]
check "remove --local: the state, keys and tokens are gone" 0 0 $?
"$B" client activate "${R[@]}" --code "$rqr2" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "then a new activation works" 0 $? 0
"$B" client remove --url "http://127.0.0.1:1" --config "$config" --state "$work/removed" --store files --local \
    >/dev/null 2>"$work/err"
check "remove --local needs no server (nothing listens at the URL)" 0 $?

# A new PIN is checked as vault init checks one: a warning, or with --reject-weak a refusal
# before anything is sent.
W=(--url "$url" --config "$config" --state "$work/weak" --store files)
init=$(admin init '{"userId":"weak-user"}')
wid=$(jq -r .responseObject.activationId <<<"$init")
wqr="$(jq -r .responseObject.activationCode <<<"$init")#$(jq -r .responseObject.activationSignature <<<"$init")"
"$B" client activate "${W[@]}" --code "$wqr" --reject-weak --pin-fd 3 3<"$work/wrong" >/dev/null 2>"$work/err"
check "client activate --reject-weak with a weak PIN -> 1, nothing stored" 1 $? \
    "$(grep -q "refused: this PIN is weak (.*frequently-used" "$work/err" && [[ ! -e $work/weak/securepin-client.activation ]]
        echo $?)"
"$B" client activate "${W[@]}" --code "$wqr" --pin-fd 3 3<"$work/wrong" >/dev/null 2>"$work/err"
check "client activate with a weak PIN: activated, with a warning" 0 $? \
    "$(grep -q "warning: this PIN is weak (.*frequently-used.*); --reject-weak refuses such PINs" "$work/err"; echo $?)"
admin commit "{\"activationId\":\"$wid\"}" >/dev/null
printf '86420' >"$work/strong"
"$B" client change-pin "${W[@]}" --reject-weak --pin-fd 3 --new-pin-fd 4 3<"$work/strong" 4<"$work/pin" \
    >/dev/null 2>"$work/err"
check "client change-pin --reject-weak to a weak PIN -> 1" 1 $? "$(grep -q "refused: this PIN is weak" "$work/err"; echo $?)"
"$B" client status "${W[@]}" --json >"$work/st.json"
[[ $(field failedAttempts "$work/st.json") == 0 ]]
check "... refused before the current PIN was sent: nothing counted (the current PIN was wrong)" 0 0 $?
"$B" client change-pin "${W[@]}" --reject-weak --pin-fd 3 --new-pin-fd 4 3<"$work/wrong" 4<"$work/strong" \
    >/dev/null 2>"$work/err"
check "client change-pin --reject-weak to a strong PIN: changed, no warning" 0 $? \
    "$(! grep -q "weak" "$work/err"; echo $?)"
"$B" client validate "${W[@]}" --pin-fd 3 3<"$work/strong" >/dev/null 2>&1
check "the new PIN signs" 0 $?

# The PIN vault bound to this server: the record's identifier, the back office, and destroy
# with the PIN removing the record (a wrong PIN destroys nothing and is counted).
vadmin() { curl -s -XPOST "$url/admin/vault/$1" -H @"$work/admin.header" -d "{\"requestObject\":$2}"; }
V=(--vault "$work/vault")
printf 'refresh-token' | "$B" vault init "${V[@]}" --bind server --url "$url" --config "$config" -t 2 -k 19456 \
    --pin-fd 3 3<"$work/pin" >/dev/null 2>&1
check "vault init --bind server" 0 $?
"$B" vault status "${V[@]}" --json >"$work/vs.json"
vid=$(field server_vault_id "$work/vs.json")
[[ $vid =~ ^[0-9a-f]{32}$ ]]
check "vault status --json: the server record's identifier" 0 0 $?
"$B" vault unlock "${V[@]}" --pin-fd 3 3<"$work/wrong" >/dev/null 2>&1
"$B" vault unlock "${V[@]}" --pin-fd 3 3<"$work/wrong" >/dev/null 2>&1
[[ $(jq -r '.responseObject | "\(.state) \(.failures)"' <<<"$(vadmin detail "{\"vaultId\":\"$vid\"}")") == "ACTIVE 2" ]]
check "the back office sees the server's count for the vault" 0 0 $?
[[ $(jq -r .responseObject.failures <<<"$(vadmin unblock "{\"vaultId\":\"$vid\"}")") == 0 ]]
check "the back office's vault unblock resets the count" 0 0 $?
before=$(cd "$work/vault" && sha256sum vault key)
"$B" vault destroy "${V[@]}" --yes --pin-fd 3 3<"$work/wrong" >/dev/null 2>"$work/err"
check "vault destroy --pin-fd with a wrong PIN -> 1" 1 $?
[[ $(cd "$work/vault" && sha256sum vault key) == "$before" ]]
check "a wrong PIN destroys nothing" 0 0 $?
[[ $(jq -r .responseObject.failures <<<"$(vadmin detail "{\"vaultId\":\"$vid\"}")") == 1 ]]
check "the destroy's wrong PIN was counted by the server" 0 0 $?
"$B" vault destroy "${V[@]}" --yes --pin-fd 3 3<"$work/pin" >"$work/out"
check "vault destroy --pin-fd with the PIN" 0 $?
grep -q "^removed at the server: record $vid" "$work/out"
check "vault destroy: says the server record was removed" 0 0 $?
[[ $(jq -r .status <<<"$(vadmin detail "{\"vaultId\":\"$vid\"}")") == ERROR ]]
check "the back office no longer knows the destroyed vault" 0 0 $?

echo "client: $passed passed, $failed failed"
[[ $failed == 0 ]]
