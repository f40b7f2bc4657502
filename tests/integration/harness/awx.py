"""AWX as the integration suites run it: the shipped credential types, job templates and inventory sources
(extensions/awx/) rendered into private data directories (:mod:`harness.awx_job`) and run with ``ansible-runner``,
as AWX runs them; used by the AWX suites (``awx/test_awx_jobs.py``, ``awx/test_esi_leap_awx.py``)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import ansible_runner
import yaml

from harness import awx_job
from harness.ansible import REPO_ROOT, ansible_env
from harness.keystone import REGION

AWX = REPO_ROOT / "extensions" / "awx"
CREDENTIAL_TYPES = {
    t["name"]: t for t in yaml.safe_load((AWX / "credential_types.yml").read_text())["credential_types"]
}
TEMPLATES = {t["name"]: t for t in yaml.safe_load((AWX / "job_templates.yml").read_text())["job_templates"]}
SOURCES = {s["name"]: s for s in yaml.safe_load((AWX / "inventory_sources.yml").read_text())["inventory_sources"]}
KUBE, OPENSTACK, BMC = (CREDENTIAL_TYPES["baremetal.tenancy %s" % n] for n in ("Kubernetes", "OpenStack", "BMC"))
NAMESPACES = {"tenant-a": "awx-a", "tenant-b": "awx-b"}
GROUP, VERSION = "metal3.io", "v1alpha1"


@dataclasses.dataclass
class Job:
    name: str
    status: str
    rc: int
    stdout: str
    events: list[dict]
    directory: Path
    stats: dict

    def artifacts_text(self) -> str:
        """What AWX keeps of a job: its events and its stdout."""
        artifacts = self.directory / "artifacts" / "job"
        texts = [path.read_text() for path in sorted((artifacts / "job_events").glob("*.json"))]
        return "\n".join([*texts, (artifacts / "stdout").read_text()])

    def debug_messages(self) -> list:
        return [
            e["event_data"]["res"]["msg"]
            for e in self.events
            if e.get("event") == "runner_on_ok" and "msg" in (e.get("event_data", {}).get("res") or {})
        ]


@dataclasses.dataclass
class Update:
    source: str
    rc: int
    listing: dict
    output: str  # everything the update printed (AWX keeps it as the update's stdout)


class Awx:
    """The jobs of this module, each in a private data directory of its own under ``workdir``."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.jobs: list[Job] = []
        self.updates: list[Update] = []
        self.private_files: list[str] = []  # every file AWX would have written (secrets included)
        self._count = 0

    def _directory(self, kind: str) -> Path:
        self._count += 1
        directory = self.workdir / ("%s-%03d" % (kind, self._count))
        (directory / "project").mkdir(parents=True)
        for part in ("playbooks", "extensions/awx/inventories"):
            shutil.copytree(REPO_ROOT / part, directory / "project" / part)
        return directory

    def base_env(self, directory: Path) -> dict[str, str]:
        """What the execution environment gives every job: this checkout as the installed collection."""
        env = ansible_env({}, directory)
        return {k: v for k, v in env.items() if k.startswith("ANSIBLE_") or k in ("PATH", "HOME")}

    def update(self, source_name: str, credential: tuple[dict, dict], source_vars: dict | None = None) -> Update:
        """An inventory update of a shipped source with ``credential``, as AWX runs it."""
        source = SOURCES[source_name]
        directory = self._directory("update")
        injected = awx_job.render_credential(
            credential[0], credential[1], lambda label: str(directory / "env" / ("credential-" + label))
        )
        # AWX fails an update whose source does not parse (else ansible-inventory prints an empty inventory)
        envvars = dict(self.base_env(directory), **injected.env, **(source_vars or {}))
        envvars["ANSIBLE_INVENTORY_UNPARSED_FAILED"] = "True"
        files = {str(Path(p).relative_to(directory)): content for p, content in injected.files.items()}
        files["env/envvars"] = json.dumps(envvars)
        awx_job.write_tree(directory, files)
        self.private_files += files.values()
        out = directory / "listing.json"
        response, error, rc = ansible_runner.run_command(
            executable_cmd="ansible-inventory",
            cmdline_args=[
                "-i",
                str(directory / "project" / source["source_path"]),
                "--list",
                "--export",
                "--output",
                str(out),
            ],
            private_data_dir=str(directory),
            envvars=envvars,
            quiet=True,
        )
        listing = json.loads(out.read_text()) if rc == 0 else {}
        update = Update(source_name, rc, listing, response + error + (out.read_text() if rc == 0 else ""))
        self.updates.append(update)
        return update

    def launch(self, template_name: str, credentials: list[tuple[dict, dict]], answers: dict, listing: dict) -> Job:
        template = TEMPLATES[template_name]
        directory = self._directory("job")
        pdd = awx_job.job_private_data_dir(
            str(directory), template, credentials, answers, listing, self.base_env(directory)
        )
        awx_job.write_tree(directory, pdd.files, pdd.modes)
        self.private_files += pdd.files.values()
        # A cancel callback of our own, as AWX passes one (its job's cancel flag): without it ansible-runner installs
        # SIGINT and SIGTERM handlers in this process that only set a flag, and the rest of the pytest session could
        # no longer be interrupted (make's Ctrl-C, integration-sessions.sh's trap).
        runner = ansible_runner.run(
            private_data_dir=str(directory),
            playbook=template["playbook"],
            ident="job",
            quiet=True,
            cancel_callback=lambda: False,
        )
        stdout = (directory / "artifacts" / "job" / "stdout").read_text()
        job = Job(template_name, runner.status, runner.rc, stdout, list(runner.events), directory, runner.stats or {})
        self.jobs.append(job)
        return job


def kube_credential(kube_env, identity: str) -> tuple[dict, dict]:
    return KUBE, {
        "host": kube_env.server,
        "bearer_token": kube_env.tokens[identity],
        "ca_cert": Path(kube_env.ca_file).read_text(),
    }


def openstack_credential(auth: dict) -> tuple[dict, dict]:
    inputs = {k: v for k, v in auth.items() if k in {f["id"] for f in OPENSTACK["inputs"]["fields"]}}
    return OPENSTACK, dict(inputs, region_name=REGION)
