#!/usr/bin/env bash
# Run the integration pytest sessions side by side and report each.
#
# Eight sessions, each with its own services: plain (the cluster without baremetal-operator plus the Ironic
# suites), real_bmo (the clusters with the real operator), machines (every suite whose hosts are test-bed
# machines, marker machines: network namespaces, a bridge and sshd per machine; root; on Metal3 they start an
# operator stack of their own, on Ironic a Keystone + Ironic stack per module, so they run beside the others
# instead of lengthening them: the Ironic hand-over suites alone take about as long as the plain session),
# faults (the fault suites, marker faults: killed processes and restarted services on services of their own, so
# a restart there disturbs no other suite; also make test-faults; the bad-input matrix, marker bad_input, in a
# session of its own, faults_input, beside them: one session of both took longest of all), gitops (marker gitops: the real Flux
# controllers and a Git server on a cluster of their own, whose multi-tenancy lockdown would change what the
# other suites' clusters allow; also make test-gitops), networks (marker networks: the switch, Neutron and
# networking-generic-switch on a Keystone + Ironic of their own; also make test-networks) and esi (marker esi:
# ESI-Leap's API and manager beside a Keystone + Ironic of their own; also make test-esi). Machine suites not yet
# passed whole would carry the marker pending (make test-pending; none is marked now) and run in none. Each session starts its
# services on free loopback ports and its own temporary directories, and the shared seeds under the cache
# directory are built atomically, so they can run at once: most of their time is spent waiting for Ironic,
# the operator and the BMCs. Each session writes its own log (.tmp/integration-<name>.log), printed whole
# when all have ended, and its table of wall time per fixture and per test file (tests/integration/timings.py)
# to .tmp/timings-<name>.json. A selection without tests for a session (pytest exit 5, "no tests ran") is fine.
# INTEGRATION_PREPARE_<session>, when set, is a command the session runs before its pytest (make integration builds
# Flux, Neutron and ESI-Leap's venv there; make test builds them before the sessions start, so there they find them
# built); its output goes to the session's log and its failure fails the session.
# Each session's preparation and end are also printed as they happen, so that a run cut short (CI's time limit) shows
# how far each session got.
# INTEGRATION_SERIAL=1 runs them one after the other. INTEGRATION_WORKERS=N (N > 1) splits each session
# over N pytest-xdist workers, a test file per worker at a time (--dist loadfile): each worker is a session
# of its own, with its own services.
#
# Usage: integration-sessions.sh PYTEST_COMMAND... -- SELECTION...
set -euo pipefail

pytest=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    pytest+=("$1")
    shift
done
[ $# -gt 0 ] && shift
selection=("$@")
workers=${INTEGRATION_WORKERS:-1}
if [ "$workers" -gt 1 ]; then
    pytest+=(-n "$workers" --dist loadfile)
fi

mkdir -p .tmp
rm -f .tmp/integration-*.pid
names=(plain real_bmo machines faults faults_input gitops networks esi)
never=" and not pending and not esi and not networks"
own=" and not faults and not gitops$never"
markers=("not real_bmo and not machines$own" "real_bmo and not machines$own" "machines$own"
    "faults and not bad_input and not gitops$never" "bad_input and not gitops$never"
    "gitops$never" "networks and not esi and not gitops and not pending" "esi and not gitops and not pending")
pids=()
start=$SECONDS

run_session() {
    local name=$1 marker=$2 log=.tmp/integration-$1.log
    local rc=0 prepare_var="INTEGRATION_PREPARE_$1"
    : >"$log"
    if [ -n "${!prepare_var:-}" ]; then
        echo "session $name: preparing: ${!prepare_var}" >>"$log"
        if ! bash -c "${!prepare_var}" >>"$log" 2>&1; then
            echo "session $name: its preparation failed after $((SECONDS - start)) s" | tee -a "$log"
            return 1
        fi
        echo "session $name: prepared after $((SECONDS - start)) s" | tee -a "$log"
    fi
    BMT_SESSION=$name BMT_TIMINGS_DIR=$PWD/.tmp "${pytest[@]}" "${selection[@]}" -m "$marker" >>"$log" 2>&1 &
    echo $! >".tmp/integration-$name.pid"
    wait $! || rc=$?
    echo "session $name: exit $rc after $((SECONDS - start)) s" | tee -a "$log"
    [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ]
}

if [ "${INTEGRATION_SERIAL:-0}" = 1 ]; then
    status=0
    for i in "${!names[@]}"; do
        run_session "${names[$i]}" "${markers[$i]}" || status=1
        cat ".tmp/integration-${names[$i]}.log"
    done
    exit "$status"
fi

for i in "${!names[@]}"; do
    run_session "${names[$i]}" "${markers[$i]}" &
    pids+=($!)
done
# Stop the sessions if make is interrupted: SIGINT to each pytest (not to the subshell waiting for it, which
# would pass nothing on), whose fixtures then end the services they started (tests/integration/conftest.py
# makes sure SIGINT raises KeyboardInterrupt there even when the job started with it ignored).
trap 'for name in "${names[@]}"; do [ -s ".tmp/integration-$name.pid" ] && kill -INT "$(cat ".tmp/integration-$name.pid")" 2>/dev/null; done; true' INT TERM

status=0
for i in "${!names[@]}"; do
    wait "${pids[$i]}" || status=1
done
wait # a wait cut short by the trap returned before its session's teardown ended
for name in "${names[@]}"; do
    echo "=================== integration session: $name ==================="
    cat ".tmp/integration-$name.log"
done
echo "integration: all sessions ended after $((SECONDS - start)) s, status $status"
exit "$status"
