#!/usr/bin/env bash
# What an app that imports only the PIN entry model, or only the strength rules, links: no terminal
# driver and no signal handler. SwiftPM links a target's dependency closure and nothing else, so two
# facts prove it:
#   1. the closure of PinEntry and of PinStrength (from `swift package describe`) holds no
#      PinEntryTerminal, and PinStrength's holds no PinEntry either;
#   2. no object file of any target in those closures calls a signal or terminal function
#      (sigaction, pthread_sigmask, tcsetattr, isatty, poll, ...) or refers to a PinEntryTerminal symbol.
# A control run on PinEntryTerminal's own objects must find sigaction, tcsetattr and isatty, or the
# check is blind (objects moved, nm output changed) and fails.
# Usage: Tests/Audit/check-module-deps.sh PATH/TO/.build/debug   (after a build of pinpad-demo)
set -euo pipefail
objects=${1:?usage: check-module-deps.sh BUILD_DIRECTORY}
command -v nm >/dev/null || { echo "check-module-deps: nm is missing (binutils)" >&2; exit 1; }
command -v jq >/dev/null || { echo "check-module-deps: jq is missing" >&2; exit 1; }

forbidden='sigaction|signal|sigemptyset|sigaddset|sigprocmask|pthread_sigmask|tcgetattr|tcsetattr|tcflush|cfmakeraw|isatty|poll'
graph=$(swift package describe --type json)

# The target and every target it depends on, one per line.
closure() {
    jq -r --arg root "$1" '
        ([.targets[] | {key: .name, value: (.target_dependencies // [])}] | from_entries) as $g
        | def deps($n): [$n] + ([$g[$n][]? | deps(.)] | add // []);
        deps($root) | unique | .[]' <<<"$graph"
}

# A target's object files, one per line. For a Swift target only the objects its output-file map
# names: the files it compiles today, not those left behind by sources that moved to another module.
object_files() {
    local dir=$objects/$1.build
    if [[ -f $dir/output-file-map.json ]]; then
        jq -r '.[] | .object? // empty' "$dir/output-file-map.json" | while read -r file; do
            [[ -f $file ]] && echo "$file"
        done
    else
        find "$dir" -maxdepth 1 -name '*.o' 2>/dev/null
    fi
}

# The undefined symbols of a target's object files (empty for a system library).
undefined() {
    local files
    mapfile -t files < <(object_files "$1")
    ((${#files[@]})) || return 0
    nm -u "${files[@]}" | awk 'NF == 2 && $1 == "U" {print $2}' | sort -u
}

status=0
check() {
    local module=$1
    shift
    local targets failed=0
    targets=$(closure "$module")
    if [[ -z $targets ]]; then
        echo "check-module-deps: $module is not a target of this package" >&2
        status=1
        return
    fi
    for banned in "$@"; do
        if grep -qx "$banned" <<<"$targets"; then
            echo "check-module-deps: $module depends on $banned: $(tr '\n' ' ' <<<"$targets")" >&2
            failed=1
        fi
    done
    local count=0 target hits
    for target in $targets; do
        [[ -d $objects/$target.build ]] || continue
        count=$((count + $(object_files "$target" | wc -l)))
        hits=$(undefined "$target" | grep -E "^($forbidden)$|^\\\$s16PinEntryTerminal" || true)
        if [[ -n $hits ]]; then
            echo "check-module-deps: $target (linked with $module) calls $(tr '\n' ' ' <<<"$hits")" >&2
            failed=1
        fi
    done
    if [[ -z $(object_files "$module") ]]; then
        echo "check-module-deps: no object files of $module under $objects (build it first)" >&2
        failed=1
    fi
    if ((failed)); then
        status=1
        return
    fi
    echo "module check: $module links $(tr '\n' ' ' <<<"$targets")($count objects): no signal or terminal call," \
        "no PinEntryTerminal symbol"
}

check PinEntry PinEntryTerminal
check PinStrength PinEntryTerminal PinEntry

# The vault links no network code: its server binding reaches the server through PinVaultServer,
# which an app adds (as PinVaultTPM for the TPM); PinVault's own closure holds none of it.
vault=$(closure PinVault)
for banned in HTTPClient HTTPServer CHTTPShim ReferenceServer PinVaultServer VaultOPRFProtocol PowerAuthProtocol PostgresStore CLibPQ; do
    if grep -qx "$banned" <<<"$vault"; then
        echo "check-module-deps: PinVault depends on $banned: $(tr '\n' ' ' <<<"$vault")" >&2
        status=1
    fi
done
((status == 0)) && echo "module check: PinVault links $(tr '\n' ' ' <<<"$vault")(no HTTP client or server, no server glue)"

# Control: the terminal driver's objects do show what the check looks for.
driver=$(undefined PinEntryTerminal)
for needed in sigaction tcsetattr isatty; do
    if ! grep -qx "$needed" <<<"$driver"; then
        echo "check-module-deps: PinEntryTerminal does not call $needed: the check is blind" >&2
        status=1
    fi
done
((status == 0)) && echo "module check: PinEntryTerminal calls sigaction, tcsetattr and isatty, as it must (the check sees them)"
exit $status
