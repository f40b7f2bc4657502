"""A Git smart-HTTP server on 127.0.0.1 for the GitOps suites.

Git's own ``git http-backend`` (CGI) serves the bare repositories under one
directory, behind a small threaded HTTP server from the standard library; the
server runs as its own process (``python -m harness.git_server``), started and
stopped by PID like every other service of the harness. Clients are real Git
clients: Flux's source-controller (go-git) fetches, and ``git`` pushes
(``http.receivepack`` is on for every repository made here).

Main entry points:

- :class:`GitServer`: ``start()``/``stop()``, ``create_repo(name)`` (a bare
  repository), ``url(name)`` (its HTTP URL), ``commit(name, files, message)``
  (clone, write or delete files, commit, push over HTTP; returns the commit).

Nothing is authenticated: the server listens on 127.0.0.1 only and holds test
data only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .procs import LOOPBACK, Proc, Service, free_port, start_process, wait_http

START_TIMEOUT = 60
GIT_TIMEOUT = 120

# The identity of commits made by the harness (no global git config is read).
COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "bmt harness",
    "GIT_AUTHOR_EMAIL": "harness@example.invalid",
    "GIT_COMMITTER_NAME": "bmt harness",
    "GIT_COMMITTER_EMAIL": "harness@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def git(*args: str, cwd: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> str:
    """Run ``git`` with the harness identity; return stdout, raise with stderr on failure."""
    full_env = {**os.environ, **COMMIT_ENV, **(env or {})}
    result = subprocess.run(
        ["git", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=GIT_TIMEOUT, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


class GitServer:
    """Bare repositories under ``workdir/repos`` served over smart HTTP."""

    def __init__(self, workdir: str | os.PathLike):
        self.workdir = Path(workdir)
        self.root = self.workdir / "repos"
        self.proc: Proc | None = None
        self.service: Service | None = None
        self.base_url = ""

    def start(self) -> GitServer:
        self.root.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.base_url = f"http://{LOOPBACK}:{port}"
        argv = [sys.executable, "-m", "harness.git_server", "--root", str(self.root), "--port", str(port)]
        env = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        self.proc = start_process("git-http", argv, self.workdir / "logs", env=env)
        wait_http(f"{self.base_url}/healthz", START_TIMEOUT, self.proc, ok_statuses={200})
        version = git("--version").split()[-1]
        self.service = Service("git-http-backend", version, self.base_url, port, self.proc.pid)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None

    def __enter__(self) -> GitServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def url(self, name: str) -> str:
        return f"{self.base_url}/{name}.git"

    def head(self, name: str, branch: str = "main") -> str:
        """The commit ``branch`` of repository ``name`` points at, as a client sees it."""
        return git("ls-remote", self.url(name), f"refs/heads/{branch}").split()[0]

    def files(self, name: str, branch: str = "main") -> list[str]:
        """The paths of every file in ``branch`` of repository ``name``, read on the server."""
        return git("--git-dir", str(self.root / f"{name}.git"), "ls-tree", "-r", "--name-only", branch).split()

    def create_repo(self, name: str, branch: str = "main") -> str:
        """Create the bare repository ``name`` (pushes over HTTP allowed); return its URL."""
        path = self.root / f"{name}.git"
        git("init", "--quiet", "--bare", f"--initial-branch={branch}", str(path))
        git("config", "http.receivepack", "true", cwd=path)
        return self.url(name)

    def commit(
        self,
        name: str,
        files: Mapping[str, str | None],
        message: str,
        branch: str = "main",
    ) -> str:
        """Write (text) or delete (``None``) ``files`` in repository ``name``, commit and push over HTTP.

        Returns the new commit's hash.
        """
        with tempfile.TemporaryDirectory(prefix="bmt-git-", dir=self.workdir) as tmp:
            checkout = Path(tmp) / "checkout"
            git("clone", "--quiet", self.url(name), str(checkout))
            git("checkout", "--quiet", "-B", branch, cwd=checkout)
            for rel, text in files.items():
                target = checkout / rel
                if text is None:
                    if target.is_dir():
                        shutil.rmtree(target)
                    else:
                        target.unlink(missing_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
            git("add", "--all", cwd=checkout)
            git("commit", "--quiet", "--allow-empty", "-m", message, cwd=checkout)
            git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=checkout)
            return git("rev-parse", "HEAD", cwd=checkout).strip()


# --------------------------------------------------------------------------
# The server process: git http-backend as CGI behind http.server
# --------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server_version = "bmt-git-http"
    protocol_version = "HTTP/1.1"
    root: Path  # set on the class by serve()

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._reply(200, [("Content-Type", "text/plain")], b"ok\n")
            return
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _backend(self) -> None:
        path, query = [*self.path.split("?", 1), ""][:2]
        body = self._read_body()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
        }
        for header in ("Content-Encoding", "Git-Protocol"):
            if self.headers.get(header):
                env["HTTP_" + header.upper().replace("-", "_")] = self.headers[header]
        result = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, timeout=GIT_TIMEOUT, check=False
        )
        if result.stderr:
            self.log_message("http-backend: %s", result.stderr.decode(errors="replace").strip())
        # CGI: headers, an empty line, the body (the first blank line wins, CRLF or LF).
        ends = [(i, len(sep)) for sep in (b"\r\n\r\n", b"\n\n") if (i := result.stdout.find(sep)) >= 0]
        end, width = min(ends) if ends else (len(result.stdout), 0)
        head, payload = result.stdout[:end], result.stdout[end + width :]
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            key, value = [*line.split(":", 1), ""][:2]
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers.append((key, value.strip()))
        if result.returncode != 0 and status == 200:
            status = 500
        self._reply(status, headers, payload)

    def _reply(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def serve(root: Path, port: int) -> None:
    handler = type("Handler", (_Handler,), {"root": root})
    with ThreadingHTTPServer((LOOPBACK, port), handler) as server:
        server.serve_forever()


def _main() -> None:
    parser = argparse.ArgumentParser(description="git http-backend on 127.0.0.1")
    parser.add_argument("--root", required=True, type=Path)
    parser.add_argument("--port", required=True, type=int)
    args = parser.parse_args()
    serve(args.root.resolve(), args.port)


if __name__ == "__main__":
    _main()
