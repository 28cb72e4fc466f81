#!/usr/bin/env bash
# Builds the DocC site of every public module (a library product) with the toolchain's docc, from
# the symbol graphs of the existing build (swift package dump-symbol-graph: no plugin, no second
# build). Any DocC warning fails the run.
# Usage: Tests/docs/docc.sh OUTPUT_DIR [--check]
#   OUTPUT_DIR  one static site per module in OUTPUT_DIR/<Module>, and OUTPUT_DIR/index.html
#   --check     only convert and report (no static-hosting transform): what make test runs
set -uo pipefail
out=${1:?usage: docc.sh OUTPUT_DIR [--check]}
mode=${2:-site}
swift=${SWIFT:-swift}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
# The public modules: the package's library products. Each is converted on its own, so a link to
# another module's symbol is written in code voice (`OtherModule.Symbol`), not as a DocC link.
modules="SecureCore PostQuantum Biometry PinVault PinVaultTPM PinVaultServer PinStrength PinEntry PinEntryTerminal PowerAuthProtocol Activation
 ActivationServer HTTPServer SQLiteStore PostgresStore HTTPClient ReferenceServer ActivationHTTP ActivationKeyring"
products=$(sed -n 's/^ *\.library(name: "\([A-Za-z]*\)".*/\1/p' Package.swift | sort)
if [[ $(tr ' ' '\n' <<<"$modules" | grep -v '^$' | sort) != "$products" ]]; then
    echo "docc.sh: the module list differs from the library products of Package.swift:" $products
    exit 1
fi
"$swift" package dump-symbol-graph --minimum-access-level public >"$out.symbolgraph.log" 2>&1 ||
    { cat "$out.symbolgraph.log"; exit 1; }
graphs=$(sed -n 's/^Files written to //p' "$out.symbolgraph.log")
[[ -d $graphs ]] || { echo "docc.sh: no symbol graphs (see $out.symbolgraph.log)"; exit 1; }
rm -rf "$out"
mkdir -p "$out/.graphs"
failed=0
for m in $modules; do
    mkdir -p "$out/.graphs/$m"
    cp "$graphs/$m.symbols.json" "$graphs/$m"@*.symbols.json "$out/.graphs/$m/" 2>/dev/null
    catalog=()
    [[ -d Sources/$m/$m.docc ]] && catalog=("Sources/$m/$m.docc")
    hosting=(--transform-for-static-hosting --hosting-base-path "$m")
    [[ $mode == --check ]] && hosting=()
    docc convert "${catalog[@]}" --additional-symbol-graph-dir "$out/.graphs/$m" \
        --fallback-display-name "$m" --fallback-bundle-identifier "securepin.$m" \
        --output-dir "$out/$m" "${hosting[@]}" \
        --warnings-as-errors >"$out/$m.log" 2>&1
    code=$?
    warnings=$(grep -c '^warning:\|^error:' "$out/$m.log")
    if [[ $code != 0 || $warnings != 0 ]]; then
        failed=$((failed + 1))
        echo "docc $m: FAILED, $warnings warning(s)"
        sed -n '/^\(warning\|error\):/,/^$/p' "$out/$m.log" | head -60
    else
        echo "docc $m: no warnings"
    fi
done
rm -rf "$out/.graphs"
if [[ $mode != --check ]]; then
    {
        echo '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>SecurePIN documentation</title></head>'
        echo '<body><h1>SecurePIN documentation</h1><ul>'
        for m in $modules; do
            echo "<li><a href=\"$m/documentation/$(tr '[:upper:]' '[:lower:]' <<<"$m")/\">$m</a></li>"
        done
        echo '</ul></body></html>'
    } >"$out/index.html"
fi
echo "docc: $(wc -w <<<"$modules") modules, $failed with warnings"
[[ $failed == 0 ]]
