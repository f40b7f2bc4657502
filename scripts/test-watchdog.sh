#!/usr/bin/env bash
# make test's watchdog: at BMT_TEST_DEADLINE (seconds since the epoch; .ci/run sets it a few minutes before CI's
# time limit) it prints how far each part of the run got: the last lines of each session's, the checks' and
# molecule's logs, the load, and the processes that used the most CPU. It changes nothing; make test ends it when
# the run ends first. CI keeps the end of a run's output, and a run cut off by CI's limit prints no session log.
set -uo pipefail
deadline=${BMT_TEST_DEADLINE:?seconds since the epoch}
trap 'kill "${sleeper:-}" 2>/dev/null; exit 0' TERM INT
wait_s=$((deadline - $(date +%s)))
if [ "$wait_s" -gt 0 ]; then
    sleep "$wait_s" &
    sleeper=$!
    wait "$sleeper"
fi
echo "=================== make test still running at $(date -u +%H:%M:%S) (BMT_TEST_DEADLINE) ==================="
for log in .tmp/integration-*.log .tmp/test-checks.log .tmp/test-molecule.log; do
    [ -e "$log" ] || continue
    echo "--- the last lines of $log"
    tail -n 12 "$log" | cut -c1-300
done
echo "--- load average: $(cat /proc/loadavg)"
echo "--- the processes with the most CPU (TIME), all users"
ps -eo pid,ppid,etimes,times,args --sort=-times | head -n 25 | cut -c1-220
