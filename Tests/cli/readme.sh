#!/usr/bin/env bash
# README walkthroughs that run: every ```console block of README.md is executed and its output is
# compared with what the README shows, so the README cannot drift from the tool.
# Usage: Tests/cli/readme.sh PATH/TO/securepin [README.md]
#
# The rules a README author follows:
# - A console block is a walkthrough a user is told to run. Each line starting with "$ " is a
#   command; the lines after it, up to the next command, are what it prints (standard output and
#   standard error together, as on a terminal).
# - The blocks run in README order, each in its own bash, all in one fresh scratch directory that
#   is also $HOME (so ~/.myvault lands there, and a file one block makes is there for the next),
#   with securepin first on PATH and standard input empty. Commands of one block share the
#   shell: variables and jobs (`kill %1`) carry over to the next line. A block gets 120 s.
# - Placeholders: "…" inside a line stands for any text on that line (a port, a timing, a random
#   id, a path); a line that is only "…" stands for any number of lines.
# - Every command line must exit 0: a README line that shows a failure ends with `; echo "exit $?"`.
# - A process a block leaves running (a server started with &) is killed when the block ends, and
#   the scratch directory is removed.
# - Any other fenced block with a line starting with "$ " fails: a command shown to a user runs here.
set -uo pipefail
B=${1:?usage: readme.sh PATH/TO/securepin [README.md]}
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
readme=${2:-$(dirname "$0")/../../README.md}
work=$(mktemp -d)
cleanup() {
    for f in "$work"/*/pgid; do
        [[ -s $f ]] && kill -9 -- "-$(cat "$f")" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
passed=0
failed=0

# The securepin under test is "securepin" for the blocks.
mkdir -p "$work/bin"
ln -s "$B" "$work/bin/securepin"

# Split the README: one file per console block (first line: its line number), and a complaint
# for every other block that shows a "$ " command.
awk -v dir="$work" '
    /^```/ {
        if (!inside) {
            inside = 1; info = substr($0, 4); start = NR; file = ""
            if (info == "console") { n++; file = sprintf("%s/block%02d", dir, n); print NR > (file ".line") }
        } else {
            inside = 0; if (file != "") close(file); file = ""
        }
        next
    }
    inside && file != "" { print > file; next }
    inside && /^\$ / { printf "README.md:%d: a %s block shows the command \"%s\": make it a console block so that it runs\n", start, (info == "" ? "plain" : info), substr($0, 3) > (dir "/stray") }
' "$readme"

if [[ -s $work/stray ]]; then
    while IFS= read -r line; do
        echo "FAIL: $line" >&2
        failed=$((failed + 1))
    done <"$work/stray"
fi

# The shell that runs one block: prints each command as "$ command", then runs it.
cat >"$work/runner" <<'EOF'
echo $$ >"$2" # setsid made this shell a process group leader: the cleanup kills the group
while IFS= read -r -u 9 cmd; do
    printf '$ %s\n' "$cmd"
    eval "$cmd" </dev/null || printf '(the command above exited %s; a README line must exit 0)\n' "$?"
done 9<"$1"
EOF

# Does the actual transcript match the README's, placeholders included?
matches() { # expected file, actual file
    awk -v ell="…" '
        FNR == NR { e[++ne] = $0; next }
        { a[++na] = $0 }
        function line_matches(pat, s,    parts, k, i, p, pos, tail) {
            k = split(pat, parts, ell)
            if (k == 1) return pat == s
            if (substr(s, 1, length(parts[1])) != parts[1]) return 0
            pos = length(parts[1]) + 1
            for (i = 2; i < k; i++) {
                p = index(substr(s, pos), parts[i])
                if (p == 0) return 0
                pos += p - 1 + length(parts[i])
            }
            tail = parts[k]
            return length(s) - length(tail) + 1 >= pos && substr(s, length(s) - length(tail) + 1) == tail
        }
        function from(i, j,    t) {
            if (i > ne) return j > na
            if (e[i] == ell) {
                for (t = j; t <= na + 1; t++) if (from(i + 1, t)) return 1
                return 0
            }
            if (j > na) return 0
            return line_matches(e[i], a[j]) && from(i + 1, j + 1)
        }
        END { exit !from(1, 1) }
    ' "$1" "$2"
}

blocks=0
home="$work/home"
mkdir -m 0700 "$home"
for block in "$work"/block??; do
    [[ -e $block ]] || continue
    blocks=$((blocks + 1))
    name=$(basename "$block")
    line=$(cat "$block.line")
    dir="$work/$name.run"
    mkdir -p "$dir"
    grep '^\$ ' "$block" | cut -c3- >"$dir/cmds"
    (cd "$home" && HOME="$home" TMPDIR="$home" PATH="$work/bin:$PATH" \
        timeout 120 setsid bash "$work/runner" "$dir/cmds" "$dir/pgid") >"$dir/actual" 2>&1
    [[ -s $dir/pgid ]] && kill -9 -- "-$(cat "$dir/pgid")" 2>/dev/null
    first=$(head -n 1 "$dir/cmds")
    if matches "$block" "$dir/actual"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: README.md:$line: the block starting \"\$ $first\" printed something else" \
            "(README left, actual right; … is a placeholder):" >&2
        diff "$block" "$dir/actual" >&2
    fi
done
if [[ $blocks == 0 ]]; then
    echo "FAIL: no console block found in $readme" >&2
    failed=$((failed + 1))
fi

echo "readme: $passed passed, $failed failed"
[[ $failed == 0 ]]
