#!/usr/bin/env bash
# One description of the commands: every command the help lists and every option the parser itself
# asks for (SECUREPIN_PARSER_OPTIONS=1 makes a command print them instead of running) appears in its
# --help, in the bash, zsh and fish completions and in the man page; the scripts parse, bash
# completes, and the man page renders without a warning.
# Usage: Tests/cli/spec.sh PATH/TO/securepin
set -uo pipefail
B=${1:?usage: spec.sh PATH/TO/securepin}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

ok() { # name, command…
    local name=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $name" >&2
    fi
}

"$B" completions bash >"$work/bash" && "$B" completions zsh >"$work/zsh" && "$B" completions fish >"$work/fish" &&
    "$B" man >"$work/securepin.1"
ok "completions bash|zsh|fish and man run" test $? = 0

roff() { sed 's/-/\\-/g' <<<"$1"; }

# The command list of a help text (the lines under "commands:").
commands_in() { awk '/^commands:/ { f = 1; next } f && /^  [a-z]/ { print $1 } f && /^$/ { exit }'; }

paths=()
for cmd in $("$B" --help | commands_in); do
    [[ $cmd == help ]] && continue
    "$B" "$cmd" --help >/dev/null
    ok "securepin $cmd --help runs (the dispatcher knows it)" test $? = 0
    subs=$("$B" "$cmd" --help | commands_in)
    if [[ -n $subs ]]; then
        for sub in $subs; do paths+=("$cmd $sub"); done
        for sub in $subs; do
            grep -q "\"$cmd\") *$\|^        $cmd)" "$work/bash" && grep -Fq "'$sub:" "$work/zsh" &&
                grep -Eq "^complete .*from $cmd; and not .* -a $sub " "$work/fish" &&
                grep -Fxq ".SS $(roff "$cmd $sub")" "$work/securepin.1"
            ok "$cmd $sub: listed in the completions and the man page" test $? = 0
        done
    else
        paths+=("$cmd")
        grep -Fq "$cmd" "$work/bash" && grep -Fq "'$cmd:" "$work/zsh" && grep -Fq -- "-a $cmd " "$work/fish" &&
            grep -Fxq ".SS $cmd" "$work/securepin.1"
        ok "$cmd: listed in the completions and the man page" test $? = 0
    fi
done
[[ ${#paths[@]} -ge 12 ]]
ok "at least the 12 commands of this release (found ${#paths[@]})" test $? = 0

for path in "${paths[@]}"; do
    # shellcheck disable=SC2086
    parsed=$(SECUREPIN_PARSER_OPTIONS=1 "$B" $path </dev/null)
    ok "$path: the parser lists its options" test $? = 0
    grep -Fq "| \`securepin $path --help\` |" "$(dirname "$0")/../../README.md"
    ok "$path: in the README's command table" test $? = 0
    # shellcheck disable=SC2086
    "$B" $path --help >"$work/help"
    condition="__fish_seen_subcommand_from ${path// /; and __fish_seen_subcommand_from }\""
    for opt in $parsed; do
        grep -Eq "^  (.*[ [])?$opt([ ,=]|$)" "$work/help"
        ok "$path $opt: in --help" test $? = 0
        grep -Fq "\"$path\") opts=\"" "$work/bash" && grep "\"$path\") opts=\"" "$work/bash" | grep -Fq " $opt " ||
            grep "\"$path\") opts=\"" "$work/bash" | grep -Fq "\"$opt "
        ok "$path $opt: in the bash completion" test $? = 0
        grep -Fq "'$opt[" "$work/zsh"
        ok "$path $opt: in the zsh completion" test $? = 0
        if [[ $opt == --* ]]; then flag="-l ${opt#--}"; else flag="-s ${opt#-}"; fi
        # Not grep -q: it would stop reading, and the first grep's SIGPIPE fails the pipeline.
        grep -F -- "$condition" "$work/fish" | grep -F -- " $flag " >/dev/null
        ok "$path $opt: in the fish completion" test $? = 0
        awk -v ss=".SS $(roff "$path")" '$0 == ss { f = 1; next } /^\.SS / { f = 0 } f' "$work/securepin.1" |
            grep -F -- "\\fB$(roff "$opt")\\fR" >/dev/null
        ok "$path $opt: in the man page" test $? = 0
    done
done

bash -n "$work/bash"
ok "the bash completion parses" test $? = 0
if command -v zsh >/dev/null; then
    zsh -n "$work/zsh"
    ok "the zsh completion parses" test $? = 0
fi
if command -v fish >/dev/null; then
    fish -n "$work/fish"
    ok "the fish completion parses" test $? = 0
fi
got=$(bash -c 'source "$1"; COMP_WORDS=(securepin vault init --va); COMP_CWORD=3; _securepin; echo "${COMPREPLY[*]}"' _ "$work/bash")
ok "bash completes 'securepin vault init --va' to --vault (got '$got')" test "$got" = "--vault"
got=$(bash -c 'source "$1"; COMP_WORDS=(securepin va); COMP_CWORD=1; _securepin; echo "${COMPREPLY[*]}"' _ "$work/bash")
ok "bash completes 'securepin va' to vault (got '$got')" test "$got" = "vault"
warnings=$(groff -man -ww -z "$work/securepin.1" 2>&1)
ok "the man page renders without warnings${warnings:+: $warnings}" test -z "$warnings"

echo "spec: $passed passed, $failed failed"
[[ $failed == 0 ]]
