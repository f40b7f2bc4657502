"""Step 9 of the Metal3 half of `make demo`: alice's inventory-driven deployment over SSH on test-bed machines.

The live-ISO hosts of the story have no agent and nothing to log into, so this
step starts a second baremetal-operator in the same cluster whose hosts are
test-bed machines (``harness.metal3_machines``, as the machine suites use it:
network namespaces with sshd, FakeIPA as the agent handing the config drive to
the machine and wiping its disk when it is cleaned, Ironic on PostgreSQL). Then:

1. the owner enrols the two machines as BareMetalHosts (labelled
   ``demo-pool: web``, automated cleaning on) in their own namespace and puts
   them in the pool for the namespaces matching ``p-.*`` (role host_pool);
2. alice runs ``examples/deploy_web.yml`` with her kubeconfig, her namespace,
   her SSH key and ``examples/inventory/deploy_web.metal3.claimed_hosts.yml``:
   it claims two hosts with her key in their user data, waits until the
   operator has deployed them (``direct`` route through FakeIPA), reads the
   claimed_hosts inventory again and over SSH installs a small web service on
   each host, each fetching the other's page; the story's background binder
   binds the claims;
3. alice releases the two claims (metal3_release_hosts.yml): the operator
   cleans the hosts (the agent wipes each machine's disk) and they are back in
   the pool.

Needs root (network namespaces, a bridge, mounts): without it the step says so
and is skipped, as the Ironic half runs without machines.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from pathlib import Path

from harness import metal3_machines

from .common import PLAYBOOKS, REPO, DemoError, say

NAMESPACE = "demo-machines"  # the machines' BareMetalHosts (the second operator watches it)
TENANT_NAMESPACE, TENANT, IDENTITY = "p-alice", "alice", "tenant-a"
CLAIMS = ["m-web-0", "m-web-1"]
TIMEOUT = 900  # seconds a host may take to reach a state (the direct route: agent, cleaning, image write)


@dataclasses.dataclass
class WebStep:
    story: object  # demo.metal3.Story: its cluster, work directory, table rows and play()

    @property
    def kube(self):
        return self.story.kube

    @property
    def workdir(self) -> Path:
        return self.story.workdir

    @property
    def rows(self) -> dict:
        return self.story.rows

    def run(self) -> None:
        if os.geteuid() != 0:
            say("not root: no test-bed machines, so no deploy_web over SSH on Metal3 (step 9 skipped)")
            return
        say(
            "starting a second baremetal-operator whose hosts are test-bed machines (Ironic on PostgreSQL, FakeIPA) ..."
        )
        started = time.monotonic()
        stack = metal3_machines.start(self.kube, self.workdir / "machines", len(CLAIMS), (NAMESPACE,))
        try:
            say(
                f"  {len(stack.machines)} machines on {stack.bed.bridge} ({stack.bed.subnet}): "
                + ", ".join(f"{m.name} {m.ip}" for m in stack.machines)
                + f"; started in {time.monotonic() - started:.1f}s"
            )
            self._enrol(stack)
            self._deploy(stack)
            self._release(stack)
        finally:
            stack.stop()

    def _enrol(self, stack) -> None:
        started = time.monotonic()
        with self.kube.api("admin") as api:
            for index, machine in enumerate(stack.machines):
                stack.create_host(api, machine.name, index, labels={"demo-pool": "web"})
            stack.wait_state(api, [m.name for m in stack.machines], "available", timeout=TIMEOUT)
        pool = {
            "name": "Share the machines",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "roles": [
                {
                    "role": "baremetal.tenancy.host_pool",
                    "vars": {
                        "host_pool_namespace": NAMESPACE,
                        "host_pool_hosts": [
                            {"names": [m.name for m in stack.machines], "class": "small", "share": {"matches": "p-.*"}}
                        ],
                    },
                }
            ],
        }
        self.story.play([pool], "admin")
        say(
            f"owner: enrolled {', '.join(m.name for m in stack.machines)} in {NAMESPACE} (automated cleaning on), "
            f"available after {time.monotonic() - started:.1f}s, and shared them with p-.* as class small (role host_pool)"
        )

    def _deploy(self, stack) -> None:
        keys = self.workdir / "alice-ssh"
        keys.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@demo", "-f", str(keys / "id")], check=True
        )
        image = stack.image()
        env = dict(
            self.kube.ansible_env(IDENTITY),
            BMT_CLAIM_NAMESPACES=TENANT_NAMESPACE,
            ANSIBLE_PRIVATE_KEY_FILE=str(keys / "id"),
        )
        run, took = self.story.play(
            REPO / "examples" / "deploy_web.yml",
            IDENTITY,
            {
                "backend": "metal3",
                "deploy_web_namespace": TENANT_NAMESPACE,
                "deploy_web_prefix": "m-",
                "deploy_web_image": {
                    "url": image["url"],
                    "checksum": image["checksum"],
                    "checksum_type": "sha256",
                    "format": "raw",
                },
                "deploy_web_host_selector": {"matchLabels": {"infra-kind": "small", "demo-pool": "web"}},
                "deploy_web_public_key_file": str(keys / "id.pub"),
                "deploy_web_known_hosts": str(keys / "known_hosts"),
                "deploy_web_wait_timeout": TIMEOUT,
                # run_playbook points Ansible's remote temp at the controller's work directory; hosts use their own
                "ansible_remote_tmp": "~/.ansible/tmp",
            },
            env=env,
            inventory=str(REPO / "examples" / "inventory" / "deploy_web.metal3.claimed_hosts.yml"),
        )
        try:
            fetched = run.host_results("Fetch the other hosts' pages from this host")
        except AssertionError as exc:
            raise DemoError(str(exc)) from None
        if sorted(fetched) != CLAIMS:
            raise DemoError(f"deploy_web.yml fetched pages on {sorted(fetched)}, not on {CLAIMS}")
        answers = []
        for claim, result in sorted(fetched.items()):
            (peer,) = result["results"]
            if peer.get("status") != 200 or peer.get("content") != f"deploy_web on {peer['item']}\n":
                raise DemoError(f"{claim} fetched {peer.get('item')}: {peer.get('status')} {peer.get('content')!r}")
            answers.append(f"{claim} got {peer['item']}'s page")
        for claim in CLAIMS:
            self.rows[claim] = {
                "tenant": f"{TENANT} ({TENANT_NAMESPACE})",
                "claim": claim,
                "host": "a test-bed machine",
                "state": "deploy_web over SSH",
            }
        say(
            f"{TENANT}: examples/deploy_web.yml claimed {', '.join(CLAIMS)} with her SSH key in their user data, the "
            "operator deployed them through the agent, and over SSH through the claimed_hosts inventory it started "
            f"the web service on both: {'; '.join(answers)} ({took:.1f}s)"
        )

    def _release(self, stack) -> None:
        events = {m.name: len(m.events) for m in stack.machines}
        started = time.monotonic()
        self.story.play(
            PLAYBOOKS / "metal3_release_hosts.yml",
            IDENTITY,
            {"claim_namespace": TENANT_NAMESPACE, "release_claims": CLAIMS, "release_wait_timeout": TIMEOUT},
        )
        with self.kube.api("admin") as api:
            stack.wait_hosts(
                api,
                [m.name for m in stack.machines],
                lambda h: (
                    (h.get("status") or {}).get("provisioning", {}).get("state") == "available"
                    and not h["spec"].get("consumerRef")
                ),
                "back in the pool",
                timeout=TIMEOUT,
            )
        wiped = [m.name for m in stack.machines if any(e.startswith("wipe ") for e in m.events[events[m.name] :])]
        if sorted(wiped) != sorted(m.name for m in stack.machines):
            raise DemoError(f"released, but the agent wiped only {wiped}: {[m.events for m in stack.machines]}")
        for claim in CLAIMS:
            self.rows[claim]["state"] = "deploy_web over SSH, released (disk wiped)"
        say(
            f"{TENANT}: released {', '.join(CLAIMS)} (metal3_release_hosts.yml): the operator cleaned both hosts, "
            f"the agent wiped each machine's disk, and they are back in the pool after {time.monotonic() - started:.1f}s"
        )
