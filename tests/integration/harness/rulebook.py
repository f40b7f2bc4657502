"""Run ``ansible-rulebook`` the way an EDA controller does, against this checkout of the collection.

``Rulebook(rulebook, variables, env, workdir)`` starts ``ansible-rulebook --rulebook <rulebook>
-i <localhost inventory> --vars <variables> -v`` in its own process group (so that killing it
kills the playbooks it started), with ``env`` (credentials) made hermetic by
:func:`harness.ansible.ansible_env`; its output is read as it comes into ``.lines`` and
``<workdir>/rulebook.log``. ``kill()`` SIGKILLs the group, and the process groups of every process
the rulebook started: ansible-runner starts each playbook of a ``run_playbook`` action in a session
of its own, which a kill of the rulebook's group alone would leave running, parent-less, as an EDA
controller that loses its activation's container does not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from harness import procs
from harness.ansible import VENV_BIN, ansible_env


class Rulebook:
    """One ``ansible-rulebook`` process (its own process group) and its output, read as it comes."""

    def __init__(self, rulebook: str, variables: Mapping, env: Mapping[str, str], workdir: Path):
        workdir.mkdir(parents=True, exist_ok=True)
        vars_file = workdir / "vars.yml"
        vars_file.write_text(json.dumps(dict(variables)))
        inventory = workdir / "inventory.yml"
        inventory.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
        argv = [
            str(VENV_BIN / "ansible-rulebook"),
            "--rulebook",
            rulebook,
            "-i",
            str(inventory),
            "--vars",
            str(vars_file),
            "-v",
        ]
        self.lines: list[str] = []
        self.log = workdir / "rulebook.log"
        self.proc = subprocess.Popen(
            argv,
            env=ansible_env(env, workdir),
            cwd=str(workdir),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        with open(self.log, "w", encoding="utf-8") as log:
            for line in self.proc.stdout:
                self.lines.append(line)
                log.write(line)
                log.flush()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for_line(self, text: str, timeout: float = 180) -> None:
        """Wait until the output has a line containing ``text`` (the rulebook must stay up meanwhile)."""
        deadline = time.monotonic() + timeout
        while not any(text in line for line in list(self.lines)):
            assert self.proc.poll() is None, "the rulebook ended:\n" + self.output[-6000:]
            assert time.monotonic() < deadline, "no %r in the rulebook's output:\n%s" % (text, self.output[-6000:])
            time.sleep(0.2)

    def kill(self):
        """SIGKILL the rulebook and everything it started (its process group and those of its descendants)."""
        if self.proc.poll() is None:
            groups = {self.proc.pid}
            for pid in procs.process_tree(self.proc.pid)[1:]:
                try:
                    groups.add(os.getpgid(pid))
                except ProcessLookupError:
                    pass
            for group in groups:
                try:
                    os.killpg(group, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.proc.wait(timeout=30)
        self.reader.join(timeout=10)
