"""A Helm chart repository on 127.0.0.1 for the GitOps suites: ``index.yaml`` and packaged charts over HTTP.

A Helm (HTTP) chart repository is a directory served as static files: an
``index.yaml`` listing every version of every chart with the URL of its
package and the package's SHA-256 digest, and the packages themselves,
``<name>-<version>.tgz`` tarballs holding the chart under ``<name>/``. The
harness builds both itself (as ``helm package`` and ``helm repo index``
would), so no Helm binary is needed, and Flux's source-controller fetches
them as it fetches any chart repository (``HelmRepository`` of the default
type, then a ``HelmChart`` per release).

The directory is served by Python's own ``http.server`` as a process of its
own (``python -m http.server``), started and stopped by PID like every other
service of the harness. Nothing is authenticated: it listens on 127.0.0.1
only and holds test charts only.

Main entry points:

- :class:`ChartRepository`: ``start()``/``stop()``, ``url`` (the repository
  URL a ``HelmRepository`` names), ``publish(name, version, files)`` (package
  a chart version from its files, relative to the chart's directory, and
  rewrite ``index.yaml``), ``versions(name)``.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
from collections.abc import Mapping
from pathlib import Path

import yaml

from .procs import LOOPBACK, Proc, Service, free_port, start_process, wait_http

START_TIMEOUT = 30
# A fixed time for the packages' members and the index entries: the same chart files give the same digest.
EPOCH = 1_700_000_000
CREATED = "2023-11-14T22:13:20Z"


def package(name: str, version: str, files: Mapping[str, str]) -> bytes:
    """The ``.tgz`` of chart ``name`` at ``version``: ``files`` (paths relative to the chart) under ``<name>/``.

    ``Chart.yaml`` is written from ``name`` and ``version`` unless ``files`` holds one."""
    members = dict(files)
    members.setdefault("Chart.yaml", f"apiVersion: v2\nname: {name}\nversion: {version}\n")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(members):
            data = members[rel].encode()
            info = tarfile.TarInfo(f"{name}/{rel}")
            info.size, info.mtime, info.mode = len(data), EPOCH, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class ChartRepository:
    """Packaged charts and their ``index.yaml`` under ``workdir/charts``, served over HTTP."""

    def __init__(self, workdir: str | os.PathLike):
        self.workdir = Path(workdir)
        self.root = self.workdir / "charts"
        self.proc: Proc | None = None
        self.service: Service | None = None
        self.url = ""
        self.entries: dict[str, list[dict]] = {}

    def start(self) -> ChartRepository:
        self.root.mkdir(parents=True, exist_ok=True)
        self._write_index()
        port = free_port()
        self.url = f"http://{LOOPBACK}:{port}"
        argv = [sys.executable, "-m", "http.server", "--bind", LOOPBACK, "--directory", str(self.root), str(port)]
        self.proc = start_process("chart-repo", argv, self.workdir / "logs")
        wait_http(f"{self.url}/index.yaml", START_TIMEOUT, self.proc, ok_statuses={200})
        self.service = Service("helm-chart-repository", "http.server", self.url, port, self.proc.pid)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None

    def __enter__(self) -> ChartRepository:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def publish(self, name: str, version: str, files: Mapping[str, str]) -> str:
        """Package ``name`` ``version`` from ``files``, add it to ``index.yaml``; return the package's digest."""
        data = package(name, version, files)
        filename = f"{name}-{version}.tgz"
        (self.root / filename).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        chart = yaml.safe_load(dict(files).get("Chart.yaml") or f"apiVersion: v2\nname: {name}\nversion: {version}\n")
        entry = {**chart, "urls": [filename], "digest": digest, "created": CREATED}
        others = [e for e in self.entries.get(name, []) if e["version"] != version]
        self.entries[name] = [entry, *others]
        self._write_index()
        return digest

    def versions(self, name: str) -> list[str]:
        return [e["version"] for e in self.entries.get(name, [])]

    def _write_index(self) -> None:
        index = {"apiVersion": "v1", "entries": self.entries, "generated": CREATED}
        tmp = self.root / "index.yaml.tmp"
        tmp.write_text(yaml.safe_dump(index, sort_keys=True))
        tmp.replace(self.root / "index.yaml")
