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

# A message a person can read: no Swift enum dumps, errno numbers or internal names.
plain() { ! grep -Eq '[a-zA-Z]+\([a-zA-Z]+:|errno|Error\.|\(userCancelled\)|tooLong' "$1"; }

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
    "--salt-hex $salt -t 1 -k 4" "--salt-hex $salt -t 1 -k 99999999" "--salt-hex $salt -t 1 -k 64 -l 8"; do
    # shellcheck disable=SC2086
    out=$(printf 'x' | "$B" kdf hash $bad 2>"$work/err")
    code=$?
    [[ -z $out && $(wc -l <"$work/err") -eq 1 ]]
    check "kdf hash $bad -> exit 2, one line" 2 $code $?
done
# A usage error (an unknown option) also prints the usage, and names the nearest option.
out=$(printf 'x' | "$B" kdf hash --salt-hex $salt -t 1 -k 64 --encodd 2>"$work/err")
code=$?
[[ -z $out ]] && grep -q "unknown option '--encodd'; did you mean --encoded?" "$work/err" && grep -q '^usage: securepin kdf hash' "$work/err"
check "kdf hash --encodd -> exit 2, the nearest option and the usage" 2 $code $?
printf '' | "$B" kdf hash --salt-hex $salt -t 1 -k 64 >/dev/null 2>&1
check "kdf hash refuses an empty password" 2 $?
printf '\xff\xfe' | "$B" kdf hash --salt-hex $salt -t 1 -k 64 >/dev/null 2>&1
check "kdf hash refuses non-UTF-8" 2 $?

# kdf tune --json has the documented fields.
json=$("$B" kdf tune --target-ms 30 --max-memory 64M --json)
check "kdf tune runs" 0 $?
for field in memory_kib iterations parallelism backend measured_ms target_ms vault_init; do
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

# pin check: the one exit-code table (warn 0, reject 1, bad input 2).
"$B" pin check --pin-fd 0 <<<"1234" >"$work/out"
check "pin check 1234 warns, exit 0" 0 $?
grep -q '^verdict: warn' "$work/out"
check "pin check 1234 verdict warn" 0 0 $?
"$B" pin check --pin-fd 0 --reject --json <<<"1111" >"$work/out"
check "pin check --reject 1111 -> 1" 1 $?
grep -q '"verdict":"reject"' "$work/out"
check "pin check json verdict" 0 0 $?
"$B" pin check --pin-fd 0 <<<"12x4" >/dev/null 2>"$work/err"
check "pin check non-digit -> 2" 2 $?
grep -q "the PIN on descriptor 0 has a character other than the digits 0-9" "$work/err"
check "pin check names the descriptor and the format" 0 0 $?

# demo --interactive: the two PINs typed on the terminal pad (in tmux), only dots on screen.
if command -v tmux >/dev/null; then
    sock="$work/tmux.sock"
    tmux -S "$sock" new-session -d -x 160 -y 64 "$B demo --interactive; echo DEMO-EXIT=\$?; sleep 60"
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
    grep -q "DEMO-EXIT=0" "$work/screen" && grep -q "All 40 steps behaved as expected" "$work/screen"
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
    # The same keys at init and at unlock open the vault: the pad refuses (bell and reason) what
    # the vault's format does not allow, instead of silently dropping it at init only.
    pad() { # session name, command: runs it in tmux on a real pty
        tmux -S "$sock" new-session -d -s "$1" -x 160 -y 20 "$2; echo PAD-EXIT=\$?; sleep 60"
    }
    screen_of() { tmux -S "$sock" capture-pane -p -t "$1"; }
    wait_for() { # session, text: waits up to 20 s
        for _ in $(seq 1 100); do
            screen_of "$1" | grep -qF -- "$2" && return 0
            sleep 0.2
        done
        screen_of "$1" >&2
        return 1
    }
    pv="$work/padvault"
    tmux -S "$sock" kill-server 2>/dev/null
    pad init "printf secret-on-the-pad | $B vault init --vault $pv -t 2 -k 19456"
    wait_for init "New PIN:"
    tmux -S "$sock" send-keys -t init 1 2 3 4 5 6 7 8 9 0
    wait_for init "! at most 8 digits"
    check "init pad: a 9th digit is refused with the reason" 0 0 $?
    tmux -S "$sock" send-keys -t init Enter
    wait_for init "Repeat PIN:"
    tmux -S "$sock" send-keys -t init 1 2 3 4 5 6 7 8 9 0 Enter
    wait_for init "PAD-EXIT="
    screen_of init | grep -q "PAD-EXIT=0"
    check "init on the pad" 0 0 $?
    pad unlock "$B vault unlock --vault $pv > $work/unlocked"
    wait_for unlock "PIN:"
    tmux -S "$sock" send-keys -t unlock 1 2 3 4 5 6 7 8 9 0 Enter
    wait_for unlock "PAD-EXIT="
    screen_of unlock | grep -q "PAD-EXIT=0" && [[ $(cat "$work/unlocked") == "secret-on-the-pad" ]]
    check "the keys typed at init open the vault at unlock" 0 0 $?
    # A pasted "24 68": the space is refused (bell, "digits only") at init and at unlock alike.
    pad paste "printf pasted | $B vault init --vault $work/paste -t 2 -k 19456"
    wait_for paste "New PIN:"
    tmux -S "$sock" send-keys -t paste -l "24 68"
    wait_for paste "! digits only"
    check "init pad: a pasted space is refused with the reason" 0 0 $?
    tmux -S "$sock" send-keys -t paste Enter
    wait_for paste "Repeat PIN:"
    tmux -S "$sock" send-keys -t paste -l "24 68"
    tmux -S "$sock" send-keys -t paste Enter
    wait_for paste "PAD-EXIT="
    pad pasteopen "$B vault unlock --vault $work/paste > $work/pasted-out"
    wait_for pasteopen "PIN:"
    tmux -S "$sock" send-keys -t pasteopen -l "24 68"
    tmux -S "$sock" send-keys -t pasteopen Enter
    wait_for pasteopen "PAD-EXIT="
    screen_of pasteopen | grep -q "PAD-EXIT=0" && [[ $(cat "$work/pasted-out") == "pasted" ]]
    check "the same paste at init and at unlock opens the vault" 0 0 $?
    # Throttled: said before the PIN is asked for.
    for _ in 1 2 3 4 5; do "$B" vault unlock --vault "$pv" --pin-fd 3 3<<<"0000" >/dev/null 2>&1; done
    pad throttled "$B vault unlock --vault $pv"
    wait_for throttled "PAD-EXIT="
    screen_of throttled | grep -q "try again in 60 s" && screen_of throttled | grep -q "PAD-EXIT=3" \
        && ! screen_of throttled | grep -q "PIN:"
    check "a throttled vault says so before asking for the PIN" 0 0 $?
    "$B" vault status --vault "$pv" | grep -q "next attempt:       try again in 60 s"
    check "vault status: try again in N s" 0 0 $?
    # Mismatched PINs at the terminal ask again.
    pad again "printf s | $B vault init --vault $work/again -t 2 -k 19456"
    wait_for again "New PIN:"
    tmux -S "$sock" send-keys -t again 2 4 6 8 Enter
    wait_for again "Repeat PIN:"
    tmux -S "$sock" send-keys -t again 2 4 6 9 Enter
    wait_for again "the two PINs differ; again (2 tries left)"
    check "mismatched PINs: asked again" 0 0 $?
    tmux -S "$sock" send-keys -t again 2 4 6 8 Enter
    sleep 0.5
    tmux -S "$sock" send-keys -t again 2 4 6 8 Enter
    wait_for again "PAD-EXIT="
    screen_of again | grep -q "PAD-EXIT=0"
    check "mismatched PINs: the second try creates the vault" 0 0 $?
    # vault init with the secret typed on the terminal: echo off, told how to end it and what
    # happens to the last newline (dropped: it is the Enter before Ctrl-D).
    printf '2468\n' >"$work/pin2468"
    pad typed "$B vault init --vault $work/typed -t 2 -k 19456"
    wait_for typed "then Enter and Ctrl-D; the last newline is not kept"
    check "vault init on a terminal says how to end the secret and what happens to the newline" 0 0 $?
    tmux -S "$sock" send-keys -t typed -l "typed-secret"
    tmux -S "$sock" send-keys -t typed Enter C-d
    wait_for typed "New PIN:"
    ! screen_of typed | grep -q "typed-secret"
    check "vault init on a terminal: the secret is not echoed" 0 0 $?
    tmux -S "$sock" send-keys -t typed 2 4 6 8 Enter
    wait_for typed "Repeat PIN:"
    tmux -S "$sock" send-keys -t typed 2 4 6 8 Enter
    wait_for typed "PAD-EXIT="
    [[ $("$B" vault unlock --vault "$work/typed" --pin-fd 3 3<"$work/pin2468" | od -An -c | tr -s ' ') == " t y p e d - s e c r e t" ]]
    check "vault init on a terminal: the typed secret is kept without the last newline" 0 0 $?
    # vault unlock on a terminal ends with a newline; into a file, the secret's bytes exactly.
    printf 'no-newline' | "$B" vault init --vault "$work/shown" --pin-fd 3 -t 2 -k 19456 3<"$work/pin2468" 2>/dev/null >&2
    pad shown "$B vault unlock --vault $work/shown --pin-fd 3 3<$work/pin2468; echo AFTER"
    wait_for shown "PAD-EXIT="
    screen_of shown | grep -q '^no-newline$' && screen_of shown | grep -q '^AFTER$'
    check "vault unlock on a terminal ends its output with a newline" 0 0 $?
    "$B" vault unlock --vault "$work/shown" --pin-fd 3 3<"$work/pin2468" >"$work/piped"
    [[ $(wc -c <"$work/piped") == 10 ]]
    check "vault unlock into a file: the secret's bytes exactly, no newline added" 0 0 $?
    # A long passphrase on a narrow terminal: the pad redraws its one line in place (the dots give
    # way to their count), never one more row per keystroke.
    tmux -S "$sock" new-session -d -s narrow -x 40 -y 20 \
        "printf s | $B vault init --vault $work/narrow --complexity alphanumeric -t 2 -k 19456; sleep 60"
    wait_for narrow "New PIN:"
    tmux -S "$sock" send-keys -t narrow -l "a-long-passphrase-typed-on-a-narrow-terminal-of-forty-columns"
    wait_for narrow "(61)"
    [[ $(screen_of narrow | grep -c 'New PIN') == 1 && $(screen_of narrow | grep -c '•') == 1 ]]
    check "the pad redraws a long passphrase in place on a narrow terminal" 0 0 $?
    screen_of narrow | grep -q '^New PIN: •*…(61)  (Enter to confirm)$'
    check "past the width the dots give way to their count" 0 0 $?
    # vault init --target-ms on a terminal: calibrating takes seconds, and a progress bar says so.
    pad tuned "printf s | $B vault init --vault $work/tuned-tty --pin-fd 3 --target-ms 200 3<$work/pin2468"
    wait_for tuned "PAD-EXIT="
    screen_of tuned | grep -q "PAD-EXIT=0" && screen_of tuned | grep -q 'calibrating \[#\{30\}\] 100 %'
    check "vault init --target-ms shows calibration progress on a terminal" 0 0 $?
    tmux -S "$sock" kill-server 2>/dev/null
else
    echo "skipped: demo --interactive and the vault on the pad (tmux is not installed)"
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
# The demo's server child may still be exiting: wait for it (up to 10 s), do not guess a delay.
for _ in $(seq 1 100); do
    [[ -z $(ls -A "$work/demo-tmp") ]] && ! pgrep -f "server --port 0 --db $scratch" >/dev/null && break
    sleep 0.1
done
[[ -z $(ls -A "$work/demo-tmp") ]] && ! pgrep -f "server --port 0 --db $scratch" >/dev/null
left=$?
if [[ $left != 0 ]]; then # say what stayed, so that a rare failure can be understood
    echo "left behind: $(cd "$work/demo-tmp" && find . -mindepth 1 | head -20 | tr '\n' ' ')" \
        "server: $(pgrep -af "server --port 0 --db $scratch" | head -3 | tr '\n' ' ')"
fi
check "demo interrupted: exit 130, scratch directory and its server gone" 130 $code $left

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

# The shipped tool links no benchmark code (the KDF grid is securepin-bench kdf).
if command -v nm >/dev/null; then
    ! nm "$B" | grep -q BenchmarkKit
    check "securepin links no BenchmarkKit symbol" 0 0 $?
fi

# usage errors.
"$B" bogus >/dev/null 2>&1
check "unknown command -> 2" 2 $?
"$B" vault unlock >/dev/null 2>&1
check "missing --vault -> 2" 2 $?

# The vault records its PIN format: unlock and change-pin read the PIN by the same rules as init,
# and a PIN outside them is bad input (exit 2), never a counted wrong PIN.
v="$work/fmt"
printf 's' | "$B" vault init --vault "$v" --pin-fd 3 -t 2 -k 19456 --policy wipe:1 3<<<"2468" >/dev/null
check "vault init digits-4-8 under wipe:1" 0 $?
"$B" vault status --vault "$v" --json >"$work/status"
grep -q '"pin_format":"digits-4-8"' "$work/status" && grep -q '"policy":"wipe:1"' "$work/status"
check "status --json has pin_format and policy" 0 0 $?
for bad in "1234567890" "24 68" "12a4" "123"; do
    "$B" vault unlock --vault "$v" --pin-fd 3 3<<<"$bad" >/dev/null 2>"$work/err"
    check "unlock with '$bad' outside digits-4-8 -> 2" 2 $?
    grep -q "and the PIN format is digits-4-8 (4 to 8 digits); nothing was counted" "$work/err" && plain "$work/err"
    check "unlock with '$bad': says why, nothing counted" 0 0 $?
done
[[ -e $v/vault ]] && grep -q '"failures":0' <("$B" vault status --vault "$v" --json)
check "wipe:1 vault still there, no failure counted" 0 0 $?
"$B" vault change-pin --vault "$v" --pin-fd 3 --new-pin-fd 4 3<<<"2468" 4<<<"123456789" >/dev/null 2>&1
check "change-pin to a PIN outside the format -> 2" 2 $?
"$B" vault change-pin --vault "$v" --complexity alphanumeric --pin-fd 3 --new-pin-fd 4 3<<<"2468" \
    4<<<"a-long-passphrase" >/dev/null 2>"$work/err"
check "change-pin cannot change the recorded format -> 2" 2 $?
grep -q "recorded at init" "$work/err"
check "change-pin says the format is recorded" 0 0 $?
"$B" vault unlock --vault "$v" --pin-fd 3 3<<<"1357" >/dev/null 2>"$work/err"
check "wipe:1: a wrong PIN in the format erases" 3 $?
grep -q "the next wrong PIN erases the vault" "$work/err" && [[ ! -e $v ]]
check "wipe:1: the warning came before the PIN, and the vault is gone" 0 0 $?

# Invalid KDF settings are refused before anything is read or asked (standard input never ends here).
for bad in "-t 1 -k 19456" "-t 2 -k 8192" "-k 65536" "-t 3" "-p 2" "--target-ms 100 -t 2 -k 65536" "--policy wipe" \
    "--complexity digits-5" "--pin-fd 0" "--policy soft:5:30s,5x" "--policy soft:0:30s" "--policy soft:5:30s:0" \
    "--policy soft:20:30s" "--policy soft:5:30s,,5m" "--policy soft:5:31d" "--policy soft:5:"; do
    # shellcheck disable=SC2086
    timeout 10 "$B" vault init --vault "$work/kdf" --pin-fd 3 $bad 3< <(sleep 30) < <(sleep 30) >/dev/null 2>"$work/err"
    code=$?
    plain "$work/err"
    check "vault init $bad -> a plain message" 0 0 $?
    check "vault init $bad -> exit 2 at once" 2 $code
done
[[ ! -e $work/kdf ]]
check "no refused vault init left a directory" 0 0 $?
timeout 10 "$B" vault init --vault "$work/kdf" --pin-fd 3 --policy soft:20:30s 3< <(sleep 30) < <(sleep 30) \
    2>"$work/err"
grep -q "the first delay comes after 20 failures, but the vault locks after 20" "$work/err"
check "a schedule that never applies says why" 0 0 $?

# The PIN-vault scheme's soft lockout (30 s, then 5 min, then 30 min), recorded in the vault header.
v="$work/schedule"
printf s | "$B" vault init --vault "$v" --pin-fd 3 -t 2 -k 19456 --policy soft:2:30s,5m,30m:10 3<<<"2468" >/dev/null 2>&1
check "vault init --policy soft:2:30s,5m,30m:10" 0 $?
"$B" vault status --vault "$v" --json | grep -q '"policy":"soft:2:30s,5m,30m:10"'
check "status --json names the schedule" 0 0 $?
for _ in 1 2; do "$B" vault unlock --vault "$v" --pin-fd 3 3<<<"1357" >/dev/null 2>&1; done
"$B" vault unlock --vault "$v" --pin-fd 3 3<<<"2468" >/dev/null 2>"$work/err"
check "two failures, then the schedule's first delay -> 3" 3 $?
grep -Eq "try again in (30|29|28) s; nothing was counted" "$work/err"
check "the first delay is the schedule's 30 s" 0 0 $?
"$B" vault status --vault "$v" >"$work/status"
grep -q "soft, from failure 2 waits 30s, 5m, then 30m each time, locked after 10" "$work/status"
check "status describes the schedule" 0 0 $?
timeout 10 "$B" vault init --vault "$work/kdf" --pin-fd 3 -t 1 -k 19456 3< <(sleep 30) < <(sleep 30) 2>"$work/err"
grep -q "below the vault's floor of 19456 KiB (19 MiB) and t = 2" "$work/err"
check "the floor is named in the message" 0 0 $?
"$B" vault init --help >"$work/help"  # to a file: grep -q stopping early would SIGPIPE the writer
grep -q "floor: 19456 KiB" "$work/help"
check "the floor is named in the help" 0 0 $?
timeout 10 "$B" vault init --vault "$work/none/deeper" --pin-fd 3 3< <(sleep 30) < <(sleep 30) 2>"$work/err"
check "vault init under a missing directory -> 2 at once" 2 $?
grep -q "$work/none does not exist" "$work/err"
check "the missing directory is named" 0 0 $?
"$B" vault init --vault "$work/fd" --pin-fd 7 </dev/null 2>"$work/err"
check "vault init with a closed --pin-fd -> 2" 2 $?
grep -q "descriptor 7 (--pin-fd 7) is not open" "$work/err"
check "the closed descriptor is named" 0 0 $?
printf 's' | "$B" vault init --vault "$work/tuned" --pin-fd 3 --target-ms 5 3<<<"2468" >"$work/out" 2>"$work/err"
check "vault init --target-ms 5 succeeds" 0 $?
grep -q "raised to m=19456 KiB, t=2" "$work/err" || grep -Eq "m=(19456|[2-9][0-9]{4,}|[0-9]{6,}) KiB" "$work/out"
check "--target-ms never goes below the floor" 0 0 $?
"$B" kdf tune --target-ms 5 >"$work/out"
grep -q "^  securepin vault init --vault DIR -t [0-9]* -k [0-9]*" "$work/out"
check "kdf tune prints a ready-to-paste vault init line" 0 0 $?
line=$(sed -n 's/^  securepin vault init --vault DIR //p' "$work/out")
# shellcheck disable=SC2086
printf 's' | "$B" vault init --vault "$work/pasted" --pin-fd 3 $line 3<<<"2468" >/dev/null
check "the pasted kdf tune line creates a vault" 0 $?

# Help at every level, --opt=value, the nearest command or option, --version.
for cmd in "--help" "-h" "help" "vault --help" "vault init --help" "vault unlock -h" "help vault change-pin" \
    "kdf tune --help" "help pin check" "server --help" "doctor --help" "demo --help" "pin --help"; do
    # shellcheck disable=SC2086
    "$B" $cmd >"$work/out" 2>&1
    code=$?
    grep -q "^usage: securepin" "$work/out" && grep -q "example:" "$work/out" && grep -q "^  130  cancelled" "$work/out"
    check "securepin $cmd: usage, example and exit codes" 0 $code $?
done
"$B" vault inti --vault "$work/x" >/dev/null 2>"$work/err"
check "vault inti -> 2" 2 $?
grep -q "unknown command 'inti'; did you mean init?" "$work/err" && ! grep -q -- "--vault DIR is required" "$work/err"
check "vault inti: did you mean init?" 0 0 $?
"$B" vault unlock --vualt "$work/x" >/dev/null 2>"$work/err"
grep -q "did you mean --vault?" "$work/err" && grep -q "^usage: securepin vault unlock" "$work/err"
check "--vualt: did you mean --vault? and the usage" 0 0 $?
"$B" valut >/dev/null 2>"$work/err"
grep -q "did you mean vault?" "$work/err"
check "valut: did you mean vault?" 0 0 $?
printf 's' | "$B" vault init --vault="$work/eq" --pin-fd=3 -t 2 -k 19456 3<<<"2468" >/dev/null
check "--opt=value accepted" 0 $?
"$B" vault unlock --vault "$work/eq" --biometry --pin-fd 3 3<<<"2468" >/dev/null 2>"$work/err"
check "vault unlock --biometry with --pin-fd -> 2 (no PIN is used)" 2 $? \
    "$(grep -q -- "--biometry opens the vault without a PIN: leave --pin-fd out" "$work/err"; echo $?)"
"$B" --version >"$work/out"
check "--version" 0 $?
grep -q "^securepin [0-9]" "$work/out" && grep -q "^libsodium [0-9]" "$work/out" && grep -q "^libargon2" "$work/out" \
    && grep -q "^OpenSSL .*[0-9]" "$work/out"
check "--version names libsodium, libargon2 and OpenSSL" 0 0 $?
# Plain messages: what is wrong, with the path, port or descriptor and the fix; no enum dumps or errno numbers.
"$B" server --port 0 --db "$work/srv.sqlite" >"$work/srv.out" 2>&1 &
srv=$!
for _ in $(seq 1 50); do grep -q "listening on" "$work/srv.out" 2>/dev/null && break; sleep 0.2; done
port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$work/srv.out")
"$B" server --port "$port" --db "$work/srv2.sqlite" >/dev/null 2>"$work/err"
check "server on a port in use -> 1" 1 $?
grep -q "port $port is in use: choose another port, or port 0 for a free one" "$work/err" && plain "$work/err"
check "server: the port in use is named with the fix" 0 0 $?
kill -TERM "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
# Listeners: --port keeps meaning 127.0.0.1, --listen adds IPv4 or [IPv6] ones, each reported; a
# non-loopback one without a trusted proxy warns; bad addresses and networks are refused first.
"$B" server --port 0 --listen 127.0.0.2:0 --db "$work/srv4.sqlite" >"$work/srv.out" 2>"$work/srv.err" &
srv=$!
for _ in $(seq 1 50); do grep -q "^back office" "$work/srv.out" 2>/dev/null && break; sleep 0.2; done
p1=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$work/srv.out")
p2=$(sed -n 's/.*listening on http:\/\/127.0.0.2:\([0-9]*\)$/\1/p' "$work/srv.out")
[[ -n $p1 && -n $p2 ]] && curl -s "http://127.0.0.1:$p1/pa/v3/activation/status" -o /dev/null -w '%{http_code}' -XPOST \
    -d '{}' -H 'Content-Type: application/json' | grep -q 400 &&
    curl -s "http://127.0.0.2:$p2/pa/v3/activation/status" -o /dev/null -w '%{http_code}' -XPOST -d '{}' \
        -H 'Content-Type: application/json' | grep -q 400 && ! grep -q warning "$work/srv.err"
check "server --port 0 --listen 127.0.0.2:0: both listen, both answer, loopback gives no warning" 0 0 $?
kill -TERM "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
"$B" server --listen 0.0.0.0:0 --db "$work/srv5.sqlite" >"$work/srv.out" 2>"$work/srv.err" &
srv=$!
for _ in $(seq 1 50); do grep -q "^back office" "$work/srv.out" 2>/dev/null && break; sleep 0.2; done
grep -q "^securepin server: listening on http://0.0.0.0:[0-9]*$" "$work/srv.out" &&
    grep -q "warning: listening on 0.0.0.0:[0-9]* in plain HTTP; put TLS in front" "$work/srv.err"
check "server --listen 0.0.0.0:0 alone: listens there and warns about plain HTTP" 0 0 $?
kill -TERM "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
"$B" server --listen 0.0.0.0:0 --trusted-proxy 127.0.0.1 --trusted-proxy 10.0.0.0/8 --db "$work/srv6.sqlite" \
    >"$work/srv.out" 2>"$work/srv.err" &
srv=$!
for _ in $(seq 1 50); do grep -q "^back office" "$work/srv.out" 2>/dev/null && break; sleep 0.2; done
grep -q "^trusted proxies: 127.0.0.1/32, 10.0.0.0/8$" "$work/srv.out" && ! grep -q warning "$work/srv.err"
check "server --trusted-proxy: the networks are reported, no plain-HTTP warning" 0 0 $?
kill -TERM "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
for bad in "localhost:80" "::1:80" "0.0.0.0:99999" "0.0.0.0"; do
    "$B" server --listen "$bad" --db "$work/never.sqlite" >/dev/null 2>"$work/err"
    code=$?
    [[ $code == 2 ]] && grep -q "is not a listen address: give IPV4:PORT or \[IPV6\]:PORT" "$work/err" && plain "$work/err" &&
        [[ ! -e $work/never.sqlite ]]
    check "server --listen $bad: refused before any file is made" 0 0 $?
done
for bad in "10.0.0.0/33" "example.org" "10.0.0.1/08"; do
    "$B" server --port 0 --trusted-proxy "$bad" --db "$work/never.sqlite" >/dev/null 2>"$work/err"
    code=$?
    [[ $code == 2 ]] && grep -q "is not an IP network" "$work/err" && plain "$work/err" && [[ ! -e $work/never.sqlite ]]
    check "server --trusted-proxy $bad: refused before any file is made" 0 0 $?
done
"$B" server --db "$work/never.sqlite" >/dev/null 2>"$work/err"
check "server without --port or --listen -> 2" 2 $?
"$B" server --port 0 --db "$work/srv3.sqlite" --admin-token-file "$work/no-token" >/dev/null 2>"$work/err"
check "server with a missing token file -> 1" 1 $?
grep -q "cannot open the admin token file $work/no-token: No such file or directory" "$work/err" && plain "$work/err"
check "server: the token file is named, no errno number" 0 0 $?
head -c 70000 /dev/zero | "$B" vault init --vault "$work/big" --pin-fd 3 -t 2 -k 19456 3<<<"2468" 2>"$work/err"
check "vault init with a secret over 64 KiB -> 2" 2 $?
grep -q "the secret on standard input is longer than 65536 bytes" "$work/err" && plain "$work/err"
check "vault init: the secret's limit, no tooLong" 0 0 $?
printf '\x1b' | "$B" pin check --pin-fd 0 2>"$work/err" >/dev/null
plain "$work/err"
check "pin check: a control character is a plain message" 0 0 $?

# storage-key rotate: a server database re-sealed under a new key; the server starts with it and
# gives the same configuration; the old key no longer opens the database; bad input changes nothing.
"$B" server --port 0 --db "$work/rot.sqlite" >"$work/rot.out" 2>/dev/null &
srv=$!
for _ in $(seq 1 50); do grep -q "^back office" "$work/rot.out" 2>/dev/null && break; sleep 0.2; done
kill -TERM "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
config=$(sed -n 's/^configuration: //p' "$work/rot.out")
"$B" storage-key rotate --db "$work/rot.sqlite" >/dev/null 2>"$work/err"
check "storage-key rotate without --new-key-file -> 2" 2 $?
"$B" storage-key rotate --store postgres --key-file "$work/rot.sqlite.key" --new-key-file "$work/n.key" \
    >/dev/null 2>"$work/err"
code=$?
grep -q "needs --dsn-file" "$work/err" && [[ ! -e $work/n.key ]]
check "storage-key rotate --store postgres without --dsn-file -> 2, no key file made" 2 $code $?
"$B" storage-key rotate --db "$work/rot.sqlite" --new-key-file "$work/rot.sqlite.key" >/dev/null 2>"$work/err"
check "storage-key rotate onto the key in force -> 2" 2 $?
"$B" storage-key rotate --db "$work/absent.sqlite" --new-key-file "$work/n.key" >/dev/null 2>"$work/err"
code=$?
grep -q "there is no database at $work/absent.sqlite; the database is unchanged" "$work/err" && plain "$work/err" &&
    [[ ! -e $work/absent.sqlite && ! -e $work/n.key ]]
check "storage-key rotate on a missing database -> 1, nothing created" 1 $code $?
cp -p "$work/rot.sqlite.key" "$work/copy.key"
cp "$work/rot.sqlite" "$work/rot.before"
"$B" storage-key rotate --db "$work/rot.sqlite" --new-key-file "$work/copy.key" >/dev/null 2>"$work/err"
code=$?
grep -q "holds the key in force" "$work/err" && plain "$work/err" && cmp -s "$work/rot.sqlite" "$work/rot.before"
check "storage-key rotate onto a copy of the key in force -> 1, database unchanged" 1 $code $?
"$B" storage-key rotate --db "$work/rot.sqlite" --new-key-file "$work/rot.new" >"$work/out" 2>"$work/err"
code=$?
grep -q "^storage key rotated: 2 value(s) re-sealed, 0 already under the new key$" "$work/out" &&
    grep -q "^  vault OPRF master secrets:  1$" "$work/out" &&
    grep -q "^new key file: $work/rot.new (created, 0600)$" "$work/out" && [[ $(stat -c %a "$work/rot.new") == 600 ]]
check "storage-key rotate re-seals the master keys and the OPRF secret, the new file 0600" 0 $code $?
"$B" storage-key rotate --db "$work/rot.sqlite" --new-key-file "$work/rot.new" >"$work/out" 2>"$work/err"
code=$?
grep -q "^storage key rotated: 0 value(s) re-sealed, 2 already under the new key$" "$work/out"
check "storage-key rotate again: everything already under the new key" 0 $code $?
"$B" server --port 0 --db "$work/rot.sqlite" >"$work/rot.out" 2>"$work/err"
code=$?
grep -q "does not open with its key file" "$work/err" && plain "$work/err"
check "server with the old key after a rotation -> 1, says the key does not open" 1 $code $?
"$B" server --port 0 --db "$work/rot.sqlite" --key-file "$work/rot.new" >"$work/rot.out" 2>/dev/null &
srv=$!
for _ in $(seq 1 50); do grep -q "^back office" "$work/rot.out" 2>/dev/null && break; sleep 0.2; done
kill -TERM "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
[[ -n $config && $(sed -n 's/^configuration: //p' "$work/rot.out") == "$config" ]]
check "server with the new key file: the same configuration" 0 0 $?

# JSON keys in one style: lower snake_case, no one-letter pieces such as memory_mi_b.
printf 's' | "$B" vault init --vault "$work/js" --pin-fd 3 -t 2 -k 19456 3<<<"2468" >/dev/null 2>&1
{
    "$B" doctor --json
    "$B" kdf tune --target-ms 5 --json
    "$B" vault status --vault "$work/js" --json
    "$B" pin check --pin-fd 0 --json <<<"1234"
    printf 'a fairly long passphrase' | "$B" pin check --complexity alphanumeric --pin-fd 0 --json
} >"$work/json" 2>/dev/null
keys=$(grep -o '"[A-Za-z0-9_]*" *:' "$work/json" | tr -d '": ' | sort -u)
[[ -n $keys ]] && ! grep -v '^[a-z][a-z0-9]*\(_[a-z0-9][a-z0-9]\+\)*$' <<<"$keys"
check "every JSON key is snake_case" 0 0 $?
grep -q "^  130  cancelled" <("$B" --help) && grep -q "| 130 |" "$(dirname "$0")/../../README.md"
check "one exit-code table in --help and the README" 0 0 $?

echo "cli: $passed passed, $failed failed"
[[ $failed == 0 ]]
