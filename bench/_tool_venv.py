"""What the benches against other tools share: the tool's own venv, the CPU of its processes, progress lines.

The tools (metalsmith, the ``openstack`` CLI with ESI's plugins) are installed into a venv of their own under
``.tmp/`` by the test venv's ``uv``, so their pins never touch the test venv's.
"""

from __future__ import annotations

import datetime
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def make_venv(venv: Path, packages: tuple[str, ...], report: list[str]) -> dict:
    """``venv`` with ``packages`` (pip requirement strings) installed; the versions of the ``report`` names."""
    uv = REPO / ".venv" / "bin" / "uv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([str(uv), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([str(uv), "pip", "install", "--quiet", "--python", str(python), *packages], check=True)
    # compiled as pip compiles what it installs (uv does not by default, and this machine sets
    # PYTHONDONTWRITEBYTECODE): else every tool process compiles its imports again (2-3 s)
    subprocess.run([str(python), "-m", "compileall", "-q", "-j0", str(venv / "lib")], check=False, capture_output=True)
    code = "import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in %r}))" % list(report)
    return json.loads(subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout)


def children_cpu() -> float:
    """CPU seconds of this process's ended children and their reaped descendants (the tools' whole process trees)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def log(message: str) -> None:
    print("%s %s" % (datetime.datetime.now().strftime("%H:%M:%S"), message), file=sys.stderr, flush=True)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_and_print(bench: str, run, args, details: dict) -> None:
    """``run(args, workdir)`` in a work directory of its own (kept with ``BENCH_KEEP``), then its result with the
    bench's name, start and end, the machine's cores and load, and ``details`` as ONE JSON line."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-%s-" % bench.replace("_", "-")))
    started_at, load_before = _now(), [round(value, 2) for value in os.getloadavg()]
    try:
        result = run(args, workdir)
    finally:
        if not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(workdir, ignore_errors=True)
    result.update({"bench": bench, "started": started_at, "ended": _now(), "cpus": os.cpu_count()})
    result["load"] = {"start": load_before, "end": [round(value, 2) for value in os.getloadavg()]}
    result.update(details)
    print(json.dumps(result, sort_keys=True))
