#!/usr/bin/env bash
# Three `securepin server` instances on one PostgreSQL database (MultiInstanceTests): a throw-away
# cluster of their own in BUILD_DIR/postgres/multi, stopped and removed on exit (also on failure),
# and the command that restarts it mid-load. The Swift tests must be built (swift build --build-tests).
# Usage: Tests/postgres/multi-instance.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: multi-instance.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$build/postgres" "$build/test-logs"
dir=$(cd "$build/postgres" && pwd)/multi
log=$build/test-logs/postgres-multi-swift.txt
trap '"$here/cluster.sh" stop "$dir"' EXIT
"$here/cluster.sh" start "$dir" >&2
export SECUREPIN_TEST_POSTGRES_DSN="$(cat "$dir/dsn")"
export SECUREPIN_TEST_POSTGRES_RESTART="'$here/cluster.sh' restart '$dir'"
if ! ${SWIFT:-swift} test --skip-build --filter MultiInstanceTests >"$log" 2>&1; then
    grep -E '✘|error' "$log" >&2 || tail -n 40 "$log" >&2
    echo "postgres multi-instance: 0 passed, 1 failed"
    exit 1
fi
passed=$(sed -n 's/.*Test run with \([0-9]*\) tests\{0,1\} in .* passed.*/\1/p' "$log")
if [[ $passed != 3 ]]; then
    echo "postgres multi-instance: expected 3 tests to run, the log says '${passed:-none}'" >&2
    echo "postgres multi-instance: 0 passed, 1 failed"
    exit 1
fi
echo "postgres multi-instance: $passed passed, 0 failed"
