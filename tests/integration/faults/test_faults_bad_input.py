"""The bad-input matrix: every module, role and the inventory plugin, fed wrong values as a user would.

One table (:data:`CASES`), one test run per row. Each row is a task, a role or an
inventory source, run through ``ansible-playbook`` / ``ansible-inventory`` with the
credentials a real user of it has (a tenant, the binder, the owner), on the session's
real services: the kube-apiserver with the collection's HostClaim and BareMetalHost
CRDs (``metal3_env``) and Keystone + Ironic + sushy-tools (``openstack_env``). The
inputs cover types, ranges, names, selectors, regular expressions, images, Secrets,
projects, nodes, dates, states, files and Git checkouts. Each row asserts:

- the task (or the inventory source) fails;
- its message names the option and the bad value (an option named in words, such as
  ``resource class`` for ``resource_class``, counts);
- no Python traceback anywhere in the output or in the result (the collection's catch-all
  for errors it did not expect puts one in ``exception``);
- nothing changed on any service: every object the collection can write, read as the
  administrator before and after (:func:`fixtures_faults.kube_snapshot`,
  :func:`fixtures_faults.ironic_snapshot`, which include Ironic's policy file and the
  BMC's accounts), is the same; for the GitOps rows also the operator's Git checkout (branch
  heads, index and work tree).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from fixtures_faults import has_traceback, ironic_snapshot, kube_snapshot, snapshot_diff
from harness.ansible import localhost_play, run_inventory, run_playbook
from kubernetes import client

# bad_input: make integration runs the matrix in a session of its own beside the other fault suites (its own services)
pytestmark = [pytest.mark.faults, pytest.mark.bad_input]

INFRA = "bad-infra"
TENANT_NS = "bad-a"
HOST = "bad-h0"
CLAIM = "bad-c0"
NODE = "bad-n0"
RC = "rc-badin"
MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"
IMAGE = {"url": "http://images.example.com/os.qcow2", "checksum": MD5, "checksum_type": "md5", "format": "qcow2"}
SELECTOR = {"matchLabels": {"suite": "bad-input"}}
GROUP, VERSION = "metal3.io", "v1alpha1"
MERGE = "application/merge-patch+json"
#: the operator's Git checkout of :func:`gitops_checkout`, filled in by :func:`_fill`
CHECKOUT = "@CHECKOUT@"


@dataclasses.dataclass(frozen=True)
class Case:
    """One bad input: ``kind`` task (``body`` is the task), role (``{"role", "vars"}``) or inventory (the source);
    ``stack`` kube or ironic; ``who`` the identity (kube) or cloud (ironic); ``words`` what the message must name."""

    id: str
    stack: str
    who: str
    kind: str
    body: dict
    words: tuple[str, ...]


def m3claim(**args: Any) -> dict:
    base = {"name": "bad-new", "namespace": TENANT_NS, "host_selector": SELECTOR, "online": False}
    base.update(args)
    return {"baremetal.tenancy.host_claim": base}


def irclaim(**args: Any) -> dict:
    base = {"backend": "ironic", "name": "bad-new", "resource_class": RC}
    base.update(args)
    return {"baremetal.tenancy.host_claim": base}


def module(which: str, /, **args: Any) -> dict:
    return {"baremetal.tenancy.%s" % which: args}


def lease(**args: Any) -> dict:
    base = {"project": "tenant-a", "nodes": [NODE]}
    base.update(args)
    return {"baremetal.tenancy.host_lease": base}


def bmc(**args: Any) -> dict:
    # bmc_address and the admin credentials are filled in from the session's emulator
    return {"baremetal.tenancy.bmc_account": dict({"username": "bmt-bad", "bmc_validate_certs": False}, **args)}


def role(which: str, /, **variables: Any) -> dict:
    return {"role": "baremetal.tenancy.%s" % which, "vars": variables}


def metal3_source(**options: Any) -> dict:
    return dict(
        {"plugin": "baremetal.tenancy.claimed_hosts", "backend": "metal3", "namespaces": [TENANT_NS]}, **options
    )


def ironic_source(**options: Any) -> dict:
    return dict({"plugin": "baremetal.tenancy.claimed_hosts", "backend": "ironic"}, **options)


K, IR = "kube", "ironic"
T, R, V = "task", "role", "inventory"
CASES = [
    # -- host_claim, metal3 (the tenant) ------------------------------------------------------
    Case("claim-name", K, "tenant-a", T, m3claim(name="Bad_Claim"), ("name", "Bad_Claim")),
    Case("claim-namespace", K, "tenant-a", T, m3claim(namespace="Tenant A"), ("namespace", "Tenant A")),
    # an existing claim's credentials are fixed (a relayed claim pointed elsewhere would leave its first one behind)
    Case(
        "claim-credentials-added",
        K,
        "tenant-a",
        T,
        m3claim(name=CLAIM, credentials="hosts-kubeconfig"),
        (CLAIM, "spec.credentials", "delete the claim"),
    ),
    Case(
        "claim-selector-operator",
        K,
        "tenant-a",
        T,
        m3claim(host_selector={"matchExpressions": [{"key": "suite", "operator": "Like", "values": ["x"]}]}),
        ("operator", "Like"),
    ),
    Case(
        "claim-selector-label-value",
        K,
        "tenant-a",
        T,
        m3claim(host_selector={"matchLabels": {"suite": "no spaces here"}}),
        ("matchLabels", "no spaces here"),
    ),
    Case(
        "claim-image-scheme",
        K,
        "tenant-a",
        T,
        m3claim(image=dict(IMAGE, url="ftp://images.example.com/os.qcow2")),
        ("image", "ftp://images.example.com/os.qcow2"),
    ),
    Case(
        "claim-image-checksum-type",
        K,
        "tenant-a",
        T,
        m3claim(image=dict(IMAGE, checksum_type="crc32")),
        ("checksum_type", "crc32"),
    ),
    Case("claim-online-type", K, "tenant-a", T, m3claim(online="maybe"), ("online", "maybe")),
    Case("claim-wait-timeout", K, "tenant-a", T, m3claim(wait=True, wait_timeout=-5), ("wait_timeout", "-5")),
    Case("claim-state", K, "tenant-a", T, m3claim(state="gone"), ("state", "gone")),
    Case(
        "claim-secret-name",
        K,
        "tenant-a",
        T,
        m3claim(user_data_secret="Bad_Secret"),
        ("user_data_secret", "Bad_Secret"),
    ),
    Case(
        "claim-annotation-key",
        K,
        "tenant-a",
        T,
        m3claim(annotations={"bad key!": "x"}),
        ("annotations", "bad key!"),
    ),
    Case("claim-foreign-option", K, "tenant-a", T, m3claim(resource_class="baremetal"), ("resource_class", "metal3")),
    Case("claim-node-reuse", K, "tenant-a", T, m3claim(node_reuse="Bad Reuse"), ("node_reuse", "Bad Reuse")),
    Case("claim-dialect", K, "tenant-a", T, m3claim(dialect="v9"), ("dialect", "v9")),
    # -- host_claim, ironic (the tenant) -----------------------------------------------------------
    Case("claim-resource-class", IR, "tenant-a", T, irclaim(resource_class="rc-nope"), ("resource_class", "rc-nope")),
    Case("claim-trait", IR, "tenant-a", T, irclaim(traits=["gpu"]), ("traits", "gpu")),
    Case(
        "claim-candidate-node",
        IR,
        "tenant-a",
        T,
        irclaim(candidate_nodes=["no-such-node"]),
        ("candidate_nodes", "no-such-node"),
    ),
    Case(
        "claim-image-file-url",
        IR,
        "tenant-a",
        T,
        irclaim(image=dict(IMAGE, url="file:///etc/passwd")),
        ("image", "file:///etc/passwd"),
    ),
    Case(
        "claim-network-data-type",
        IR,
        "tenant-a",
        T,
        irclaim(image=IMAGE, network_data="eth0"),
        # ansible-core's own conversion error names the option and the type of the value, not the value
        ("network_data", "str"),
    ),
    Case(
        "claim-user-data-yaml",
        IR,
        "tenant-a",
        T,
        irclaim(image=IMAGE, user_data="#cloud-config\nusers: [\n"),
        ("user_data", "#cloud-config"),
    ),
    Case(
        # a reboot cannot go with the deployment of the same run unless it waits for it: refused before the
        # allocation (it used to allocate the node and start deploying it, then fail)
        "claim-reboot-with-deploy",
        IR,
        "tenant-a",
        T,
        irclaim(image=IMAGE, annotations={"host.metal3.io/reboot": ""}),
        ("host.metal3.io/reboot", "wait"),
    ),
    Case("claim-cloud", IR, "tenant-a", T, irclaim(cloud="no-such-cloud"), ("cloud", "no-such-cloud")),
    Case("claim-ironic-namespace", IR, "tenant-a", T, irclaim(namespace=TENANT_NS), ("namespace", "ironic")),
    # -- host_claim_info, host_release ------------------------------------------------------------
    Case(
        "info-namespaces",
        K,
        "tenant-a",
        T,
        module("host_claim_info", namespaces=["UPPER"]),
        ("namespaces", "UPPER"),
    ),
    Case("info-backend", K, "tenant-a", T, module("host_claim_info", backend="vmware"), ("backend", "vmware")),
    Case(
        "release-namespace",
        K,
        "tenant-a",
        T,
        module("host_release", name=CLAIM, namespace="Bad_NS"),
        ("namespace", "Bad_NS"),
    ),
    Case(
        "release-timeout-type",
        K,
        "tenant-a",
        T,
        module("host_release", name=CLAIM, namespace=TENANT_NS, wait=True, wait_timeout="soon"),
        ("wait_timeout", "soon"),
    ),
    # -- host_lease (the owner) ------------------------------------------------------------------
    Case("lease-project", IR, "admin", T, lease(project="no-such-project"), ("project", "no-such-project")),
    Case("lease-node", IR, "admin", T, lease(nodes=["no-such-node"]), ("nodes", "no-such-node")),
    Case("lease-end-date", IR, "admin", T, lease(end="tomorrow"), ("end", "tomorrow")),
    Case(
        "lease-start-after-end",
        IR,
        "admin",
        T,
        lease(start="2031-01-02T00:00:00Z", end="2031-01-01T00:00:00Z"),
        ("start", "2031-01-02"),
    ),
    Case("lease-count", IR, "admin", T, lease(nodes=None, resource_class=RC, count=-1), ("count", "-1")),
    Case(
        "lease-provider-esi-leap-absent",
        IR,
        "admin",
        T,
        lease(lease_provider="esi_leap"),
        ("lease_provider", "does not run ESI-Leap"),
    ),
    Case("lease-provider-unknown", IR, "admin", T, lease(lease_provider="blazar"), ("lease_provider", "blazar")),
    Case("lease-state", IR, "admin", T, lease(state="renewed"), ("state", "renewed")),
    # -- host_offer, host_offer_info (the owner) and host_offer_claim (a tenant): ESI-Leap ------------------------
    Case("offer-end", IR, "admin", T, module("host_offer", nodes=[NODE], end="soon"), ("end", "soon")),
    Case("offer-state", IR, "admin", T, module("host_offer", nodes=[NODE], state="gone"), ("state", "gone")),
    Case(
        "offer-info-available", IR, "tenant-a", T, module("host_offer_info", available="maybe"), ("available", "maybe")
    ),
    Case(
        "offer-claim-wait-timeout",
        IR,
        "tenant-a",
        T,
        module("host_offer_claim", offer="bad-offer", wait=True, wait_timeout=-1),
        ("wait_timeout", "-1"),
    ),
    Case(
        "offer-expire-lead-time",
        IR,
        "admin",
        T,
        module("host_offer_expire", nodes=[NODE], lead_time=-1),
        ("lead_time", "-1"),
    ),
    # -- tenant_network and host_claim's networks (a tenant): checked before Neutron is asked -------------------
    Case(
        "network-cidr",
        IR,
        "tenant-a",
        T,
        module("tenant_network", name="bad-net", subnets=[{"name": "hosts", "cidr": "10.0.0.1/24"}]),
        ("cidr", "10.0.0.1/24"),
    ),
    Case(
        "network-gateway",
        IR,
        "tenant-a",
        T,
        module(
            "tenant_network",
            name="bad-net",
            subnets=[{"name": "hosts", "cidr": "10.0.0.0/24", "gateway_ip": "10.9.9.9"}],
        ),
        ("gateway_ip", "10.9.9.9"),
    ),
    Case("network-state", IR, "tenant-a", T, module("tenant_network", name="bad-net", state="up"), ("state", "up")),
    Case(
        "claim-networks-fixed-ip",
        IR,
        "tenant-a",
        T,
        irclaim(networks=[{"network": "bad-net", "fixed_ip": "10.0.0.300"}]),
        ("fixed_ip", "10.0.0.300"),
    ),
    # -- host_share (the owner) ------------------------------------------------------------------
    Case(
        "share-matches",
        K,
        "admin",
        T,
        module("host_share", backend="metal3", namespace=INFRA, hosts=[{"name": HOST, "share": {"matches": "("}}]),
        ("matches", "("),
    ),
    Case(
        "share-label",
        K,
        "admin",
        T,
        module("host_share", backend="metal3", namespace=INFRA, hosts=[{"name": HOST, "labels": {"bad key!": "x"}}]),
        ("labels", "bad key!"),
    ),
    Case(
        "share-reserved-tenant",
        K,
        "admin",
        T,
        module(
            "host_share",
            backend="metal3",
            namespace=INFRA,
            hosts=[{"name": HOST, "share": {"tenants": ["kube-system"]}}],
        ),
        ("share.tenants", "kube-system", "reserved namespace"),
    ),
    Case(
        "share-namespace",
        K,
        "admin",
        T,
        module("host_share", backend="metal3", namespace="Bad_NS", hosts=[{"name": HOST, "class": "small"}]),
        ("namespace", "Bad_NS"),
    ),
    Case(
        "share-owner",
        IR,
        "admin",
        T,
        module("host_share", backend="ironic", hosts=[{"name": NODE, "owner": "no-such-project"}]),
        ("owner", "no-such-project"),
    ),
    Case(
        "share-node",
        IR,
        "admin",
        T,
        module("host_share", backend="ironic", hosts=[{"name": "no-such-node", "owner": "infra"}]),
        ("no-such-node",),
    ),
    # -- host_bind (the binder) ------------------------------------------------------------------
    Case("bind-workers", K, "binder", T, module("host_bind", workers=0), ("workers", "0")),
    Case("bind-namespaces", K, "binder", T, module("host_bind", namespaces=["UPPER"]), ("namespaces", "UPPER")),
    Case(
        "bind-name-two-namespaces",
        K,
        "binder",
        T,
        module("host_bind", name=CLAIM, namespaces=[TENANT_NS, INFRA]),
        ("name", TENANT_NS),
    ),
    Case("bind-dialect", K, "binder", T, module("host_bind", dialect="v9"), ("dialect", "v9")),
    # -- host_bind_worker (the binder's long-running worker): refused before it serves its spool ----------------------
    Case(
        "bind-worker-workers",
        K,
        "binder",
        T,
        module("host_bind_worker", spool="/nonexistent/bmt-bad-input-spool", workers=0),
        ("workers", "0"),
    ),
    # -- host_register (the owner) ---------------------------------------------------------------
    # a bad BMC address is a failure of that host (the others would still be registered), reported by the host's
    # index and the address's problem; host_register never quotes an address back (it may hold credentials), so
    # the value is not named here
    Case(
        "register-address",
        IR,
        "admin",
        T,
        module(
            "host_register",
            backend="ironic",
            allow_partial=False,
            hosts=[{"address": "not a url", "username": "u", "password": "p"}],
        ),
        ("1 of 1 BMC(s) failed", "BMC #0", "BMC address", "no valid host name"),
    ),
    Case(
        "register-workers",
        IR,
        "admin",
        T,
        module("host_register", backend="ironic", workers=0, hosts=[]),
        ("workers", "0"),
    ),
    Case(
        "register-interfaces",
        IR,
        "admin",
        T,
        module("host_register", backend="ironic", interfaces={"power": "redfish"}, hosts=[]),
        ("interfaces", "power"),
    ),
    Case(
        "register-rule",
        IR,
        "admin",
        T,
        module("host_register", backend="ironic", rules=[{"when": "[[[", "resource_class": "x"}], hosts=[]),
        ("rules[0]", "when", "[[["),
    ),
    Case(
        "register-owner",
        IR,
        "admin",
        T,
        module("host_register", backend="ironic", owner="no-such-project", hosts=[]),
        ("owner", "no-such-project"),
    ),
    # a NIC's switch port Ironic would refuse fails the task before any BMC is read (the address is never dialled)
    Case(
        "register-nics",
        IR,
        "admin",
        T,
        module(
            "host_register",
            backend="ironic",
            hosts=[
                {
                    "address": "redfish+http://127.0.0.1:9/redfish/v1/Systems/1",
                    "username": "u",
                    "password": "p",
                    "nics": [{"mac": "52:54:00:00:00:01", "switch_id": "tor-1", "port_id": "p1"}],
                }
            ],
        ),
        ("hosts[0].nics[0]", "52:54:00:00:00:01", "switch_id", "tor-1"),
    ),
    # -- bmc_account (the owner, on a BMC) -------------------------------------------------------
    Case("bmc-expires-in", IR, "admin", T, bmc(expires_in="forever"), ("expires_in", "forever")),
    Case("bmc-expires-at-past", IR, "admin", T, bmc(expires_at="2020-01-01T00:00:00Z"), ("expires_at", "2020-01-01")),
    Case("bmc-role", IR, "admin", T, bmc(role="God"), ("role", "God")),
    Case("bmc-username", IR, "admin", T, bmc(username="bad user!"), ("username", "bad user!")),
    Case("bmc-state", IR, "admin", T, bmc(state="locked"), ("state", "locked")),
    # -- tenant_check ----------------------------------------------------------------------------
    Case("check-tenant-name", K, "admin", T, module("tenant_check", tenants=[{"name": "Bad_Name"}]), ("Bad_Name",)),
    Case(
        "check-tenant-reserved",
        K,
        "admin",
        T,
        module("tenant_check", tenants=[{"name": "ok"}, {"name": "kube-node-lease"}]),
        ("kube-node-lease", "reserved namespace"),
    ),
    Case(
        "check-tenant-reserved-option",
        K,
        "admin",
        T,
        module("tenant_check", tenants=[{"name": "ok"}], reserved_namespaces=["ok", "Bad NS"]),
        ("reserved_namespaces", "Bad NS"),
    ),
    Case(
        "check-policy-action",
        K,
        "admin",
        T,
        module("tenant_check", tenants=[{"name": "ok"}], policy_actions=["Explode"]),
        ("policy_actions", "Explode"),
    ),
    # -- tenancy_posture -------------------------------------------------------------------------
    Case(
        "posture-tenant-label",
        K,
        "admin",
        T,
        module("tenancy_posture", tenant_label="bad key!"),
        ("tenant_label", "bad key!"),
    ),
    Case(
        "posture-allowed-url",
        K,
        "admin",
        T,
        module("tenancy_posture", allowed_source_urls=["git.example.com/team-a"]),
        ("allowed_source_urls", "git.example.com/team-a"),
    ),
    # -- roles -----------------------------------------------------------------------------------
    Case("role-setup-state", K, "admin", R, role("hostclaim_setup", hostclaim_setup_state="gone"), ("state", "gone")),
    Case(
        "role-flux-lockdown-off",
        K,
        "admin",
        R,
        role(
            "flux_install",
            flux_install_crds_dir="/nonexistent",
            flux_install_extra_args={"kustomize-controller": ["--no-remote-bases=false"]},
        ),
        ("flux_install_extra_args", "lockdown", "--no-remote-bases"),
    ),
    Case(
        "role-flux-url",
        K,
        "admin",
        R,
        role("flux_install", flux_install_crds_dir="/nonexistent", flux_install_allowed_source_urls=["not a url"]),
        ("flux_install_allowed_source_urls", "not a url"),
    ),
    Case(
        "role-setup-namespace",
        K,
        "admin",
        R,
        role("hostclaim_setup", hostclaim_setup_infra_namespace="Bad_NS"),
        ("hostclaim_setup_infra_namespace", "Bad_NS"),
    ),
    Case(
        "role-setup-binder-name",
        K,
        "admin",
        R,
        role("hostclaim_setup", hostclaim_setup_binder_name="Bad Binder"),
        ("hostclaim_setup_binder_name", "Bad Binder"),
    ),
    Case(
        "role-tenant-name",
        K,
        "admin",
        R,
        role("tenant_namespace", tenant_namespace_tenants=[{"name": "Bad_Tenant"}]),
        ("name", "Bad_Tenant"),
    ),
    Case(
        "role-tenant-reserved",
        K,
        "admin",
        R,
        role("tenant_namespace", tenant_namespace_tenants=[{"name": "bad-t", "users": ["eve"]}, {"name": "default"}]),
        ("default", "reserved namespace"),
    ),
    Case(
        # offboarding the pool's own namespace (named by the owner) would release and delete it
        "role-tenant-offboard-infra",
        K,
        "admin",
        R,
        role(
            "tenant_namespace",
            tenant_namespace_state="absent",
            tenant_namespace_tenants=[{"name": INFRA}],
            tenant_namespace_reserved_namespaces=[INFRA],
        ),
        (INFRA, "reserved namespace"),
    ),
    Case(
        "role-tenant-timeout",
        K,
        "admin",
        R,
        role("tenant_namespace", tenant_namespace_tenants=[{"name": "bad-t"}], tenant_namespace_wait_timeout="soon"),
        ("tenant_namespace_wait_timeout", "soon"),
    ),
    Case(
        "role-pool-label",
        K,
        "admin",
        R,
        role("host_pool", host_pool_namespace=INFRA, host_pool_hosts=[{"name": HOST, "labels": {"bad key!": "x"}}]),
        ("labels", "bad key!"),
    ),
    Case(
        "role-pool-share",
        K,
        "admin",
        R,
        role("host_pool", host_pool_namespace=INFRA, host_pool_share={"matches": "("}),
        ("matches", "("),
    ),
    Case(
        "role-ironic-node",
        IR,
        "admin",
        R,
        role("ironic_tenancy", ironic_tenancy_nodes=[{"name": "no-such-node", "owner": "infra"}]),
        ("no-such-node",),
    ),
    Case(
        "role-ironic-owner",
        IR,
        "admin",
        R,
        role("ironic_tenancy", ironic_tenancy_nodes=[{"name": NODE, "owner": "no-such-project"}]),
        ("owner", "no-such-project"),
    ),
    Case(
        "role-ironic-user-password",
        IR,
        "admin",
        R,
        role(
            "ironic_tenancy",
            ironic_tenancy_projects=[{"name": "bad-p", "users": [{"name": "bad-u", "update_password": "sometimes"}]}],
        ),
        ("update_password", "sometimes"),
    ),
    # -- GitOps: the operator's repository (a checkout of the module's fixture; compared before and after) -------
    Case(
        "gitops-commit-escape",
        K,
        "admin",
        T,
        module("gitops_commit", path=CHECKOUT, directories={"../outside": {"x.yaml": "a: 1\n"}}, commit_message="x"),
        ("directory", "../outside"),  # a key of option directories, named as such
    ),
    Case(
        "gitops-commit-symlink-outside",
        K,
        "admin",
        T,
        # tenants/linked is a committed symbolic link to a directory outside the checkout (see gitops_checkout,
        # which has no remote)
        module(
            "gitops_commit",
            path=CHECKOUT,
            directories={"tenants/linked": {"ns.yaml": "a: 1\n"}},
            commit_message="x",
            remote=None,
        ),
        ("Git checkout", "tenants/linked", "symbolic link"),
    ),
    Case(
        "gitops-commit-empty-message",
        K,
        "admin",
        T,
        module("gitops_commit", path=CHECKOUT, directories={"tenants/new": {"x.yaml": "a: 1\n"}}, commit_message=" \n"),
        ("commit_message", "empty"),
    ),
    Case(
        "gitops-commit-remote-option",
        K,
        "admin",
        T,
        module(
            "gitops_commit",
            path=CHECKOUT,
            directories={"tenants/new": {"x.yaml": "a: 1\n"}},
            commit_message="x",
            remote="--upload-pack=false",
        ),
        ("remote", "--upload-pack"),
    ),
    Case(
        "gitops-commit-not-a-checkout",
        K,
        "admin",
        T,
        module("gitops_commit", path="/proc", directories={"tenants/x": None}, commit_message="x"),
        ("Git checkout", "/proc"),  # option path, named in words
    ),
    Case(
        "role-gitops-tenant-name",
        K,
        "admin",
        R,
        role("tenant_gitops", tenant_gitops_checkout=CHECKOUT, tenant_gitops_tenants=[{"name": "Bad_Tenant"}]),
        ("name", "Bad_Tenant"),
    ),
    Case(
        # the namespace of the operator's Flux is reserved by the role itself
        "role-gitops-flux-namespace",
        K,
        "admin",
        R,
        role(
            "tenant_gitops",
            tenant_gitops_checkout=CHECKOUT,
            tenant_gitops_tenants=[{"name": "gitops-sys"}],
            tenant_gitops_flux_kustomization={"name": "fleet", "namespace": "gitops-sys"},
        ),
        ("gitops-sys", "reserved namespace"),
    ),
    Case(
        "role-gitops-release-app",
        K,
        "admin",
        R,
        role(
            "tenant_gitops",
            tenant_gitops_checkout=CHECKOUT,
            tenant_gitops_apps=[],
            tenant_gitops_tenants=[{"name": "bad-g", "releases": [{"name": "web", "app": "no-such-app"}]}],
        ),
        ("releases", "no-such-app"),
    ),
    # -- the inventory plugin --------------------------------------------------------------------
    Case("inventory-backend", K, "tenant-a", V, metal3_source(backend="vmware"), ("backend", "vmware")),
    Case("inventory-namespaces", K, "tenant-a", V, metal3_source(namespaces=["Bad_NS"]), ("namespaces", "Bad_NS")),
    Case("inventory-families", K, "tenant-a", V, metal3_source(address_families=["ipx"]), ("address_families", "ipx")),
    Case(
        "inventory-qualify",
        K,
        "tenant-a",
        V,
        metal3_source(qualify_host_names="sometimes"),
        ("qualify_host_names", "sometimes"),
    ),
    Case(
        "inventory-host-variables",
        K,
        "tenant-a",
        V,
        metal3_source(host_variables=["password"]),
        ("host_variables", "password"),
    ),
    Case("inventory-page-size", K, "tenant-a", V, metal3_source(page_size=-1), ("page_size", "-1")),
    Case("inventory-cloud", IR, "tenant-a", V, ironic_source(cloud="no-such-cloud"), ("cloud", "no-such-cloud")),
]


@pytest.fixture(scope="module")
def kube_world(metal3_env):
    """A host and a pending claim of tenant-a on the cluster."""
    env = metal3_env
    env.tenant_namespace(INFRA, None)
    env.tenant_namespace(TENANT_NS, "tenant-a")
    env.create_host(INFRA, HOST, index=990, policy={"matches": "bad-.*"}, labels={"suite": "bad-input"})
    with env.api() as api:
        client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            INFRA,
            "baremetalhosts",
            HOST,
            {"status": {"provisioning": {"state": "available"}, "operationalStatus": "OK", "poweredOn": False}},
            _content_type=MERGE,
        )
    env.create_claim(TENANT_NS, CLAIM, {"online": False, "hostSelector": SELECTOR}, identity="tenant-a")
    yield env
    env.forget_claims(TENANT_NS)
    env.delete_hosts(INFRA)


@pytest.fixture(scope="module")
def ironic_world(openstack_env, enroll_node, ironic_tenancy_policy):
    """A node leased to tenant-a."""
    enroll_node(NODE, resource_class=RC, lessee=openstack_env.tenants["tenant-a"].project_id)
    return openstack_env


@pytest.fixture(scope="module")
def gitops_checkout(tmp_path_factory) -> Path:
    """A checkout of an operator's repository (one commit, no remote): what the GitOps cases must leave alone.

    Its ``tenants/linked`` is a committed symbolic link to a directory outside the checkout, holding a file (what
    anyone who can push to the repository could commit); :func:`git_snapshot` includes that directory."""
    top = tmp_path_factory.mktemp("operator-repo")
    outside = tmp_path_factory.mktemp("outside-the-checkout")
    (outside / "ns.yaml").write_text("the controller's own file\n")
    (top / "tenants" / "bad-a").mkdir(parents=True)
    (top / "tenants" / "bad-a" / "kustomization.yaml").write_text("resources: []\n")
    (top / "tenants" / "linked").symlink_to(outside, target_is_directory=True)
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *argv], cwd=top, check=True, timeout=60
        )
    return top


def git_snapshot(top: Path) -> dict[str, str]:
    """The checkout's branch heads, index and work tree (``git status`` lists any file added or changed), and the
    files of the directories its committed links point to."""

    def git(*argv):
        return subprocess.run(["git", *argv], cwd=top, check=True, timeout=60, capture_output=True, text=True).stdout

    state = {"git " + str(top): git("show-ref") + git("status", "--porcelain", "--ignored", "--untracked-files=all")}
    for link in (top / "tenants").iterdir():
        if link.is_symlink():
            outside = Path(os.readlink(link))
            state.update({"file " + str(f): f.read_text() for f in sorted(outside.rglob("*")) if f.is_file()})
            state["files in " + str(outside)] = " ".join(sorted(f.name for f in outside.rglob("*")))
    return state


def _fill(case: Case, openstack_env, checkout: Path | None = None) -> dict:
    """The task or role of ``case`` with what only the session knows (project IDs, the BMC, the Git checkout)."""
    text = json.dumps(case.body)
    body = json.loads(text.replace(json.dumps(CHECKOUT), json.dumps(str(checkout))) if checkout else text)
    if openstack_env is None:
        return body
    task = body.get("baremetal.tenancy.host_lease")
    if task is not None and task.get("project") == "tenant-a":
        task["project"] = openstack_env.tenants["tenant-a"].project_id
    if task is not None and task.get("nodes") is None:
        task.pop("nodes", None)
    task = body.get("baremetal.tenancy.bmc_account")
    if task is not None:
        emulator = openstack_env.sushy_server
        task.update(
            bmc_address=emulator.bmcs[0].address, bmc_username=emulator.username, bmc_password=emulator.password
        )
    if case.kind == R and case.stack == IR:
        body["vars"].setdefault("ironic_tenancy_cloud", "admin")
        body["vars"].setdefault("ironic_tenancy_policy_file", str(openstack_env.policy_path))
    return body


def _snapshot(case: Case, metal3_env, openstack_env, checkout: Path | None = None) -> dict[str, str]:
    if case.stack == K:
        with metal3_env.api() as api:
            return dict(kube_snapshot(api), **(git_snapshot(checkout) if checkout else {}))
    return ironic_snapshot(openstack_env, files=[openstack_env.policy_path], emulators=[openstack_env.sushy_server])


def _failure(case: Case, body: dict, metal3_env, openstack_env, workdir: Path) -> tuple[str, dict, str]:
    """Run the case; returns (its failure message, the failed result, all output). Asserts it failed."""
    env = metal3_env.kube.ansible_env(case.who) if case.stack == K else openstack_env.ansible_env(case.who)
    if case.kind == V:
        workdir.mkdir(parents=True, exist_ok=True)
        source = workdir / "bad.claimed_hosts.yml"
        source.write_text(yaml.safe_dump(body))
        # as AWX runs an inventory update: a source that does not parse fails the update
        env = dict(
            env, ANSIBLE_INVENTORY_UNPARSED_FAILED="True", ANSIBLE_INVENTORY_ENABLED="baremetal.tenancy.claimed_hosts"
        )
        proc = run_inventory(source, env, workdir)
        output = proc.stdout + proc.stderr
        assert proc.returncode != 0, "the inventory did not fail:\n" + output[-3000:]
        return " ".join(proc.stderr.split()), {}, output
    if case.kind == R:
        play = localhost_play([], roles=[body])
    else:
        play = localhost_play([dict({"name": "case"}, **body)])
    run = run_playbook(play, env, workdir)
    output = run.stdout + run.stderr
    assert not run.ok, "the run did not fail:\n" + run.explain()
    failed = [(name, result) for name, result in run.tasks.items() if result.get("failed")]
    assert len(failed) == 1, "expected one failed task, got %s\n%s" % ([pair[0] for pair in failed], run.explain())
    result = failed[0][1]
    return result.get("msg") or "", result, output


def _names(message: str, word: str) -> bool:
    """``word`` appears in ``message`` (an option name may also appear with spaces for underscores)."""
    return word in message or word.replace("_", " ") in message


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_fails_clearly_and_changes_nothing(case, request, tmp_path):
    # only the stack the case runs on is started
    metal3_env = request.getfixturevalue("kube_world") if case.stack == K else None
    openstack_env = request.getfixturevalue("ironic_world") if case.stack == IR else None
    checkout = request.getfixturevalue("gitops_checkout") if CHECKOUT in json.dumps(case.body) else None
    body = _fill(case, openstack_env, checkout)
    before = _snapshot(case, metal3_env, openstack_env, checkout)
    message, result, output = _failure(case, body, metal3_env, openstack_env, tmp_path)
    after = _snapshot(case, metal3_env, openstack_env, checkout)
    assert not has_traceback(output, json.dumps(result)), "traceback:\n" + output[-4000:]
    missing = [word for word in case.words if not _names(message, word)]
    assert not missing, "the message does not name %s: %s" % (missing, message)
    assert result.get("changed") in (None, False), result
    changes = snapshot_diff(before, after)
    assert not changes, "bad input changed: %s (message: %s)" % (changes, message)


def test_the_matrix_covers_every_module_role_and_the_inventory():
    """The table names each module of plugins/modules, each role and the inventory plugin."""
    from harness.ansible import REPO_ROOT

    text = json.dumps([dataclasses.asdict(case) for case in CASES])
    modules = sorted(p.stem for p in (REPO_ROOT / "plugins" / "modules").glob("*.py"))
    roles = sorted(p.name for p in (REPO_ROOT / "roles").iterdir() if p.is_dir())
    missing = [m for m in modules if "baremetal.tenancy.%s" % m not in text]
    missing += [r for r in roles if "baremetal.tenancy.%s" % r not in text]
    assert not missing, missing
    assert any(case.kind == V for case in CASES)
    assert len(CASES) >= 40
