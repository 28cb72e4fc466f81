#!/usr/bin/env bash
# The keyring suites against a real Secret Service: a private session bus (dbus-run-session) and a
# throw-away gnome-keyring-daemon whose data and runtime directories are in BUILD_DIR, unlocked
# with a test password given on standard input. Then, against it:
#   1. the Swift storage suites with the keyring case on (SECUREPIN_TEST_KEYRING=1);
#   2. securepin client against securepin server with --store keyring: `secret-tool search` finds
#      the items under the configured names, and no secret is in any file the client wrote;
#   3. client migrate-store moves a file activation to the keyring;
#   4. the biometry factor in the keyring (V3.3, and V4 against a second, EC_P384 server):
#      client biometry-add, a possession_biometry signature, biometry-remove; refused on files;
#   5. the keychain names given on the command line (--keychain-* NAME, --possession-key,
#      --biometry-key): secret-tool search finds the items under them and nothing under the seed's;
#   6. securepin vault --store keyring: the files in the vault directory, a pepper in the keyring;
#      a copy of the directory without the keyring does not open; destroy removes both; vault
#      migrate-store moves a file vault, and the old vault file no longer opens;
#   7. the login collection locked: the CLI and the Swift store give the typed "locked" error.
# The daemon, the server and the bus are stopped on exit, whatever happens.
# Usage: Tests/keyring/run.sh BUILD_DIR PATH/TO/securepin   (make test-keyring)
set -uo pipefail
BUILD=${1:?usage: run.sh BUILD_DIR PATH/TO/securepin}
B=${2:?usage: run.sh BUILD_DIR PATH/TO/securepin}
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
BUILD=$(mkdir -p "$BUILD" && cd "$BUILD" && pwd)
if [[ -z ${SECUREPIN_KEYRING_INSIDE:-} ]]; then
    # Everything below runs on a bus of its own, which ends with this script.
    SECUREPIN_KEYRING_INSIDE=1 exec dbus-run-session -- "$0" "$@"
fi

base=$BUILD/keyring-test
rm -rf "$base"
mkdir -p "$base/home/data" "$base/home/config" "$base/home/cache" "$base/run" "$base/work"
chmod 700 "$base/run" "$base/work"
work=$base/work
daemon_pid=
server_pid=
v4_pid=
cleanup() {
    [[ -n $server_pid ]] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    [[ -n $v4_pid ]] && kill -TERM "$v4_pid" 2>/dev/null && wait "$v4_pid" 2>/dev/null
    [[ -n $daemon_pid ]] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    rm -rf "$base"
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
has_owner() {
    dbus-send --session --dest=org.freedesktop.DBus --print-reply /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true'
}
secrets() { # method, args…: a call to the Secret Service
    local method=$1
    shift
    dbus-send --session --dest=org.freedesktop.secrets --print-reply /org/freedesktop/secrets \
        "org.freedesktop.Secret.Service.$method" "$@"
}
# secret-tool search without the secret lines: what a log may show.
search() { secret-tool search --all "$@" 2>&1 | grep -aE '^(\[|label|attribute\.|schema)'; }

# Anything the bus starts on demand would also keep its data in BUILD_DIR, never in the real home.
dbus-update-activation-environment HOME="$base/home" XDG_DATA_HOME="$base/home/data" \
    XDG_CONFIG_HOME="$base/home/config" XDG_CACHE_HOME="$base/home/cache" XDG_RUNTIME_DIR="$base/run"
check "the private bus starts services with the build folder as their home" 0 $?
# The daemon: its keyrings in BUILD_DIR, the login keyring created and unlocked with the test password.
printf 'securepin-test-password' | HOME=$base/home XDG_DATA_HOME=$base/home/data XDG_CONFIG_HOME=$base/home/config \
    XDG_CACHE_HOME=$base/home/cache XDG_RUNTIME_DIR=$base/run \
    gnome-keyring-daemon --foreground --unlock --components=secrets >"$base/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do has_owner && break; sleep 0.1; done
has_owner
check "gnome-keyring-daemon owns org.freedesktop.secrets on the private bus" 0 $?
collection=$(secrets ReadAlias string:default | sed -n 's/.*object path "\(.*\)"/\1/p')
[[ $collection == /org/freedesktop/secrets/collection/login ]]
check "the default collection is the unlocked login keyring ($collection)" 0 $?
[[ -f $base/home/data/keyrings/login.keyring ]]
check "the keyring's data is in the build folder" 0 $?

# 1. The Swift suites, the keyring case on.
SECUREPIN_TEST_KEYRING=1 ${SWIFT:-swift} test --skip-build --filter ActivationKeyringTests >"$work/swift.log" 2>&1
rc=$?
n=$(sed -n 's/.*Test run with \([0-9]*\) tests\{0,1\} in .* passed.*/\1/p' "$work/swift.log")
[[ $rc == 0 && -n $n ]] || { tail -40 "$work/swift.log" >&2; }
check "the Swift storage suites against files and the Secret Service ($n tests)" 0 $rc
[[ $rc == 0 && -n $n ]] && echo "keyring-swift (files and the Secret Service): $n passed, 0 failed"

# 2. securepin client against securepin server, --store keyring.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/admin.token"
chmod 600 "$work/admin.token"
printf 'X-SecurePIN-Admin-Token: %s\n' "$(cat "$work/admin.token")" >"$work/admin.header"
"$B" server --port 0 --db "$work/server.sqlite" --admin-token-file "$work/admin.token" >"$work/server.out" 2>/dev/null &
server_pid=$!
for _ in $(seq 100); do grep -q '^back office' "$work/server.out" && break; sleep 0.1; done
port=$(sed -n 's|.*listening on http://127.0.0.1:||p' "$work/server.out")
config=$(sed -n 's/^configuration: //p' "$work/server.out")
url="http://127.0.0.1:$port"
admin() { curl -s -XPOST "$url/admin/activation/$1" -H @"$work/admin.header" -d "{\"requestObject\":$2}"; }
code() { # a new activation: its code CODE#SIGNATURE in $qr, its id in $id
    local init
    init=$(admin init '{"userId":"keyring-user"}')
    id=$(jq -r .responseObject.activationId <<<"$init")
    qr="$(jq -r .responseObject.activationCode <<<"$init")#$(jq -r .responseObject.activationSignature <<<"$init")"
}
printf '2468' >"$work/pin"
printf '1357' >"$work/wrong"
C=(--url "$url" --config "$config" --state "$work/device")
S=io.getlime.PowerAuthKeychain

code
"$B" client activate "${C[@]}" --store keyring --code "$qr" --json --pin-fd 3 3<"$work/pin" >"$work/act.json"
check "client activate --store keyring" 0 $?
[[ $(jq -r .activationId "$work/act.json") == "$id" ]]
check "client activate: the server's activation id" 0 $?
admin commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client status "${C[@]}" --json >"$work/st.json"
check "client status (--store auto finds the keyring)" 0 $?
[[ $(jq -r .state "$work/st.json") == ACTIVE ]]
check "client status: ACTIVE" 0 $?
"$B" client validate "${C[@]}" --store keyring --pin-fd 3 3<"$work/pin" >/dev/null
check "client validate --store keyring (the counter moves in the keyring)" 0 $?
"$B" client token-create "${C[@]}" --store keyring --pin-fd 3 3<"$work/pin" --json >"$work/tok.json"
check "client token-create --store keyring" 0 $?
tok=$(jq -r .tokenId "$work/tok.json")

search service "$S.StatusKeychain" instance securepin-client >"$work/status.items"
grep -qx "attribute.key = securepin-client" "$work/status.items" &&
    grep -qx "attribute.access-group = private" "$work/status.items" &&
    grep -qx "schema = io.securepin.Keychain" "$work/status.items"
check "secret-tool search: the state under $S.StatusKeychain, key = the instance id" 0 $?
search service "$S.PossessionKeychain" key PA2KeychainKey_Possession instance securepin-client >"$work/possession.items"
[[ $(grep -cx "attribute.service = $S.PossessionKeychain" "$work/possession.items") == 1 ]]
check "secret-tool search: one possession item, key PA2KeychainKey_Possession" 0 $?
search service "$S.TokenStore" key "$tok" instance securepin-client >"$work/token.items"
[[ $(grep -cx "attribute.service = $S.TokenStore" "$work/token.items") == 1 ]]
check "secret-tool search: the token under $S.TokenStore, key = the token id" 0 $?
echo "secret-tool search service $S.StatusKeychain instance securepin-client (secret lines left out):"
cat "$work/status.items"
echo "secret-tool search service $S.PossessionKeychain instance securepin-client (secret lines left out):"
cat "$work/possession.items"

[[ $(ls -A "$work/device") == .lock ]]
check "the state directory holds only the (empty) lock file" 0 $?
python3 - "$work/device" "$tok" <<'PY'
import base64, os, subprocess, sys
directory, token = sys.argv[1], sys.argv[2]
def lookup(*attributes):
    return subprocess.run(["secret-tool", "lookup", *attributes], capture_output=True, check=True).stdout
keys = lookup("service", "io.getlime.PowerAuthKeychain.PossessionKeychain", "key", "PA2KeychainKey_Possession",
              "instance", "securepin-client")
blob = lookup("service", "io.getlime.PowerAuthKeychain.TokenStore", "key", token, "instance", "securepin-client")
assert keys[:5] == b"SPCK\x01" and len(keys) == 37, "the possession item is not the key blob"
assert blob[:5] == b"SPTK\x01", "the token item is not a token blob"
secrets = [keys[5:21], keys[21:37], blob[5:21]]
forms = [f for s in secrets for f in (s, s.hex().encode(), base64.b64encode(s), base64.b64encode(s).rstrip(b"="))]
checked = 0
for root, _, names in os.walk(directory):
    for name in names:
        data = open(os.path.join(root, name), "rb").read()
        checked += 1
        assert not any(f in data for f in forms), f"a secret is in {name}"
print(f"no secret (raw, hex or base64) in the {checked} file(s) the client wrote")
PY
check "no secret is in any file the client wrote" 0 $?

# An access group: the items carry it, and another group does not see them.
code
G=(--url "$url" --config "$config" --state "$work/grouped" --instance grouped.app)
"$B" client activate "${G[@]}" --store keyring --access-group com.example.shared --code "$qr" \
    --pin-fd 3 3<"$work/pin" >/dev/null
check "client activate --access-group com.example.shared" 0 $?
[[ $(search access-group com.example.shared instance grouped.app | grep -c '^attribute.access-group = com.example.shared$') == 2 ]]
check "secret-tool search access-group com.example.shared: the state and the keys" 0 $?
"$B" client status "${G[@]}" >/dev/null 2>"$work/err"
check "client status without the group does not see the activation -> 2" 2 $?
grep -q "no activation in the keyring" "$work/err"
check "client status: 'no activation in the keyring'" 0 $?

# 3. migrate-store: an activation made in files moves to the keyring.
code
M=(--url "$url" --config "$config" --state "$work/moving" --instance moving.app)
"$B" client activate "${M[@]}" --store files --code "$qr" --pin-fd 3 3<"$work/pin" >/dev/null
check "client activate --store files" 0 $?
admin commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client status "${M[@]}" >/dev/null
check "client status: --store auto keeps the files while they hold the activation" 0 $?
[[ -z $(search service "$S.StatusKeychain" instance moving.app) ]]
check "nothing of it in the keyring yet" 0 $?
"$B" client migrate-store --state "$work/moving" --instance moving.app --json >"$work/mig.json"
check "client migrate-store" 0 $?
[[ $(jq -r .moved "$work/mig.json") == 2 && $(ls -A "$work/moving") == .lock ]]
check "client migrate-store: state and keys moved, the files gone" 0 $?
[[ -n $(search service "$S.StatusKeychain" instance moving.app) ]]
check "secret-tool search finds the moved state" 0 $?
"$B" client validate "${M[@]}" --pin-fd 3 3<"$work/pin" >/dev/null
check "client validate after the move (auto: the keyring)" 0 $?
"$B" client migrate-store --state "$work/moving" --instance moving.app >/dev/null
check "client migrate-store again: nothing left to move -> 0" 0 $?
"$B" client migrate-store --state "$work/empty" --instance nothing.here >/dev/null 2>&1
check "client migrate-store with no activation anywhere -> 2" 2 $?
[[ ! -e $work/empty ]]
check "client migrate-store with no activation: no state directory created" 0 $?

# 4. The biometry factor: its key in the keyring under the biometry names, the unlocked login
# keyring its gate (there is no sensor; the CLI says so and reports biometryType loginKeyring).
biometry_story() { # label, extra client options...: activate, add, sign, remove
    local label=$1 instance=$2
    shift 2
    local Bi=(--url "$url" --config "$config" --state "$work/bio-$instance" --instance "$instance" --store keyring "$@")
    code
    "$B" client activate "${Bi[@]}" --code "$qr" --pin-fd 3 3<"$work/pin" >/dev/null
    check "$label: client activate --store keyring" 0 $?
    admin commit "{\"activationId\":\"$id\"}" >/dev/null
    "$B" client validate "${Bi[@]}" --factors possession_biometry >/dev/null 2>"$work/err"
    check "$label: validate --factors possession_biometry before biometry-add -> 2" 2 $?
    grep -q "biometry factor is not added" "$work/err"
    check "$label: validate says the factor is not added" 0 $?
    "$B" client biometry-add "${Bi[@]}" --json --pin-fd 3 3<"$work/pin" >"$work/bio.json"
    check "$label: client biometry-add" 0 $?
    [[ $(jq -r .biometryConfigured "$work/bio.json") == true && $(jq -r .biometryType "$work/bio.json") == loginKeyring &&
        $(jq -r .systemStatus "$work/bio.json") == available ]]
    check "$label: biometry-add reports the truth: biometryType loginKeyring, available" 0 $?
    search service "$S.BiometryKeychain" key "$instance" instance "$instance" >"$work/bio.items"
    [[ $(grep -cx "attribute.service = $S.BiometryKeychain" "$work/bio.items") == 1 ]] &&
        grep -qx "attribute.key = $instance" "$work/bio.items"
    check "$label: secret-tool search: one item under $S.BiometryKeychain, key = the instance id" 0 $?
    echo "secret-tool search service $S.BiometryKeychain instance $instance (secret lines left out):"
    cat "$work/bio.items"
    "$B" client validate "${Bi[@]}" --factors possession_biometry --json >"$work/v.json"
    check "$label: validate --factors possession_biometry (the keyring's key) -> 0" 0 $?
    [[ $(jq -r .factors "$work/v.json") == possession_biometry && $(jq -r .accepted "$work/v.json") == true ]]
    check "$label: the server accepted a possession_biometry signature" 0 $?
    "$B" client biometry-remove "${Bi[@]}" --json >"$work/bio.json"
    check "$label: client biometry-remove" 0 $?
    [[ $(jq -r .biometryConfigured "$work/bio.json") == false && -z $(search service "$S.BiometryKeychain" instance "$instance") ]]
    check "$label: biometry-remove: the factor is off and the keyring item is gone" 0 $?
    "$B" client validate "${Bi[@]}" --factors possession_biometry >/dev/null 2>&1
    check "$label: validate --factors possession_biometry after biometry-remove -> 2" 2 $?
    "$B" client validate "${Bi[@]}" --pin-fd 3 3<"$work/pin" >/dev/null
    check "$label: the PIN still signs after biometry-remove" 0 $?
}
biometry_story "V3.3" bio.v3
"$B" client biometry-add "${C[@]}" --store keyring --pin-fd 3 3<"$work/wrong" >/dev/null 2>&1
check "client biometry-add with a wrong PIN -> 1 (the server counted it)" 1 $?
[[ -z $(search service "$S.BiometryKeychain" instance securepin-client) ]]
check "client biometry-add with a wrong PIN: no biometry item" 0 $?
"$B" client validate "${C[@]}" --store keyring --pin-fd 3 3<"$work/pin" >/dev/null
check "the right PIN after the wrong one" 0 $?

# On files there is no gate for a key: biometry-add is refused, and nothing is written.
code
F=(--url "$url" --config "$config" --state "$work/filebio" --instance filebio.app --store files)
"$B" client activate "${F[@]}" --code "$qr" --pin-fd 3 3<"$work/pin" >/dev/null
check "client activate --store files (for biometry-add)" 0 $?
admin commit "{\"activationId\":\"$id\"}" >/dev/null
ls -A "$work/filebio" >"$work/before"
"$B" client biometry-add "${F[@]}" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "client biometry-add --store files -> 2" 2 $?
grep -q "the biometry factor needs the keyring (--store keyring)" "$work/err"
check "client biometry-add --store files: says the factor needs the keyring" 0 $?
ls -A "$work/filebio" | diff -q - "$work/before" >/dev/null &&
    [[ -z $(search service "$S.BiometryKeychain" instance filebio.app) ]]
check "client biometry-add --store files: no file and no item written" 0 $?
"$B" client validate "${F[@]}" --factors possession_biometry >/dev/null 2>&1
check "client validate --store files --factors possession_biometry -> 2" 2 $?

# V4: a second server, EC_P384.
"$B" server --port 0 --db "$work/v4.sqlite" --admin-token-file "$work/admin.token" --algorithm EC_P384 \
    >"$work/v4.out" 2>/dev/null &
v4_pid=$!
for _ in $(seq 100); do grep -q '^back office' "$work/v4.out" && break; sleep 0.1; done
legacy_url=$url
legacy_config=$config
url="http://127.0.0.1:$(sed -n 's|.*listening on http://127.0.0.1:||p' "$work/v4.out")"
config=$(sed -n 's/^configuration: //p' "$work/v4.out")
grep -q '^algorithm: EC_P384$' "$work/v4.out"
check "securepin server --algorithm EC_P384 starts" 0 $?
biometry_story "V4" bio.v4 --algorithm EC_P384
url=$legacy_url
config=$legacy_config

# 5. The keychain names from the command line.
N=(--url "$url" --config "$config" --state "$work/named" --instance named.app --store keyring
    --keychain-status test.Status --keychain-possession test.Possession --keychain-biometry test.Biometry
    --keychain-token-store test.Tokens --possession-key test.PossessionKey --biometry-key test.BiometryKey)
code
"$B" client activate "${N[@]}" --code "$qr" --pin-fd 3 3<"$work/pin" >/dev/null
check "client activate with every keychain name given" 0 $?
admin commit "{\"activationId\":\"$id\"}" >/dev/null
"$B" client token-create "${N[@]}" --pin-fd 3 3<"$work/pin" --json >"$work/tok.json"
check "client token-create under the given names" 0 $?
ntok=$(jq -r .tokenId "$work/tok.json")
"$B" client biometry-add "${N[@]}" --pin-fd 3 3<"$work/pin" >/dev/null
check "client biometry-add under the given names" 0 $?
search instance named.app >"$work/named.items"
for pair in "test.Status named.app" "test.Possession test.PossessionKey" "test.Tokens $ntok" \
    "test.Biometry test.BiometryKey"; do
    read -r service key <<<"$pair"
    [[ $(search service "$service" key "$key" instance named.app | grep -cx "attribute.service = $service") == 1 ]]
    check "secret-tool search service $service key $key: the item is there" 0 $?
done
! grep -q "io.getlime" "$work/named.items"
check "secret-tool search instance named.app: nothing under the seed's names" 0 $?
echo "secret-tool search instance named.app (secret lines left out):"
cat "$work/named.items"
"$B" client validate "${N[@]}" --factors possession_biometry >/dev/null
check "client validate --factors possession_biometry under the given names" 0 $?
"$B" client status --url "$url" --config "$config" --state "$work/named" --instance named.app --store keyring \
    >/dev/null 2>&1
check "client status with the seed's names does not see it -> 2" 2 $?
"$B" client status "${N[@]}" --keychain-status "" >/dev/null 2>"$work/err"
check "an empty keychain name is refused -> 2" 2 $?

# 6. The vault: its files in DIR (the key file destroyed in place is the promised erasure), its
# pepper in the keyring (the PIN slot and the failure record need it).
P=io.securepin.VaultPepper
KDF=(-t 2 -k 19456)
nobus() { env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR=/nonexistent "$@"; }
printf 'vault-secret-42' | "$B" vault init --vault "$work/vk" --store keyring "${KDF[@]}" --pin-fd 3 \
    3<"$work/pin" >"$work/vinit.out"
check "vault init --store keyring" 0 $?
vid=$(sed -n 's/.*its pepper in the keyring: service .*, key \([0-9a-f]*\))$/\1/p' "$work/vinit.out")
[[ ${#vid} == 32 ]]
check "vault init names the pepper item's key, the vault's identifier ($vid)" 0 $?
search service "$P" key "$vid" instance securepin-vault >"$work/vault.items"
[[ $(grep -cx "attribute.service = $P" "$work/vault.items") == 1 ]]
check "secret-tool search: one pepper item under $P, key = the vault's identifier" 0 $?
echo "secret-tool search service $P key $vid (secret lines left out):"
cat "$work/vault.items"
[[ $("$B" vault unlock --vault "$work/vk" --pin-fd 3 3<"$work/pin") == vault-secret-42 ]]
check "vault unlock (--store auto finds the pepper in the keyring)" 0 $?
"$B" vault status --vault "$work/vk" --json >"$work/vst.json"
[[ $(jq -r .store "$work/vst.json") == keyring && $(jq -r .keyring_item "$work/vst.json") == "$P $vid" ]]
check "vault status --json: store keyring, the item" 0 $?
"$B" vault unlock --vault "$work/vk" --store files --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "vault unlock --store files of a keyring vault -> 2" 2 $?
grep -q "keeps its pepper in the keyring" "$work/err"
check "vault unlock --store files: says the pepper is in the keyring" 0 $?
python3 - "$work/vk" "$vid" <<'PY'
import base64, os, subprocess, sys
directory, vid = sys.argv[1], sys.argv[2]
pepper = subprocess.run(["secret-tool", "lookup", "service", "io.securepin.VaultPepper", "key", vid,
                         "instance", "securepin-vault"], capture_output=True, check=True).stdout
assert len(pepper) == 32, "the pepper item is not 32 bytes"
forms = [pepper, pepper.hex().encode(), base64.b64encode(pepper), base64.b64encode(pepper).rstrip(b"=")]
for name in os.listdir(directory):
    data = open(os.path.join(directory, name), "rb").read()
    assert not any(f in data for f in forms), f"the pepper is in {name}"
PY
check "the pepper (raw, hex or base64) is in no file of the vault directory" 0 $?
cp -a "$work/vk" "$work/vk-copy"
nobus "$B" vault unlock --vault "$work/vk-copy" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "a copy of the directory without the keyring does not open -> 1" 1 $?
"$B" vault unlock --vault "$work/vk-copy" --keychain-vault other.Service --pin-fd 3 3<"$work/pin" \
    >/dev/null 2>"$work/err"
check "a keyring without its pepper item does not open it -> 2" 2 $?
grep -q "holds no pepper for the vault" "$work/err"
check "vault unlock: the keyring holds no pepper for it" 0 $?
"$B" vault destroy --vault "$work/vk-copy" --keychain-vault other.Service --yes >"$work/vdestroy.out"
check "a vault whose pepper the keyring lacks (an interrupted init) is still destroyed" 0 $?
grep -q "^no pepper in the keyring for this vault" "$work/vdestroy.out" && [[ ! -e $work/vk-copy ]] &&
    [[ -n $(search service "$P" key "$vid") ]]
check "vault destroy without the item: the files gone, the original's item untouched" 0 $?
# The vault's biometric slot: its key in the login keyring, the authenticator client biometry-add
# uses; unlock --biometry needs no PIN; without a keyring a typed refusal; remove drops the item.
printf 'bio-secret' | "$B" vault init --vault "$work/vb" --store files "${KDF[@]}" --pin-fd 3 3<"$work/pin" \
    >/dev/null 2>&1
nobus "$B" vault biometry-add --vault "$work/vb" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "vault biometry-add without a keyring -> 1, saying why" 1 $? \
    "$(grep -q "the biometric slot needs the login keyring (Secret Service); nothing was changed" "$work/err"; echo $?)"
"$B" vault unlock --vault "$work/vb" --biometry >/dev/null 2>"$work/err"
check "vault unlock --biometry before a slot exists -> refused, saying so" 1 $? \
    "$(grep -q "has no biometric slot (vault biometry-add adds one)" "$work/err"; echo $?)"
"$B" vault biometry-add --vault "$work/vb" --pin-fd 3 3<"$work/pin" >"$work/out" 2>"$work/err"
check "vault biometry-add with the PIN" 0 $? "$(grep -q "^biometric slot: added" "$work/out"; echo $?)"
[[ -n $(search service io.getlime.PowerAuthKeychain.BiometryKeychain instance securepin-vault) ]]
check "the slot's key is an item of the login keyring" 0 0 $?
[[ $("$B" vault unlock --vault "$work/vb" --biometry </dev/null) == bio-secret ]]
check "vault unlock --biometry: the secret, no PIN asked" 0 $?
"$B" vault biometry-add --vault "$work/vb" --pin-fd 3 3<"$work/wrong" >/dev/null 2>&1
check "vault biometry-add with a wrong PIN -> 1 (counted like an unlock)" 1 $?
"$B" vault biometry-remove --vault "$work/vb" >"$work/out" 2>"$work/err"
check "vault biometry-remove" 0 $? "$(grep -q "^biometric slot: removed" "$work/out"; echo $?)"
[[ -z $(search service io.getlime.PowerAuthKeychain.BiometryKeychain instance securepin-vault) ]]
check "... and its keyring item is gone" 0 0 $?
"$B" vault unlock --vault "$work/vb" --biometry >/dev/null 2>&1
check "vault unlock --biometry after the removal -> refused" 1 $?
[[ $("$B" vault unlock --vault "$work/vb" --pin-fd 3 3<"$work/pin") == bio-secret ]]
check "the PIN keeps working" 0 $?

printf '8642' >"$work/newpin"
"$B" vault change-pin --vault "$work/vk" --pin-fd 3 --new-pin-fd 4 3<"$work/pin" 4<"$work/newpin" >/dev/null
check "vault change-pin of a keyring vault" 0 $?
[[ $("$B" vault unlock --vault "$work/vk" --pin-fd 3 3<"$work/newpin") == vault-secret-42 ]]
check "vault unlock with the new PIN" 0 $?
"$B" vault destroy --vault "$work/vk" --yes >"$work/vdestroy.out"
check "vault destroy of a keyring vault" 0 $?
grep -q "removed from the keyring: the pepper (service $P, key $vid)" "$work/vdestroy.out" &&
    [[ ! -e $work/vk && -z $(search service "$P" key "$vid") ]]
check "vault destroy: the files and the pepper item are gone" 0 $?

printf 'moved-secret' | "$B" vault init --vault "$work/vm" --store files "${KDF[@]}" --pin-fd 3 3<"$work/pin" \
    >/dev/null
check "vault init --store files" 0 $?
cp "$work/vm/vault" "$work/vm-old-vault"
"$B" vault migrate-store --vault "$work/vm" --pin-fd 3 3<"$work/pin" >"$work/vmig.out"
check "vault migrate-store" 0 $?
mid=$(sed -n 's/.*key \([0-9a-f]\{32\}\))$/\1/p' "$work/vmig.out")
[[ -n $(search service "$P" key "$mid") ]]
check "vault migrate-store: the pepper item is in the keyring ($mid)" 0 $?
[[ $("$B" vault unlock --vault "$work/vm" --pin-fd 3 3<"$work/pin") == moved-secret ]]
check "vault unlock after migrate-store" 0 $?
nobus "$B" vault unlock --vault "$work/vm" --pin-fd 3 3<"$work/pin" >/dev/null 2>&1
check "after migrate-store the directory alone does not open -> 1" 1 $?
cp -a "$work/vm" "$work/vm-rolled-back"
cp "$work/vm-old-vault" "$work/vm-rolled-back/vault"
nobus "$B" vault unlock --vault "$work/vm-rolled-back" --store files --pin-fd 3 3<"$work/pin" >/dev/null 2>&1
check "the vault file from before migrate-store no longer opens (its key half destroyed) -> 2" 2 $?
"$B" vault migrate-store --vault "$work/vm" --pin-fd 3 3<"$work/pin" >"$work/vmig.out"
check "vault migrate-store again -> 0" 0 $?
grep -q "^already in the keyring" "$work/vmig.out"
check "vault migrate-store again: already in the keyring" 0 $?

# 7. The collection locked: a typed error, never "no activation".
secrets Lock "array:objpath:$collection" >/dev/null
check "the login collection is locked" 0 $?
"$B" client status "${C[@]}" --store keyring >/dev/null 2>"$work/err"
check "client status --store keyring on a locked keyring -> 3" 3 $?
grep -q "is locked: unlock it" "$work/err" && ! grep -q "no activation" "$work/err"
check "client status: the keyring is locked (not 'no activation')" 0 $?
"$B" client status "${C[@]}" >/dev/null 2>&1
check "client status (auto) on a locked keyring -> 3" 3 $?
"$B" client biometry-add "${C[@]}" --store keyring --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "client biometry-add on a locked keyring -> 3" 3 $?
"$B" vault unlock --vault "$work/vm" --pin-fd 3 3<"$work/pin" >/dev/null 2>"$work/err"
check "vault unlock of a keyring vault on a locked keyring -> 3" 3 $?
grep -q "is locked: unlock it" "$work/err"
check "vault unlock: the keyring is locked" 0 $?
printf 'x' | "$B" vault init --vault "$work/vl" --store keyring "${KDF[@]}" --pin-fd 3 3<"$work/pin" \
    >/dev/null 2>&1
check "vault init --store keyring on a locked keyring -> 3" 3 $?
[[ ! -e $work/vl ]]
check "vault init on a locked keyring: no directory created" 0 $?
printf 'y' | "$B" vault init --vault "$work/vl2" --store files "${KDF[@]}" --pin-fd 3 3<"$work/pin" >/dev/null
"$B" vault migrate-store --vault "$work/vl2" --pin-fd 3 3<"$work/pin" >/dev/null 2>&1
check "vault migrate-store on a locked keyring -> 3" 3 $?
[[ $("$B" vault unlock --vault "$work/vl2" --pin-fd 3 3<"$work/pin") == y ]]
check "vault migrate-store on a locked keyring: the vault still opens from its files" 0 $?
"$B" client validate "${N[@]}" --factors possession_biometry >/dev/null 2>"$work/err"
check "client validate --factors possession_biometry on a locked keyring -> 3" 3 $?
grep -q "is locked: unlock it" "$work/err"
check "client validate (biometry): the keyring is locked" 0 $?
SECUREPIN_TEST_KEYRING=1 SECUREPIN_TEST_KEYRING_LOCKED=1 ${SWIFT:-swift} test --skip-build \
    --filter LockedKeyringTests >"$work/locked.log" 2>&1
rc=$?
grep -q 'Test run with 1 test ' "$work/locked.log" || rc=1
[[ $rc == 0 ]] || tail -20 "$work/locked.log" >&2
check "the Swift store on a locked collection: storageLocked from every operation" 0 $rc

echo "keyring: $passed passed, $failed failed"
[[ $failed == 0 ]]
