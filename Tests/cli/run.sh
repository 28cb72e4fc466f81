#!/usr/bin/env bash
# CLI tests: commands and the output and exit codes a user sees.
# Usage: Tests/cli/run.sh PATH/TO/securepin
set -uo pipefail
B=${1:?usage: run.sh PATH/TO/securepin}
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B") # absolute: some checks run from other directories
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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

salt=30313233343536373839616263646566 # "0123456789abcdef"

# kdf hash: the same bytes as Debian's argon2 tool, raw and encoded.
for params in "-t 1 -k 64 -p 1" "-t 3 -k 4096 -p 2" "-t 2 -k 1024 -p 4 -l 48"; do
    # shellcheck disable=SC2086
    ours=$(printf 'cli password' | "$B" kdf hash --salt-hex $salt $params)
    code=$?
    # shellcheck disable=SC2086
    theirs=$(printf 'cli password' | argon2 0123456789abcdef -id ${params//-k/-k} -r)
    [[ $ours == "$theirs" ]]
    check "kdf hash matches argon2 ($params)" 0 $code $?
done
ours=$(printf 'pw' | "$B" kdf hash --salt-hex $salt -t 2 -k 256 -p 1 --encoded)
theirs=$(printf 'pw' | argon2 0123456789abcdef -id -t 2 -k 256 -p 1 -e)
[[ $ours == "$theirs" ]]
check "kdf hash --encoded matches argon2 -e" 0 0 $?

# kdf hash: bad input is exit 2 with one line, and no output.
for bad in "--salt-hex zz -t 1 -k 64" "--salt-hex 00 -t 1 -k 64" "--salt-hex $salt -t 0 -k 64" \
    "--salt-hex $salt -t 1 -k 4" "--salt-hex $salt -t 1 -k 99999999" "--salt-hex $salt -t 1 -k 64 -l 8" \
    "--salt-hex $salt -t 1 -k 64 --bogus"; do
    # shellcheck disable=SC2086
    out=$(printf 'x' | "$B" kdf hash $bad 2>"$work/err")
    code=$?
    [[ -z $out && $(wc -l <"$work/err") -eq 1 ]]
    check "kdf hash $bad -> exit 2, one line" 2 $code $?
done
printf '' | "$B" kdf hash --salt-hex $salt -t 1 -k 64 >/dev/null 2>&1
check "kdf hash refuses an empty password" 2 $?
printf '\xff\xfe' | "$B" kdf hash --salt-hex $salt -t 1 -k 64 >/dev/null 2>&1
check "kdf hash refuses non-UTF-8" 2 $?

# kdf tune --json has the documented fields.
json=$("$B" kdf tune --target-ms 30 --max-memory 64M --json)
check "kdf tune runs" 0 $?
for field in memory_kib iterations parallelism backend measured_ms target_ms; do
    grep -q "\"$field\"" <<<"$json"
    check "kdf tune --json has $field" 0 0 $?
done

# vault: init, unlock, wrong PIN, change-pin, status, destroy.
v="$work/vault"
printf 'the secret' | "$B" vault init --vault "$v" --pin-fd 3 -t 2 -k 19456 3<<<"2468" >/dev/null
check "vault init" 0 $?
[[ $(stat -c %a "$v") == 700 && $(stat -c %a "$v/vault") == 600 ]]
check "vault modes 0700/0600" 0 0 $?
out=$("$B" vault unlock --vault "$v" --pin-fd 3 3<<<"2468")
check "vault unlock" 0 $?
[[ $out == "the secret" ]]
check "vault unlock prints the secret" 0 0 $?
"$B" vault unlock --vault "$v" --pin-fd 3 3<<<"1111" >/dev/null 2>"$work/err"
check "vault unlock wrong PIN -> 1" 1 $?
grep -q "wrong PIN (19 attempts remaining)" "$work/err"
check "wrong PIN message" 0 0 $?
"$B" vault status --vault "$v" --json >"$work/status"
check "vault status --json" 0 $?
grep -q '"failures":1' "$work/status" && grep -q '"state":"ready"' "$work/status" && grep -q '"next_attempt_at"' "$work/status"
check "status fields" 0 0 $?
"$B" vault change-pin --vault "$v" --pin-fd 3 --new-pin-fd 4 3<<<"2468" 4<<<"1357" >/dev/null
check "vault change-pin" 0 $?
"$B" vault unlock --vault "$v" --pin-fd 3 3<<<"2468" >/dev/null 2>&1
check "old PIN refused after change" 1 $?
out=$("$B" vault unlock --vault "$v" --pin-fd 3 3<<<"1357")
[[ $out == "the secret" ]]
check "new PIN opens" 0 $? 
for _ in 1 2 3 4 5; do "$B" vault unlock --vault "$v" --pin-fd 3 3<<<"0000" >/dev/null 2>&1; done
"$B" vault unlock --vault "$v" --pin-fd 3 3<<<"1357" >/dev/null 2>"$work/err"
check "throttled -> 3" 3 $?
grep -q "try again in 60 s" "$work/err"
check "throttle message" 0 0 $?
cp "$v/vault" "$work/saved"
printf 'garbage' >"$v/vault"
"$B" vault unlock --vault "$v" --pin-fd 3 3<<<"1357" >/dev/null 2>"$work/err"
check "garbage vault -> 2" 2 $?
grep -q "not a SecurePIN vault file" "$work/err"
check "garbage message" 0 0 $?
cp "$work/saved" "$v/vault"
printf 'x' | "$B" vault init --vault "$v" --pin-fd 3 -t 2 -k 19456 3<<<"2468" >/dev/null 2>&1
check "init over an existing vault -> 2" 2 $?
"$B" vault unlock --vault "$work/none" --pin-fd 3 3<<<"1" >/dev/null 2>&1
check "no vault -> 2" 2 $?
"$B" vault unlock --vault "$v" --pin-fd 3 3<<<"12a4" >/dev/null 2>&1
check "still throttled: refused without counting" 3 $?
"$B" vault destroy --vault "$v" </dev/null >/dev/null 2>"$work/err"
check "vault destroy without a terminal and without --yes -> 2" 2 $?
grep -q "not a terminal; pass --yes" "$work/err" && [[ -f $v/vault ]]
check "vault destroy refused: says why, destroys nothing" 0 0 $?
"$B" vault destroy --vault "$v" --yes >"$work/out"
check "vault destroy --yes" 0 $?
[[ ! -e $v ]] && grep -q "removed directory: $v (created by vault init)" "$work/out" &&
    grep -q "overwritten in place and removed: key, vault, failures, created-directory, lock" "$work/out"
check "vault directory gone, and destroy says exactly what it removed" 0 0 $?

# vault init never takes over a directory it did not create, and destroy leaves such a directory.
own="$work/existing"
mkdir -m 0700 "$own"
printf 's' | "$B" vault init --vault "$own" --pin-fd 3 -t 2 -k 19456 3<<<"2468" >/dev/null
check "vault init in an empty directory of mine (0700)" 0 $?
(cd "$own" && "$B" vault destroy --vault . --yes >"$work/out")
check "vault destroy --vault . (the current directory)" 0 $?
[[ -d $own && -z $(ls -A "$own") ]] && grep -q "kept directory: \." "$work/out"
check "destroy keeps a directory init did not create, and empties only the vault's files" 0 0 $?
rmdir "$own"
open="$work/open"
mkdir -m 0755 "$open"
printf 's' | "$B" vault init --vault "$open" --pin-fd 3 -t 2 -k 19456 3<<<"2468" >/dev/null 2>"$work/err"
check "vault init refuses a directory open to group/others -> 2" 2 $?
[[ $(stat -c %a "$open") == 755 && -z $(ls -A "$open") ]] && grep -q "open to the group or others" "$work/err"
check "the refused directory keeps its mode and stays empty" 0 0 $?
full="$work/full"
mkdir -m 0700 "$full"
echo keep >"$full/notes.txt"
printf 's' | "$B" vault init --vault "$full" --pin-fd 3 -t 2 -k 19456 3<<<"2468" >/dev/null 2>"$work/err"
check "vault init refuses a non-empty directory -> 2" 2 $?
[[ $(ls -A "$full") == notes.txt && $(cat "$full/notes.txt") == keep ]] && grep -q "is not empty" "$work/err"
check "the non-empty directory is untouched" 0 0 $?
made="$work/made"
printf 's' | "$B" vault init --vault "$made" --pin-fd 3 -t 2 -k 19456 3<<<"2468" >/dev/null
echo mine >"$made/notes.txt"
"$B" vault destroy --vault "$made" --yes >"$work/out"
check "vault destroy with a foreign file in the vault's directory" 0 $?
[[ $(ls -A "$made") == notes.txt ]] && grep -q "kept directory" "$work/out"
check "destroy removes only the vault's files, not the user's" 0 0 $?
dmg="$work/damaged"
printf 's' | "$B" vault init --vault "$dmg" --pin-fd 3 -t 2 -k 19456 3<<<"2468" >/dev/null
head -c 104 /dev/zero >"$dmg/key" # what a destroy interrupted after its first step leaves
"$B" vault destroy --vault "$dmg" --yes >/dev/null 2>&1
check "vault destroy finishes an interrupted destroy (damaged vault)" 0 $?
[[ ! -e $dmg ]]
check "the interrupted vault is gone" 0 0 $?
(cd "$work" && printf 's' | "$B" vault init --vault new-here --pin-fd 3 -t 2 -k 19456 3<<<"2468" >/dev/null &&
    cd new-here && "$B" vault destroy --vault . --yes >"$work/out")
check "vault destroy --vault . on a directory init created" 0 $?
[[ ! -e $work/new-here ]] && grep -q "removed directory: \." "$work/out"
check "the directory init created is removed, even as ." 0 0 $?

# pin check.
"$B" pin check --pin-fd 0 <<<"1234" >/dev/null
check "pin check 1234 warns" 3 $?
"$B" pin check --pin-fd 0 --reject --json <<<"1111" >"$work/out"
check "pin check --reject 1111" 4 $?
grep -q '"verdict":"reject"' "$work/out"
check "pin check json verdict" 0 0 $?
"$B" pin check --pin-fd 0 <<<"12x4" >/dev/null 2>&1
check "pin check non-digit -> 1" 1 $?

# demo --interactive: the two PINs typed on the terminal pad (in tmux), only dots on screen.
if command -v tmux >/dev/null; then
    sock="$work/tmux.sock"
    tmux -S "$sock" new-session -d -x 160 -y 50 "$B demo --interactive; echo DEMO-EXIT=\$?; sleep 60"
    sleep 1.5
    tmux -S "$sock" send-keys 2 5 8 0 Enter
    sleep 0.7
    tmux -S "$sock" send-keys 3 6 9 0 Enter
    for _ in $(seq 1 90); do
        tmux -S "$sock" capture-pane -p >"$work/screen"
        grep -q "DEMO-EXIT=" "$work/screen" && break
        sleep 1
    done
    tmux -S "$sock" kill-server 2>/dev/null
    grep -q "DEMO-EXIT=0" "$work/screen" && grep -q "All 24 steps behaved as expected" "$work/screen"
    check "demo --interactive with PINs typed on the pad" 0 0 $?
    [[ $(grep -c '^Choose.*: ••••$' "$work/screen") == 2 ]] && ! grep '^Choose' "$work/screen" | grep -q '[0-9]'
    check "demo --interactive shows dots, never the typed digits" 0 0 $?

    # vault destroy on a terminal asks first: anything but "yes" destroys nothing.
    tv="$work/tty-vault"
    printf 's' | "$B" vault init --vault "$tv" --pin-fd 3 -t 2 -k 19456 3<<<"2468" >/dev/null
    for answer in no yes; do
        tmux -S "$sock" new-session -d -x 160 -y 20 "$B vault destroy --vault $tv; echo DESTROY-EXIT=\$?; sleep 30"
        for _ in $(seq 1 50); do
            tmux -S "$sock" capture-pane -p >"$work/screen"
            grep -q "Type 'yes' to confirm" "$work/screen" && break
            sleep 0.1
        done
        tmux -S "$sock" send-keys "$answer" Enter
        for _ in $(seq 1 50); do
            tmux -S "$sock" capture-pane -p >"$work/screen"
            grep -q "DESTROY-EXIT=" "$work/screen" && break
            sleep 0.1
        done
        tmux -S "$sock" kill-server 2>/dev/null
        if [[ $answer == no ]]; then
            grep -q "DESTROY-EXIT=2" "$work/screen" && grep -q "not confirmed; nothing was destroyed" "$work/screen" &&
                [[ -f $tv/vault ]]
            check "vault destroy on a terminal, answered no: nothing destroyed" 0 0 $?
        else
            grep -q "DESTROY-EXIT=0" "$work/screen" && [[ ! -e $tv ]]
            check "vault destroy on a terminal, answered yes: destroyed" 0 0 $?
        fi
    done
else
    echo "skipped: demo --interactive (tmux is not installed)"
fi

# demo: its scratch directory comes from mkdtemp (0700, unpredictable name) and is gone after Ctrl-C.
mkdir -p "$work/demo-tmp"
TMPDIR="$work/demo-tmp" "$B" demo >"$work/demo-int.out" 2>&1 &
demo_pid=$!
for _ in $(seq 1 100); do
    scratch=$(find "$work/demo-tmp" -mindepth 1 -maxdepth 1 -name 'securepin-demo-??????' 2>/dev/null | head -1)
    [[ -n $scratch && -e $scratch/server/server.sqlite ]] && break
    sleep 0.1
done
[[ -n $scratch && $(stat -c %a "$scratch") == 700 ]]
check "demo makes its scratch directory with mkdtemp, mode 0700" 0 0 $?
kill -INT $demo_pid
wait $demo_pid
code=$?
sleep 0.3
[[ -z $(ls -A "$work/demo-tmp") ]] && ! pgrep -f "server --port 0 --db $scratch" >/dev/null
check "demo interrupted: exit 130, scratch directory and its server gone" 130 $code $?

# Every securepin process is non-dumpable with a core limit of 0 (review M3): another process of
# the same (non-root) user cannot read its memory or environment; a control process of that
# user can be read, so the check cannot pass by reading nothing.
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
    as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
    nobody_dir=$(mktemp -d) && chmod 777 "$nobody_dir"
    "${as_nobody[@]}" "$B" server --port 0 --db "$nobody_dir/s.sqlite" >"$nobody_dir/out" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 100); do grep -q "listening" "$nobody_dir/out" && break; sleep 0.1; done
    "${as_nobody[@]}" sleep 30 &
    control_pid=$!
    sleep 0.2
    "${as_nobody[@]}" cat "/proc/$control_pid/environ" >/dev/null 2>&1
    control=$?
    "${as_nobody[@]}" cat "/proc/$server_pid/environ" >/dev/null 2>&1
    hardened=$?
    [[ $control == 0 && $hardened != 0 ]] && grep -Eq '^Max core file size +0 +0 ' "/proc/$server_pid/limits"
    check "securepin server is non-dumpable with no core limit (same-user read refused)" 0 0 $?
    kill $server_pid $control_pid 2>/dev/null
    wait $server_pid $control_pid 2>/dev/null
    rm -rf "$nobody_dir"
else
    echo "skipped: non-dumpable check (needs root and setpriv)"
fi

# usage errors.
"$B" bogus >/dev/null 2>&1
check "unknown command -> 2" 2 $?
"$B" vault unlock >/dev/null 2>&1
check "missing --vault -> 2" 2 $?

echo "cli: $passed passed, $failed failed"
[[ $failed == 0 ]]
