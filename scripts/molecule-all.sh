#!/usr/bin/env bash
# Run the role scenarios under extensions/molecule/ against a real Kubernetes
# control plane (etcd + kube-apiserver + kube-controller-manager of the
# integration harness, on 127.0.0.1), the way `make molecule` does.
#
# Usage: scripts/molecule-all.sh [SCENARIO...]      (default: every scenario)
#        scripts/molecule-all.sh --exec CMD [ARG...] (run CMD with the same environment)
#        MOLECULE_COMMAND=converge scripts/molecule-all.sh tenant_namespace
#
# The launcher (Python, below) starts the control plane, writes a kubeconfig
# per harness identity, and runs the command with:
#   K8S_AUTH_KUBECONFIG        the cluster admin's kubeconfig
#   BMT_KUBECONFIG_<IDENTITY>  every identity's kubeconfig (ADMIN, BINDER, TENANT_A, ...)
#   BMT_KUBE_SERVER            the apiserver URL
#   ANSIBLE_COLLECTIONS_PATH   a tree whose ansible_collections/baremetal/tenancy is this checkout
#   BMT_MOLECULE_STATE         where the scenarios keep their state (MOLECULE_EPHEMERAL_DIRECTORY)
# and stops the control plane when the command ends, fails, or the launcher is
# interrupted (SIGINT, SIGTERM, SIGHUP).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
VENV_BIN="${VENV_BIN:-$ROOT/.venv/bin}"
PYTHON="$VENV_BIN/python"
export PATH="$VENV_BIN:$PATH"

if [ "${1:-}" = "--run-scenarios" ]; then
  # Inside the launcher: one `molecule test` per scenario (syntax, prepare,
  # converge, idempotence, verify, cleanup); every scenario runs even when one
  # fails, and the exit code says whether any did.
  shift
  rc=0
  for s in "$@"; do
    echo "=== molecule ${MOLECULE_COMMAND:-test} -s $s"
    start=$(date +%s)
    # Scenario state lives with this control plane, never in ~/.ansible.
    export MOLECULE_EPHEMERAL_DIRECTORY="$BMT_MOLECULE_STATE/$s"
    if molecule "${MOLECULE_COMMAND:-test}" -s "$s"; then
      echo "=== scenario $s passed in $(( $(date +%s) - start ))s"
    else
      echo "=== scenario $s FAILED after $(( $(date +%s) - start ))s"
      rc=1
    fi
  done
  exit "$rc"
fi

if [ "${1:-}" = "--exec" ]; then
  shift
  [ "$#" -gt 0 ] || { echo "usage: $0 --exec CMD [ARG...]" >&2; exit 2; }
  cmd=("$@")
else
  if [ "$#" -gt 0 ]; then
    scenarios=("$@")
  else
    scenarios=()
    for dir in extensions/molecule/*/; do
      [ -f "$dir/molecule.yml" ] && scenarios+=("$(basename "$dir")")
    done
  fi
  [ "${#scenarios[@]}" -gt 0 ] || { echo "no molecule scenarios under extensions/molecule/"; exit 0; }
  cmd=("$ROOT/scripts/molecule-all.sh" --run-scenarios "${scenarios[@]}")
fi

exec "$PYTHON" - "${cmd[@]}" <<'PY'
"""Start the harness's Kubernetes control plane, run a command, stop it."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from harness import ansible, kube  # noqa: E402
from harness.ansible import collections_root  # noqa: E402


class Stop(Exception):
    pass


def on_signal(signum, _frame):
    raise Stop(signal.Signals(signum).name)


def stop_group(child):
    """SIGTERM the command's process group, wait, then SIGKILL what is left of it."""
    for sig, wait in ((signal.SIGTERM, 60), (signal.SIGKILL, 10)):
        try:
            os.killpg(child.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            child.wait(wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            # The command is gone; anything it left in its group goes too.
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            return


def main(argv):
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    workdir = Path(tempfile.mkdtemp(prefix="bmt-molecule-kube-"))
    coll_root = collections_root()
    env_ = kube.KubeEnv(workdir)
    child = None
    rc = 1
    try:
        t0 = time.monotonic()
        env_.start()
        for started in env_.history:
            print(f"started {started.service.summary()} in {started.seconds:.1f}s", flush=True)
        print(f"control plane ready in {time.monotonic() - t0:.1f}s (workdir {workdir})", flush=True)
        env = env_.ansible_env("admin")  # K8S_AUTH_KUBECONFIG and a private TMPDIR
        for identity in kube.IDENTITIES:
            env["BMT_KUBECONFIG_" + identity.upper().replace("-", "_")] = str(env_.kubeconfig(identity))
        env["BMT_KUBE_SERVER"] = env_.server
        env["BMT_MOLECULE_STATE"] = str(workdir / "molecule")
        env["ANSIBLE_COLLECTIONS_PATH"] = str(coll_root)
        env["ANSIBLE_FORCE_COLOR"] = "0"
        env["NO_COLOR"] = "1"
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        # The modules run in forks of a zygote of this venv's Python, as in the integration suites (the scenarios'
        # ansible_python_interpreter reads BMT_MOLECULE_PYTHON): a kubernetes.core module spent about 2.6 s of CPU
        # importing the same libraries every run. BMT_MODULE_ZYGOTE=0 runs the interpreter itself.
        ansible.use_zygotes()
        client = ansible.module_zygote_of(sys.executable)
        if client:
            env["BMT_MOLECULE_PYTHON"] = client
        # Its own process group, so that an interruption reaches molecule and
        # ansible-playbook too, not only the shell that started them.
        child = subprocess.Popen(argv, env=env, start_new_session=True)
        rc = child.wait()
    except Stop as exc:
        print(f"interrupted ({exc}); stopping", file=sys.stderr, flush=True)
        rc = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if child is not None:
            stop_group(child)
        env_.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(coll_root, ignore_errors=True)
        print("control plane stopped", flush=True)
    return rc


sys.exit(main(sys.argv[1:]))
PY
