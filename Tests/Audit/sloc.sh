#!/bin/sh
# sloc.sh — source lines of code of one audited C target: lines that hold
# code, not blank lines and not comments (block or line comments). Tests excluded.
# Usage: sloc.sh NAME LIMIT FILE...   Prints one line per file, then the
# target's total against LIMIT. Reports an excess; it is a budget, not a gate.
name=$1
limit=$2
shift 2
awk -v name="$name" -v limit="$limit" '
    FNR == 1 { if (file != "") printf "  %-44s %5d\n", file, n; file = FILENAME; n = 0 }
    {
        line = $0; code = 0
        while (length(line) > 0) {
            if (in_comment) {
                end = index(line, "*/")
                if (end == 0) { line = ""; break }
                line = substr(line, end + 2); in_comment = 0
            } else {
                start = index(line, "/*"); slash = index(line, "//")
                if (slash > 0 && (start == 0 || slash < start)) line = substr(line, 1, slash - 1)
                start = index(line, "/*")
                before = start > 0 ? substr(line, 1, start - 1) : line
                if (before ~ /[^ \t]/) code = 1
                if (start == 0) break
                line = substr(line, start + 2); in_comment = 1
            }
        }
        n += code; total += code
    }
    END {
        printf "  %-44s %5d\n", file, n
        printf "%s SLOC: %d (budget %d)", name, total, limit
        if (total > limit) printf ": over by %d", total - limit
        printf "\n"
    }' "$@"
