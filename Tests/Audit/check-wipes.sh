#!/usr/bin/env bash
# Release-build audit: the wipes that the optimiser would delete as dead stores are really there.
# A function that copies a secret into a plain local (the byte read(2) just returned, a UTF-8
# decoder's partial code point) must wipe it through SecureMemory.wipe / spc_wipe, an opaque call
# the optimiser keeps. This reads the disassembly of each such function in the optimised binary
# and counts those calls.
# Usage: Tests/Audit/check-wipes.sh PATH/TO/release/securepin
set -euo pipefail
bin=${1:?usage: check-wipes.sh BINARY}
command -v objdump >/dev/null || { echo "check-wipes: objdump is missing (binutils)" >&2; exit 1; }

# function (as swift demangle --compact prints it) and the least number of wipe calls in it
checks=(
    "PinEntryTerminal.DescriptorPasswordReader.readPassword() throws(PinEntryTerminal.PinEntryTerminalError) -> SecureCore.Password|2"
)

symbols=$(nm "$bin" | awk '$2 ~ /^[Tt]$/ && $3 ~ /^\$s/ {print $3}')
status=0
for entry in "${checks[@]}"; do
    name=${entry%|*}
    minimum=${entry##*|}
    symbol=""
    for s in $(grep -E '^\$s16PinEntryTerminal24DescriptorPasswordReaderV' <<<"$symbols"); do
        if [[ $(swift demangle --compact "$s") == "$name" ]]; then symbol=$s; break; fi
    done
    if [[ -z $symbol ]]; then
        echo "check-wipes: $name is not a symbol of $bin (inlined away?)" >&2
        status=1
        continue
    fi
    wipes=$(objdump -d --no-show-raw-insn "$bin" |
        awk -v sym="<$symbol>:" '$2 == sym {p = 1; next} p && /^$/ {p = 0} p' |
        grep -cE 'call.*(spc_wipe|SecureCore0A6MemoryO4wipe)' || true)
    if ((wipes >= minimum)); then
        echo "wipe audit: $name: $wipes wipe calls (at least $minimum)"
    else
        echo "check-wipes: $name has $wipes wipe calls in the release build, wanted at least $minimum:" \
            "a plain assignment was optimised away" >&2
        status=1
    fi
done
exit $status
