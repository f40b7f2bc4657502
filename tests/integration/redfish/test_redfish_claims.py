"""A host registered by host_register is claimable by a tenant through host_claim, on each backend.

metal3 (real baremetal-operator): host_register (admin) creates the
BareMetalHost from its sushy-tools BMC (a virtual-media address, as the
operator's Ironic boots), classified ``infra-kind: large``, shared with the
tenant's namespace, with ``inspection: redfish`` (the operator takes the
hardware Redfish reported instead of booting an agent: ``status.hardware``
shows the BMC's memory, CPUs and NICs) and automated cleaning off; BMO
registers it with Ironic until it is ``available``. The tenant claims by those
labels with its own kubeconfig, the binder (``host_bind``, binder identity)
binds: the BMH's ``consumerRef`` names the claim, and the claim (read by the
tenant) carries the classification labels and no BMC data.

ironic: host_register (admin) enrols the node (redfish driver, resource class
from the rules, owner infra, available); host_lease leases it to tenant-a;
tenant-a claims by the resource class with its project-scoped credentials
and gets exactly that node; host_release gives it back.
"""

from __future__ import annotations

import json

import pytest
from harness import sushy as sushy_harness
from harness.ansible import localhost_play, run_playbook

GROUP, VERSION = "metal3.io", "v1alpha1"
INFRA = "bmt-rf-infra"
TENANT_NS = "bmt-rf-claims"
RULES = [
    {
        "name": "large",
        "when": "MemorySummary.TotalSystemMemoryGiB >= `256` && ProcessorSummary.Count >= `64`",
        "labels": {"infra-kind": "large"},
        "resource_class": "rc-rf-large",
        "traits": ["CUSTOM_RF_LARGE"],
    }
]


@pytest.fixture(scope="module")
def claim_bmc(tmp_path_factory):
    em = sushy_harness.start_sushy(
        tmp_path_factory.mktemp("rf-claims"), sushy_harness.profile_systems({"large": 2}, prefix="rfc", first_index=230)
    )
    try:
        yield em
    finally:
        em.stop()


def _failures(run) -> str:
    out = ["%s: %s" % (name, r.get("msg")) for name, r in run.tasks.items() if r.get("failed")]
    return "\n".join(out) or run.explain()


@pytest.mark.real_bmo
def test_registered_host_is_claimable_on_metal3(kube_env, metal3_bmo_env, claim_bmc, tmp_path):
    metal3_env = metal3_bmo_env
    metal3_env.tenant_namespace(INFRA, None)
    metal3_env.tenant_namespace(TENANT_NS, "tenant-a")
    bmc = claim_bmc.bmcs[0]
    register = run_playbook(
        localhost_play(
            [
                {
                    "name": "register",
                    "baremetal.tenancy.host_register": {
                        "namespace": INFRA,
                        "rules": RULES,
                        "host_claim_namespaces": {"matches": TENANT_NS},
                        "inspection": "redfish",
                        "automated_cleaning": False,
                        "hosts": [
                            {
                                "address": bmc.address.replace("redfish+", "redfish-virtualmedia+", 1),
                                "username": bmc.username,
                                "password": bmc.password,
                                "name": "rf-large-0",
                                "labels": {"suite": "redfish-claims"},
                            }
                        ],
                    },
                }
            ]
        ),
        kube_env.ansible_env("admin"),
        tmp_path / "reg",
    )
    assert register.ok, _failures(register)
    try:
        # The real operator registers the host with Ironic; no agent inspects it: the hardware is Redfish's.
        registered = metal3_env.wait_host(INFRA, "rf-large-0", state="available", hardware=True, timeout=300)
        hardware = registered["status"]["hardware"]
        assert hardware["ramMebibytes"] == sushy_harness.PROFILES["large"]["memory_gb"] * 1024
        assert hardware["cpu"]["count"] == sushy_harness.PROFILES["large"]["cpus"]
        assert [n["mac"] for n in hardware["nics"]] == bmc.macs
        assert registered["spec"]["bmc"]["address"].startswith("redfish-virtualmedia+http://")
        assert registered["spec"]["inspectionMode"] == "disabled"
        assert "inspect.metal3.io/hardwaredetails" not in registered["metadata"]["annotations"]
        claim = {
            "name": "rf-claim",
            "namespace": TENANT_NS,
            "online": False,
            "host_selector": {"matchLabels": {"infra-kind": "large", "suite": "redfish-claims"}},
        }
        first = metal3_env.playbook("tenant-a", [{"name": "claim", "baremetal.tenancy.host_claim": claim}])
        assert first.ok, _failures(first)
        metal3_env.bind([TENANT_NS], host_namespaces=[INFRA])
        info = metal3_env.playbook(
            "tenant-a",
            [
                {
                    "name": "claim",
                    "baremetal.tenancy.host_claim": dict(claim, wait=True, wait_for="associated", wait_timeout=60),
                }
            ],
            verbosity=3,
            callback="default",
        )
        assert info.rc == 0, info.explain()
        host = metal3_env.host(INFRA, "rf-large-0")
        assert host["spec"]["consumerRef"]["name"] == "rf-claim"
        assert host["spec"]["consumerRef"]["namespace"] == TENANT_NS
        stored = metal3_env.claim(TENANT_NS, "rf-claim")
        assert stored["metadata"]["labels"]["infra-kind"] == "large"
        text = json.dumps(stored) + info.stdout + info.stderr
        for secret in (bmc.password, claim_bmc.base_url.split("//")[1], bmc.system_id):
            assert secret not in text

        # The administrator grants the tenant a temporary BMC account on its host ...
        saved = tmp_path / "acct.json"
        grant = run_playbook(
            localhost_play(
                [
                    {
                        "name": "grant",
                        "baremetal.tenancy.bmc_account": {
                            "host_name": "rf-large-0",
                            "namespace": INFRA,
                            "grantee": TENANT_NS,
                            "expires_in": "2h",
                        },
                        "register": "acct",
                    },
                    {
                        "name": "save",
                        "ansible.builtin.copy": {"dest": str(saved), "content": "{{ acct | to_json }}"},
                        "no_log": True,
                    },
                ]
            ),
            kube_env.ansible_env("admin"),
            tmp_path / "grant",
        )
        assert grant.ok, _failures(grant)
        acct = json.loads(saved.read_text())
        assert claim_bmc.request("GET", bmc.system_id, acct["username"], acct["password"])[0] == 200
        # ... and the binder deletes it when the tenant releases the claim, before the host goes back to the pool.
        release = metal3_env.playbook(
            "tenant-a",
            [{"name": "release", "baremetal.tenancy.host_release": {"name": "rf-claim", "namespace": TENANT_NS}}],
        )
        assert release.ok, _failures(release)
        passed = metal3_env.bind([TENANT_NS], host_namespaces=[INFRA])
        outcome = [c for c in passed["claims"] if c["name"] == "rf-claim"]
        assert [(c["action"], c.get("bmc_accounts_removed")) for c in outcome] == [("released", [acct["username"]])]
        host = metal3_env.host(INFRA, "rf-large-0")
        assert not host["spec"].get("consumerRef")
        assert "baremetal.tenancy/bmc-accounts" not in (host["metadata"].get("annotations") or {})
        assert acct["username"] not in [a["UserName"] for a in claim_bmc.accounts()]
        assert claim_bmc.request("GET", bmc.system_id, acct["username"], acct["password"])[0] == 401
    finally:
        metal3_env.forget_claims(TENANT_NS)
        metal3_env.delete_hosts(INFRA)


def test_registered_node_is_claimable_on_ironic(openstack_env, ironic_tenancy_policy, claim_bmc, tmp_path):
    bmc = claim_bmc.bmcs[1]
    tenant = openstack_env.tenants["tenant-a"]
    admin = openstack_env.ansible_env("admin")
    setup = run_playbook(
        localhost_play(
            [
                {
                    "name": "register",
                    "baremetal.tenancy.host_register": {
                        "backend": "ironic",
                        "cloud": "admin",
                        "owner": "infra",
                        "rules": RULES,
                        "hosts": [
                            {
                                "address": bmc.address,
                                "username": bmc.username,
                                "password": bmc.password,
                                "name": "rf-node-0",
                            }
                        ],
                    },
                },
                {
                    "name": "lease",
                    "baremetal.tenancy.host_lease": {"project": tenant.project_id, "nodes": ["rf-node-0"]},
                },
            ]
        ),
        admin,
        tmp_path / "setup",
    )
    assert setup.ok, _failures(setup)
    conn = openstack_env.admin_conn
    node = conn.baremetal.get_node("rf-node-0")
    assert (node.resource_class, node.provision_state, node.lessee) == ("rc-rf-large", "available", tenant.project_id)
    try:
        claim = run_playbook(
            localhost_play(
                [
                    {
                        "name": "claim",
                        "baremetal.tenancy.host_claim": {
                            "backend": "ironic",
                            "name": "rf-claim",
                            "resource_class": "rc-rf-large",
                            "traits": ["CUSTOM_RF_LARGE"],
                            "wait": True,
                            "wait_for": "associated",
                            "wait_timeout": 120,
                        },
                    },
                    {
                        "name": "release",
                        "baremetal.tenancy.host_release": {"backend": "ironic", "name": "rf-claim", "wait": True},
                    },
                ]
            ),
            openstack_env.ansible_env(tenant.cloud_name("member")),
            tmp_path / "claim",
        )
        assert claim.ok, _failures(claim)
        result = claim.result("claim")
        assert result["claim"]["host"] == "rf-node-0"
        assert result["claim"]["associated"] is True
        assert claim.result("release")["changed"] is True
    finally:
        conn.baremetal.update_node(node, lessee=None)
