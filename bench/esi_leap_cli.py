#!/usr/bin/env python
"""Benchmark: an ESI-Leap offer claimed, the node leased and deployed by the tenant, through the collection against
the same with ``openstack esi`` and ``openstack baremetal`` commands (issue 41, item 5).

Run standalone: ``.venv/bin/python bench/esi_leap_cli.py [--rounds N] [--tick S] [--poll S] [--test-bed]``. It
creates (or reuses) its own venv ``.tmp/bench-esiclient-venv`` (``uv venv`` + ``uv pip install`` of
:data:`PACKAGES`, then compiled to bytecode as in ``metalsmith.py``: the test venv is untouched) and starts the stack
of ``esi_leap_claim.py`` (its functions are imported): Keystone, Ironic on PostgreSQL, ESI-Leap's API and manager
(``--tick``: the manager's seconds between passes, 1 as in the test bed), the ``ironic_tenancy`` policy and
``fake-hardware`` nodes of the owner project ``infra`` (the deployment itself is instant). Prints ONE JSON line;
progress goes to stderr.

Per round, each side on a node of its own, the owner has offered the node to tenant-a (``host_offer``, not timed);
then, as tenant-a's ``member`` (project-scoped, the harness's ``clouds.yaml``):

- ``collection``: one ``ansible-playbook``: ``host_offer_claim`` (``wait: true``) then ``host_claim`` of the node
  (``candidate_nodes``, the image, ``wait: true``), as ``esi_leap_claim.py``'s ``esi_leap`` side; Ansible as a user
  runs it (no test-bed caches, an empty ``ansible.cfg``) unless ``--test-bed``;
- ``cli``: the commands ESI's documentation gives a lessee, one ``openstack`` process each (``--os-cloud tenant-a``):
  ``openstack esi offer claim OFFER -f json`` (the offer's UUID known, as from ``openstack esi offer list``; no
  ``--start-time``/``--end-time``: ESI-Leap starts the lease now and ends it with the offer); then ``openstack
  baremetal node show NODE -f value -c lessee`` every ``--poll`` seconds (1) until it shows tenant-a's project (the
  tenant cannot see the node before: 404); ``openstack baremetal node set NODE --instance-info image_source=URL
  --instance-info image_checksum=MD5`` (what ``host_claim`` writes for that image); ``openstack baremetal node
  deploy NODE --wait 300`` (ironicclient polls every 2 s).

Measured the same way on both sides, from the side's first process's start: ``lessee_s`` (a watcher reads the node
as the owner every 50 ms: when its ``lessee`` became tenant-a), ``deployed_s`` (when it was ``active``), ``total_s``
(the last process's end), ``manager_s`` (the lease's ``start_time`` in ESI-Leap to the ``lessee`` written),
``cpu_s`` (CPU seconds of the side's ended processes and their children: ``getrusage``); where the time goes:
``lease_made_s`` (the lease's ``start_time``), ``deploy_requested_s`` (the watcher saw the node leave
``available``), ``active_to_end_s``. For ``collection`` also its tasks' starts and ends (the json callback's
``duration``) and ``allocation_made_s`` (the allocation's ``created_at``); for ``cli`` each command's seconds,
``lessee_seen_s`` (when the polling command saw the lessee), ``polls``, ``deploy_cmd_to_request_s`` (the deploy
process's start-up, Keystone and its request). ``--trace`` runs each ``openstack`` with ``--debug`` and keeps its
log, each line timed (with ``BENCH_KEEP=1``: in the work directory's ``logs/``). After each round (not
timed) the tenant releases (``host_release``, ``host_offer_claim state=absent``; ``openstack baremetal node undeploy
--wait``, ``openstack esi lease delete``) and the owner withdraws the offer. ``--rounds`` rounds (3) after a warm-up,
the side first flipped each round; medians; ``ratio``: collection over CLI. ``startup_s``: the process floors (the
median of the rounds): ``ansible-playbook`` of one ``debug`` task, ``openstack --version`` (its Python start and
``openstackclient``'s imports, no plugin, no request).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import esi_leap_claim as E  # bench/: the stack, the tasks and the 50 ms watcher of esi_leap_claim.py

REPO = E.REPO
from _tool_venv import children_cpu, log, make_venv, run_and_print
from fixtures_openstack import apply_tenancy_policy  # esi_leap_claim put tests/integration on sys.path
from harness import openstack as H
from harness.ansible import localhost_play, run_playbook
from harness.esi_leap import start_esi_leap

VENV = REPO / ".tmp" / "bench-esiclient-venv"
PACKAGES = (
    "python-esiclient==1.3.0",
    "python-esileapclient==1.1.0",  # ``openstack esi offer ...`` and ``esi lease ...`` (python-esiclient has none)
    "python-openstackclient==10.5.0",
    "python-ironicclient==6.3.0",
)
TENANT, OWNER, RC = E.TENANT, "infra", "bench-esi"
WAIT = E.WAIT


def traced(argv: list, env: dict, started: float) -> subprocess.CompletedProcess:
    """``--trace``: the process's ``--debug`` log, each line prefixed with its seconds since the process start."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []

    def read():
        for line in proc.stderr:
            lines.append("%7.3f %s" % (time.monotonic() - started, line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out = proc.stdout.read()
    proc.wait(WAIT + 120)
    reader.join(10)
    return subprocess.CompletedProcess(argv, proc.returncode, out, "".join(lines))


class Bench:
    """The services, the work directory, how each side's processes run."""

    def __init__(self, env, workdir: Path, test_bed: bool, poll: float, trace: bool = False):
        self.env, self.workdir, self.test_bed, self.poll, self.trace = env, workdir, test_bed, poll, trace
        self.user_cfg = workdir / "user-ansible.cfg"
        self.user_cfg.write_text("")
        self.project = env.tenants[TENANT].project_id

    def play(self, cloud: str, tasks: list, name: str):
        run_env = dict(self.env.ansible_env(cloud))
        if not self.test_bed:  # as a user runs it: ansible-core's defaults, no test-bed caches
            run_env.update({"BMT_TEST_BED_CACHE": "", "ANSIBLE_CONFIG": str(self.user_cfg)})
        run = run_playbook(localhost_play(tasks), run_env, self.workdir / name, timeout=WAIT + 120)
        if not run.ok:
            raise RuntimeError("%s %s: %s" % (cloud, name, run.explain()[-3000:]))
        return run

    def openstack(self, args: list, name: str, check: bool = True) -> tuple[float, subprocess.CompletedProcess]:
        """One ``openstack`` process of the bench venv as tenant-a's member; its stderr kept."""
        argv = [str(VENV / "bin" / "openstack"), "--os-cloud", TENANT, *args]
        env = dict(os.environ, OS_CLIENT_CONFIG_FILE=str(self.env.clouds_yaml))
        if self.trace:
            argv.insert(1, "--debug")
        started = time.monotonic()
        if self.trace:
            proc = traced(argv, env, started)
        else:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=WAIT + 120, check=False)
        seconds = time.monotonic() - started
        logs = self.workdir / "logs"
        logs.mkdir(exist_ok=True)
        (logs / ("%s.err" % name)).write_text(proc.stderr)
        if check and proc.returncode:
            raise RuntimeError("openstack %s: rc %s: %s" % (" ".join(args), proc.returncode, proc.stderr[-3000:]))
        return seconds, proc

    def offer(self, node, name: str) -> str:
        """The owner offers the node to tenant-a (not timed): the offer's UUID."""
        run = self.play(OWNER, [E.task("host_offer", nodes=[node.name], lessee=TENANT)], name)
        return run.result("host_offer")["offers"][0]["uuid"]

    def withdraw(self, node, name: str) -> None:
        self.play(OWNER, [E.task("host_offer", state="absent", nodes=[node.name])], name)


class Watch(E.NodeWatch):
    """esi_leap_claim's 50 ms watcher, noting also when the node left ``available`` (the deployment requested)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.deploy_at = None

    def read(self):
        node = self.admin.baremetal.get_node(self.node_id, fields=["lessee", "provision_state"])
        now = time.time()
        if self.lessee_at is None and node.lessee == self.project:
            self.lessee_at = now
        if self.deploy_at is None and node.provision_state != "available":
            self.deploy_at = now
        if self.active_at is None and node.provision_state == "active":
            self.active_at = now


def lease_figures(bench: Bench, watch, started: float, ended: float, lease_uuid: str) -> dict:
    """The same figures for both sides, from the side's start: the lease made in ESI-Leap (its ``start_time``),
    the ``lessee`` written, the deployment requested, ``active``, the end."""
    record = E.lease_record(bench.env, lease_uuid)
    created = E.utc(record["start_time"])
    return {
        "lease_made_s": created - started,
        "lessee_s": watch.lessee_at - started,
        "deploy_requested_s": watch.deploy_at - started,
        "deployed_s": watch.active_at - started,
        "total_s": ended - started,
        "manager_s": watch.lessee_at - created,
    }


def task_times(run, started: float) -> dict:
    """From the json callback: each module task's start and end (``ansible-playbook``'s own times) from the
    side's start."""
    out = {}
    for play in run.report["plays"]:
        for item in play["tasks"]:
            name, duration = item["task"]["name"], item["task"]["duration"]
            short = {"host_offer_claim": "offer_claim_task", "host_claim": "claim_task"}.get(name)
            if short:
                out[short + "_start_s"] = E.utc(duration["start"].rstrip("Z")) - started
                out[short + "_end_s"] = E.utc(duration["end"].rstrip("Z")) - started
    return out


def collection_round(bench: Bench, node, label: str) -> dict:
    bench.offer(node, "%s-offer" % label)
    tasks = [E.task("host_offer_claim", node=node.name, wait=True, wait_timeout=WAIT), E.claim(node.name)]
    with Watch(bench.env.admin_conn, node.id, bench.project) as watch:
        cpu, started = children_cpu(), time.time()
        run = bench.play(TENANT, tasks, "%s-claim" % label)
        ended = time.time()
        cpu = children_cpu() - cpu
    figures = lease_figures(bench, watch, started, ended, run.result("host_offer_claim")["lease"]["uuid"])
    figures["cpu_s"] = cpu
    figures.update(task_times(run, started))
    allocation = bench.env.admin_conn.baremetal.get_node(node.id, fields=["allocation_uuid"]).allocation_id
    made = bench.env.admin_conn.baremetal.get_allocation(allocation).created_at
    figures["allocation_made_s"] = E.utc(made.replace("Z", "").split("+")[0]) - started
    figures["active_to_end_s"] = figures["total_s"] - figures["deployed_s"]
    bench.play(TENANT, [E.task("host_release", backend="ironic", name="claim-%s" % node.name)], "%s-rel" % label)
    bench.play(TENANT, [E.task("host_offer_claim", state="absent", node=node.name)], "%s-end" % label)
    bench.withdraw(node, "%s-withdraw" % label)
    return figures


def cli_round(bench: Bench, node, label: str) -> dict:
    offer = bench.offer(node, "%s-offer" % label)
    steps, polls, poll_s = {}, 0, []
    with Watch(bench.env.admin_conn, node.id, bench.project) as watch:
        cpu, started = children_cpu(), time.time()
        steps["claim_cmd_s"], proc = bench.openstack(["esi", "offer", "claim", offer, "-f", "json"], "%s-claim" % label)
        lease = json.loads(proc.stdout)["uuid"]
        while True:  # as a user waits for the manager: the node as the tenant sees it
            seconds, proc = bench.openstack(
                ["baremetal", "node", "show", node.name, "-f", "value", "-c", "lessee"],
                "%s-show%d" % (label, polls),
                check=False,
            )
            polls += 1
            poll_s.append(seconds)
            if proc.returncode == 0 and proc.stdout.strip() == bench.project:
                break
            if time.time() - started > WAIT:
                raise RuntimeError("lessee not seen after %s s: %s" % (WAIT, proc.stderr[-1000:]))
            time.sleep(bench.poll)
        seen = time.time()
        info = ["--instance-info", "image_source=%s" % E.IMAGE["url"]]
        info += ["--instance-info", "image_checksum=%s" % E.IMAGE["checksum"]]
        steps["set_cmd_s"] = bench.openstack(["baremetal", "node", "set", node.name, *info], "%s-set" % label)[0]
        steps["deploy_cmd_s"] = bench.openstack(
            ["baremetal", "node", "deploy", node.name, "--wait", str(WAIT)], "%s-deploy" % label
        )[0]
        ended = time.time()
        cpu = children_cpu() - cpu
    figures = lease_figures(bench, watch, started, ended, lease)
    figures.update(steps)
    figures.update(
        {
            "cpu_s": cpu,
            "lessee_seen_s": seen - started,
            "polls": polls,
            "poll_cmd_s": statistics.median(poll_s),
            "commands": 3 + polls,
        }
    )
    # the deploy command's start (its process, Keystone, the request) and its end after ``active`` (its 10 s polls)
    figures["deploy_cmd_to_request_s"] = figures["deploy_requested_s"] - (figures["total_s"] - steps["deploy_cmd_s"])
    figures["active_to_end_s"] = figures["total_s"] - figures["deployed_s"]
    bench.openstack(["baremetal", "node", "undeploy", node.name, "--wait", str(WAIT)], "%s-undeploy" % label)
    bench.openstack(["esi", "lease", "delete", lease], "%s-lease-delete" % label)
    for _second in range(WAIT):  # the lease ended: ESI-Leap removes the lessee (at once or at the manager's next pass)
        if bench.env.admin_conn.baremetal.get_node(node.id, fields=["lessee"]).lessee is None:
            break
        time.sleep(0.5)
    bench.withdraw(node, "%s-withdraw" % label)
    return figures


def startup_floors(bench: Bench, label: str) -> dict:
    started = time.monotonic()
    bench.play(TENANT, [{"name": "noop", "ansible.builtin.debug": {"msg": "x"}}], "%s-noop" % label)
    ansible_s = time.monotonic() - started
    started = time.monotonic()
    subprocess.run([str(VENV / "bin" / "openstack"), "--version"], check=True, capture_output=True)
    return {"ansible_playbook_debug": ansible_s, "openstack_version": time.monotonic() - started}


def rounded(value, digits=2):
    if isinstance(value, dict):
        return {key: rounded(item, digits) for key, item in value.items()}
    if isinstance(value, list):
        return [rounded(item, digits) for item in value]
    return round(value, digits) if isinstance(value, float) else value


def run(args, workdir: Path) -> dict:
    versions = make_venv(
        VENV, PACKAGES, [p.split("==", maxsplit=1)[0] for p in PACKAGES] + ["openstacksdk", "osc-lib", "esisdk"]
    )
    env = H.start_openstack(workdir / "services", tenants=[TENANT], sushy_systems=[], database="postgresql")
    esi = None
    try:
        apply_tenancy_policy(env, workdir / "policy")
        esi = start_esi_leap(env, workdir / "esi-leap", tick=args.tick)
        bench = Bench(env, workdir, args.test_bed, args.poll, args.trace)
        sides = {"collection": collection_round, "cli": cli_round}
        nodes = {
            side: [
                H.enroll_fake_node(env.admin_conn, "bx-%s-%d" % (side[:3], r), RC, env.infra_project_id)
                for r in range(args.rounds + 1)
            ]
            for side in sides
        }
        figures = {side: [] for side in sides}
        floors = []
        for r in range(args.rounds + 1):  # round 0 warms up
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                got = sides[side](bench, nodes[side][r], "r%d-%s" % (r, side))
                log("round %d %s: %s" % (r, side, json.dumps(rounded(got))))
                if r:
                    figures[side].append(got)
            floor = startup_floors(bench, "r%d" % r)
            log("round %d startup: %s" % (r, json.dumps(rounded(floor))))
            if r:
                floors.append(floor)
        medians = {
            side: {key: statistics.median(f[key] for f in values) for key in values[0]}
            for side, values in figures.items()
        }
        coll, cli = medians["collection"], medians["cli"]
        return {
            "versions": versions,
            "median_s": rounded(medians),
            "rounds_s": rounded(figures),
            "ratio": {key: round(coll[key] / cli[key], 3) for key in ("lessee_s", "deployed_s", "total_s", "cpu_s")},
            "startup_s": rounded({key: statistics.median(f[key] for f in floors) for key in floors[0]}),
        }
    finally:
        if esi is not None:
            esi.stop()
        env.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tick", type=float, default=1.0, help="ESI-Leap manager's seconds between passes")
    parser.add_argument("--poll", type=float, default=1.0, help="the CLI side's sleep between lessee polls")
    parser.add_argument("--test-bed", action="store_true", help="Ansible with the harness's caches and ansible.cfg")
    parser.add_argument("--trace", action="store_true", help="openstack --debug, its log timed (BENCH_KEEP=1 keeps it)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *dummy: sys.exit(1))  # ends through the finally: the stack stops
    details = {
        "rounds": args.rounds,
        "manager_tick_s": args.tick,
        "cli_poll_s": args.poll,
        "ansible": "test bed (caches, ansible.cfg)" if args.test_bed else "as a user runs it",
    }
    run_and_print("esi_leap_cli", run, args, details)


if __name__ == "__main__":
    main()
