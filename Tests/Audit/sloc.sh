#!/bin/sh
# sloc.sh — source lines of code of the audited C core: lines that hold code,
# not blank lines and not comments (block or line comments). Tests excluded.
# Usage: sloc.sh LIMIT FILE...   Prints one line per file, then the total
# against LIMIT. Reports an excess; it is a budget, not a gate.
limit=$1
shift
awk -v limit="$limit" '
    FNR == 1 { if (file != "") printf "  %-34s %5d\n", file, n; file = FILENAME; n = 0 }
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
        printf "  %-34s %5d\n", file, n
        printf "C core SLOC: %d (budget %d)", total, limit
        if (total > limit) printf ": over by %d", total - limit
        printf "\n"
    }' "$@"
