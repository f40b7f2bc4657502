"""The agent route reaches the test-bed machines: FakeIPA's deploy and clean steps act on the hardware.

Metal3's real baremetal-operator, real Ironic and FakeIPA (``metal3_machines``):
a BareMetalHost on the ``direct`` route (agent inspection, a raw disk image with
its sha256, metadata cleaning) is provisioned with user data; the machine
applies the config drive that FakeIPA's ``write_image`` step received (its SSH
key logs in, its host name is set); deprovisioning runs the agent's
``erase_devices_metadata`` clean step, which wipes the machine's disk (the key
no longer logs in, the tenant's files are gone). Nothing here goes through the
collection: this proves the test bed the hand-over suites stand on.
"""

from __future__ import annotations

import json
import time

import pytest
from harness import cloud_config
from kubernetes import client

pytestmark = [pytest.mark.machines, pytest.mark.real_bmo]

GROUP, VERSION, PLURAL = "metal3.io", "v1alpha1", "baremetalhosts"


def user_data(user: str, key: str, hostname: str) -> str:
    config = {"hostname": hostname, "users": ["default", {"name": user, "ssh_authorized_keys": [key]}]}
    config["ssh_authorized_keys"] = [key]
    return "#cloud-config\n" + json.dumps(config)


def test_direct_deploy_delivers_the_config_drive_and_cleaning_wipes_the_disk(kube_env, metal3_machines, ssh_keypair):
    bed = metal3_machines
    machine = bed.machine(0)
    name = "agent-direct"
    key, pub = ssh_keypair("tenant")
    timings = {}
    t0 = time.monotonic()
    with kube_env.api("admin") as api:
        custom = client.CustomObjectsApi(api)
        bed.create_host(api, name, 0, inspect=True)
        bed.wait_state(api, [name], "available")
        timings["available"] = time.monotonic() - t0
        assert not machine.running, "the agent ran on the system during inspection and cleaning, not its OS"
        client.CoreV1Api(api).create_namespaced_secret(
            bed.namespace,
            client.V1Secret(
                metadata=client.V1ObjectMeta(name=f"{name}-user-data"),
                string_data={"userData": user_data("tenant", pub, "deployed-direct")},
            ),
        )
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            bed.namespace,
            PLURAL,
            name,
            {
                "spec": {
                    "image": bed.image(),
                    "online": True,
                    "userData": {"name": f"{name}-user-data", "namespace": bed.namespace},
                }
            },
        )
        t1 = time.monotonic()
        bed.wait_state(api, [name], "provisioned")
        timings["provisioned"] = time.monotonic() - t1
        machine.wait_running(True, timeout=120)
        assert any(e.startswith("config drive ") for e in machine.events), machine.events
        result = machine.ssh("tenant", key, "hostname; echo private > ~/notes; sudo -n true || echo no-sudo")
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["deployed-direct", "no-sudo"]
        as_root = machine.ssh(cloud_config.DEFAULT_USER, key, "echo was here | sudo -n tee /srv/trace")
        assert as_root.returncode == 0, as_root.stderr

        custom.patch_namespaced_custom_object(
            GROUP, VERSION, bed.namespace, PLURAL, name, {"spec": {"image": None, "online": False, "userData": None}}
        )
        t2 = time.monotonic()
        bed.wait_state(api, [name], "available")
        timings["cleaned"] = time.monotonic() - t2
        assert "wipe erase_devices_metadata" in machine.events, machine.events
        assert not (machine.disk / "srv" / "trace").exists()
        assert not (machine.disk / "home" / "tenant").exists()
        assert "tenant:" not in (machine.disk / "etc" / "passwd").read_text()
        custom.delete_namespaced_custom_object(GROUP, VERSION, bed.namespace, PLURAL, name)
    print("direct route through FakeIPA:", {k: round(v, 1) for k, v in timings.items()}, machine.events)
