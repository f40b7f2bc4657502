"""Hanging services: the harness's :class:`harness.fault_proxy.FaultProxy` black-holes one service.

Each case points one client at a proxy in front of a real service that accepts connections and
never answers (a hung API server, Ironic, a BMC) and sets the timeout the module or the plugin
offers. Asserted: the run fails (it does not hang: the harness's own timeout would end it), the
message names the service and says it timed out, no traceback, and nothing was written
(snapshots as the admin before and after, through the real, unproxied service).
"""

from __future__ import annotations

import json

import pytest
import yaml
from fixtures_faults import has_traceback, ironic_snapshot, kube_snapshot, snapshot_diff
from harness.ansible import localhost_play, run_inventory, run_playbook
from harness.fault_proxy import FaultProxy

pytestmark = pytest.mark.faults

TIMEOUT = 3


@pytest.fixture
def hung_ironic(openstack_env, tmp_path):
    ironic = FaultProxy("127.0.0.1", openstack_env.ironic.port, mode="blackhole")
    clouds = openstack_env.write_clouds_yaml(tmp_path / "clouds.yaml", baremetal_endpoint_override=ironic.url())
    yield openstack_env, clouds
    ironic.stop()


def test_a_hung_ironic_fails_the_claim_after_api_timeout(hung_ironic, tmp_path):
    env, clouds = hung_ironic
    before = ironic_snapshot(env)
    task = {
        "name": "claim",
        "baremetal.tenancy.host_claim": {
            "backend": "ironic",
            "name": "hung-0",
            "resource_class": "rc-hung",
            "api_timeout": TIMEOUT,
        },
    }
    run = run_playbook(localhost_play([task]), env.ansible_env("tenant-a", clouds), tmp_path, timeout=600)
    result = run.result("claim")
    assert result.get("failed") is True, run.explain()
    message = result["msg"]
    assert not has_traceback(run.stdout, run.stderr, json.dumps(result)), run.explain()
    assert message.startswith(
        "claim hung-0: Ironic did not answer GET /allocations/hung-0 within %d s (api_timeout)" % TIMEOUT
    ), message
    assert not snapshot_diff(before, ironic_snapshot(env))


def test_a_hung_bmc_fails_the_account_after_bmc_timeout(openstack_env, tmp_path):
    emulator = openstack_env.sushy_server
    bmc = FaultProxy("127.0.0.1", emulator.service.port, mode="blackhole")
    try:
        before = ironic_snapshot(openstack_env, emulators=[emulator])
        address = emulator.bmcs[0].address.replace(emulator.base_url, bmc.url())
        task = {
            "name": "account",
            "baremetal.tenancy.bmc_account": {
                "bmc_address": address,
                "bmc_username": emulator.username,
                "bmc_password": emulator.password,
                "bmc_validate_certs": False,
                "bmc_timeout": TIMEOUT,
                "username": "bmt-hung",
            },
        }
        run = run_playbook(localhost_play([task]), {}, tmp_path, timeout=600)
        result = run.result("account")
        assert result.get("failed") is True, run.explain()
        message = result["msg"]
        assert not has_traceback(run.stdout, run.stderr, json.dumps(result)), run.explain()
        assert message.endswith("BMC unreachable: no answer within %d s (bmc_timeout)" % TIMEOUT), message
        assert not snapshot_diff(before, ironic_snapshot(openstack_env, emulators=[emulator]))
    finally:
        bmc.stop()


def test_a_hung_api_server_fails_the_inventory_after_api_timeout(metal3_env, tmp_path):
    kube = metal3_env.kube
    server = kube.server
    port = int(server.rsplit(":", 1)[1])
    apiserver = FaultProxy("127.0.0.1", port, mode="blackhole")
    try:
        with metal3_env.api() as api:
            before = kube_snapshot(api)
        source = tmp_path / "hung.claimed_hosts.yml"
        source.write_text(
            yaml.safe_dump(
                {
                    "plugin": "baremetal.tenancy.claimed_hosts",
                    "backend": "metal3",
                    "namespaces": ["tenant-a"],
                    "host": "https://127.0.0.1:%d" % apiserver.port,
                    "api_timeout": TIMEOUT,
                }
            )
        )
        env = dict(kube.ansible_env("tenant-a"), ANSIBLE_INVENTORY_UNPARSED_FAILED="True")
        proc = run_inventory(source, env, tmp_path, timeout=600)
        output = proc.stdout + proc.stderr
        assert proc.returncode != 0, output[-3000:]
        assert not has_traceback(output), output[-3000:]
        message = " ".join(proc.stderr.split())
        assert "Kubernetes API https://127.0.0.1:%d" % apiserver.port in message, message
        assert "timed out" in message and "timeout=%d" % TIMEOUT in message, message
        with metal3_env.api() as api:
            assert not snapshot_diff(before, kube_snapshot(api))
    finally:
        apiserver.stop()
