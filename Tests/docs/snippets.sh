#!/usr/bin/env bash
# The code in the DocC articles is code the tests build and run: every ```swift block of an article
# (Sources/*/*.docc/*.md) follows a marker <!-- snippet: FILE#NAME --> and must be, line for line,
# the region between "// snippet.begin NAME" and "// snippet.end" of FILE (in Tests/DocSnippetTests,
# the test target that compiles and runs it). An unmarked swift block fails.
# Usage: Tests/docs/snippets.sh [--update]   (--update copies the regions into the articles)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
update=${1:-}
failed=0
checked=0
for article in Sources/*/*.docc/*.md; do
    [[ -e $article ]] || continue
    out=$(mktemp)
    awk -v update="$update" -v article="$article" '
        function region(file, name,    line, inside, text, found) {
            text = ""; inside = 0; found = 0
            while ((getline line < file) > 0) {
                if (line ~ "// snippet.begin " name "$") { inside = 1; found = 1; continue }
                if (inside && line ~ /\/\/ snippet.end$/) { inside = 0; continue }
                if (inside) text = text line "\n"
            }
            close(file)
            if (!found) { printf "%s: no region %s in %s\n", article, name, file > "/dev/stderr"; bad = 1 }
            return text
        }
        /^<!-- snippet: .* -->$/ { split($3, ref, "#"); want = region(ref[1], ref[2]); marked = 1; print; next }
        /^```swift$/ {
            if (!marked) { printf "%s:%d: a swift block without a snippet marker\n", article, NR > "/dev/stderr"; bad = 1 }
            inblock = 1; got = ""; print; next
        }
        inblock && /^```$/ {
            inblock = 0; marked = 0; checked++
            if (got != want) {
                if (update == "--update") { printf "%s", want } else {
                    printf "%s:%d: the block differs from its snippet region\n", article, NR > "/dev/stderr"; bad = 1
                    printf "%s", got
                }
            } else printf "%s", got
            print; next
        }
        inblock { got = got $0 "\n"; next }
        { print }
        END { print checked > "/dev/fd/3"; exit bad }
    ' "$article" >"$out" 3>"$out.count"
    code=$?
    checked=$((checked + $(cat "$out.count")))
    [[ $update == --update ]] && cat "$out" >"$article"
    rm -f "$out" "$out.count"
    [[ $code == 0 ]] || failed=$((failed + 1))
done
echo "snippets: $checked article code blocks match the compiled snippets, $failed article(s) differ"
[[ $failed == 0 && $checked -gt 0 ]]
