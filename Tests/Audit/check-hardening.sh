#!/bin/bash
# check-hardening.sh — verify the hardening of the audited C targets' objects
# (CSecureCore, CProtocolCrypto, CTPMBinding, CPostQuantum) and of a linked binary, checksec-style,
# with readelf (binutils) only.
#
# Usage: check-hardening.sh BUILD_PATH CONFIGURATION BINARY
#   BUILD_PATH     SwiftPM's build directory (.build)
#   CONFIGURATION  debug or release
#   BINARY         a product linked with the core, e.g. securepin
#
# Objects: each C target object's compile command (from SwiftPM's build
# manifest) must carry -D_FORTIFY_SOURCE=2 or 3 with optimisation on (glibc
# ignores FORTIFY at -O0), -fstack-protector-strong or -all, and -fPIC; each
# target's objects must reference __stack_chk_fail, and the objects of both
# targets together at least one fortified __*_chk function (FORTIFY only
# rewrites a call whose size the compiler cannot prove: the core alone has
# none, protocol.c has one).
# Binary: PIE (ELF type DYN with an interpreter), full RELRO (a GNU_RELRO
# segment and BIND_NOW), a non-executable stack, stack protector and FORTIFY
# symbols imported from glibc. Exits 1 on any miss.
set -u -o pipefail
build=$1 config=$2 binary=$3
manifest="$build/$config.yaml"
bin="$build/$config/$binary"
fail=0
bad() { echo "  FAIL: $*"; fail=1; }

[ -f "$manifest" ] || { echo "no build manifest $manifest: build first" >&2; exit 1; }
[ -x "$bin" ] || { echo "no binary $bin" >&2; exit 1; }

all_und=""
for target in CSecureCore CProtocolCrypto CTPMBinding CPostQuantum; do
srcdir=$target; [ -d "$srcdir" ] || srcdir=Sources/$target
objdir=$(find "$build" -path "*/$config/$target.build" -type d | head -n 1)
[ -n "$objdir" ] || { echo "no $target objects under $build for $config" >&2; exit 1; }
echo "hardening of the $target objects ($config):"
objects=0
# The objects of the target's current sources only: a build directory may still hold an object
# of a file that has since moved to another target.
target_objects=()
for src in "$srcdir"/*.c; do target_objects+=("$objdir/$(basename "$src").o"); done
for obj in "${target_objects[@]}"; do
    [ -f "$obj" ] || { bad "$(basename "$obj"): not built"; continue; }
    objects=$((objects + 1))
    name=$(basename "$obj")
    args=$(grep -F "/$target.build/$name\"]" "$manifest" | grep -F 'args:' | head -n 1)
    flags=$(printf '%s' "$args" | tr ',' '\n' | tr -d '" []')
    last_opt=$(printf '%s\n' "$flags" | grep -E '^-O' | tail -n 1)
    row="  $name:"
    if printf '%s\n' "$flags" | grep -qE '^-D_FORTIFY_SOURCE=[23]$' && [ -n "$last_opt" ] && [ "$last_opt" != "-O0" ]; then
        row="$row fortify($last_opt)"
    else bad "$name: no -D_FORTIFY_SOURCE=2 with optimisation (last -O: ${last_opt:-none})"; fi
    if printf '%s\n' "$flags" | grep -qE '^-fstack-protector-(strong|all)$'; then row="$row stack-protector"
    else bad "$name: no -fstack-protector-strong"; fi
    if printf '%s\n' "$flags" | grep -qE '^-f(PIC|PIE|pic|pie)$'; then row="$row pic"
    else bad "$name: not position-independent"; fi
    echo "$row"
done
[ "$objects" -gt 0 ] || bad "no objects found"
und=$(for obj in "${target_objects[@]}"; do [ -f "$obj" ] && readelf -sW "$obj" | awk '$7 == "UND" {print $8}'; done | sort -u)
all_und=$(printf '%s\n%s\n' "$all_und" "$und")
printf '%s\n' "$und" | grep -qx '__stack_chk_fail' || bad "no $target object calls __stack_chk_fail: the stack protector did not take effect"
echo "  objects import: __stack_chk_fail $(printf '%s\n' "$und" | grep -E '^__[a-z_]+_chk$' | tr '\n' ' ')"
done
chk=$(printf '%s\n' "$all_und" | grep -E '^__[a-z_]+_chk$' | sort -u | tr '\n' ' ')
[ -n "$chk" ] || bad "no fortified __*_chk call in any C object: FORTIFY did not take effect"
echo "  C objects together import the fortified: ${chk}"

echo "hardening of $binary ($config):"
type=$(readelf -hW "$bin" | awk -F: '/Type:/ {print $2}' | awk '{print $1}')
if [ "$type" = DYN ] && readelf -lW "$bin" | grep -q INTERP; then echo "  PIE: yes"; else bad "not PIE (type $type)"; fi
if readelf -lW "$bin" | grep -q GNU_RELRO; then echo "  RELRO: yes"; else bad "no GNU_RELRO segment"; fi
if readelf -dW "$bin" | grep -qE 'BIND_NOW|FLAGS_1.*NOW'; then echo "  BIND_NOW: yes (full RELRO)"; else bad "no BIND_NOW: partial RELRO only"; fi
stack=$(readelf -lW "$bin" | awk '/GNU_STACK/ {print $7}')
if [ -n "$stack" ] && [ "${stack#*E}" = "$stack" ]; then echo "  NX stack: yes ($stack)"; else bad "executable or missing GNU_STACK ($stack)"; fi
dyn=$(readelf --dyn-syms -W "$bin" | awk '{print $8}' | sed 's/@.*//' | sort -u)
printf '%s\n' "$dyn" | grep -qx '__stack_chk_fail' && echo "  stack protector: yes" || bad "binary imports no __stack_chk_fail"
bchk=$(printf '%s\n' "$dyn" | grep -E '^__[a-z_]+_chk$' | tr '\n' ' ')
[ -n "$bchk" ] && echo "  FORTIFY: yes ($bchk)" || bad "binary imports no fortified __*_chk function"
[ "$fail" = 0 ] && echo "hardening: all checks passed" || echo "hardening: FAILED"
exit "$fail"
