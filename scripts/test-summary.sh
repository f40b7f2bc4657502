#!/usr/bin/env bash
# The last lines of make test: each integration session's result and the checks', with the tests that failed,
# so that the end of a long (possibly truncated) CI log says what failed. Reads .tmp/integration-*.log and
# .tmp/test-checks.log and .tmp/test-molecule.log; prints at most 20 failure lines per log.
set -uo pipefail

echo "=================== summary ==================="
for log in .tmp/integration-*.log; do
    [ -e "$log" ] || continue
    name=${log#.tmp/integration-}
    name=${name%.log}
    ended=$(grep -E "^session $name: (exit|its preparation failed)" "$log" | tail -n 1)
    counts=$(grep -E "^=*.*[0-9]+ (passed|failed|errors?|deselected).* in [0-9.]+s" "$log" | tail -n 1 | tr -d '=' | sed 's/^ *//; s/ *$//')
    echo "session $name: ${ended#"session $name: "}${counts:+ ($counts)}"
    grep -E "^(FAILED|ERROR) " "$log" | head -n 20 | cut -c1-300 | sed 's/^/    /'
done
for log in .tmp/test-checks.log .tmp/test-molecule.log; do
    [ -e "$log" ] || continue
    grep -E "^(checks|molecule): exit" "$log" | tail -n 1
    # a failed task shows in its play's recap (failed=N); a "fatal: ... FAILED!" line alone may be an ignored error
    grep -E "^(ERROR|FAILED)|^=== scenario |failed=[1-9]|unreachable=[1-9]|CRITICAL|Error [0-9]+$" \
        "$log" | head -n 20 | cut -c1-300 | sed 's/^/    /'
done
