"""bmc_account against sushy-tools BMCs whose AccountService really authenticates.

Each scenario is one ansible-playbook run that does what an administrator and
a lessee would: create the temporary account with bmc_account, then use it
with ``ansible.builtin.uri`` (basic auth) against the BMC. Proved here:

- a temporary Operator account can log in and power the system, and cannot
  create accounts (403); after deletion, or once its expiry passed, it can no
  longer log in (401); ``state: pruned`` removes the expired one;
- a fixed-slot BMC gets the account PATCHed into an empty slot; password
  rotation and disabling work; deletion empties the slot again;
- accounts the collection did not create (``ops-team``, and ``bmt-manual``
  made by hand with the collection's prefix) are never changed, in every
  scenario (their ETags are compared before and after);
- with a host (BareMetalHost, on baremetal-operator's own CRD, or Ironic
  node) the account is recorded on the host, and ``revoke_host_accounts`` - what ending a lease or releasing a
  claim calls - deletes it and clears the record; a hand-made prefixed
  account on the same BMC is refused and left alone;
- the generated password is in the registered result but in no output, even
  at ``-vvv``; no BMC admin password appears either.
"""

from __future__ import annotations

import json
import sys

import pytest
from harness import sushy as sushy_harness
from harness.ansible import collections_root, localhost_play, run_playbook
from kubernetes import client

FOREIGN = [
    {"username": "ops-team", "password": "ops-team-pass-1", "role": "Operator"},
    {"username": "bmt-manual", "password": "bmt-manual-pass-1", "role": "Operator"},
]
GROUP, VERSION = "metal3.io", "v1alpha1"


def _module_utils():
    root = str(collections_root())
    if root not in sys.path:
        sys.path.insert(0, root)
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.bmc_ledger import Metal3Host
    from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import accounts as bmc_access

    return bmc_access, Metal3Host


@pytest.fixture(scope="module")
def bmc(tmp_path_factory):
    em = sushy_harness.start_sushy(
        tmp_path_factory.mktemp("bmc-accounts"),
        sushy_harness.profile_systems({"medium": 1}, prefix="acct", first_index=210),
        accounts=FOREIGN,
    )
    try:
        yield em
    finally:
        em.stop()


@pytest.fixture(scope="module")
def slot_bmc(tmp_path_factory):
    em = sushy_harness.start_sushy(
        tmp_path_factory.mktemp("bmc-slots"),
        sushy_harness.profile_systems({"small": 1}, prefix="slot", first_index=220),
        accounts=FOREIGN[:1],
        account_slots=6,
    )
    try:
        yield em
    finally:
        em.stop()


def _foreign(em) -> dict:
    """ETag (i.e. every field) of each account the collection did not create."""
    return {
        a["UserName"]: a["@odata.etag"] for a in em.accounts() if a["UserName"] in ("admin", "ops-team", "bmt-manual")
    }


def _admin(em) -> dict:
    return {
        "bmc_address": em.bmcs[0].address,
        "bmc_username": em.username,
        "bmc_password": em.password,
        "bmc_validate_certs": False,
    }


def _uri(
    name: str,
    em,
    path: str,
    method: str = "GET",
    body: dict | None = None,
    user: str = "{{ acct.username }}",
    password: str = "{{ acct.password }}",
    register: str = "",
) -> dict:
    task = {
        "name": name,
        "ansible.builtin.uri": {
            "url": em.base_url + path,
            "method": method,
            "url_username": user,
            "url_password": password,
            "force_basic_auth": True,
            "status_code": [200, 201, 204, 400, 401, 403, 404, 405],
            "validate_certs": False,
            **({"body_format": "json", "body": body} if body is not None else {}),
        },
        "register": register or name.replace(" ", "_"),
    }
    return task


def _save(path, expr: str) -> dict:
    return {
        "name": "save results",
        "ansible.builtin.copy": {"dest": str(path), "content": "{{ %s | to_json }}" % expr},
        "no_log": True,
    }


def _failures(run) -> str:
    """The failed tasks of a run with their messages (for assertion messages)."""
    out = []
    for name, result in run.tasks.items():
        if result.get("failed"):
            out.append("%s: %s" % (name, result.get("msg")))
    return "\n".join(out) or run.explain()


def _reset(em):
    return em.bmcs[0].system_id + "/Actions/ComputerSystem.Reset"


NEW_ACCOUNT = {"UserName": "bmt-sneaky", "Password": "Sneaky-pass-1", "RoleId": "Administrator"}


def test_operator_account_lifecycle(bmc, tmp_path):
    before = _foreign(bmc)
    system = bmc.bmcs[0].system_id
    out = tmp_path / "out.json"
    tasks = [
        {
            "name": "create in check mode",
            "baremetal.tenancy.bmc_account": {
                **_admin(bmc),
                "username": "bmt-op1",
                "role": "Operator",
                "expires_in": "1h",
            },
            "register": "dry",
            "check_mode": True,
            "diff": True,
        },
        _uri("login before creation", bmc, system, user="bmt-op1", password="whatever-pass", register="before"),
        {
            "name": "create",
            "baremetal.tenancy.bmc_account": {
                **_admin(bmc),
                "username": "bmt-op1",
                "role": "Operator",
                "expires_in": "1h",
            },
            "register": "acct",
        },
        _uri("read as the lessee", bmc, system, register="read"),
        _uri("power on as the lessee", bmc, _reset(bmc), "POST", {"ResetType": "On"}, register="power"),
        _uri(
            "create an account as the lessee",
            bmc,
            "/redfish/v1/AccountService/Accounts",
            "POST",
            NEW_ACCOUNT,
            register="mkacct",
        ),
        {
            "name": "rerun",
            "baremetal.tenancy.bmc_account": {
                **_admin(bmc),
                "username": "bmt-op1",
                "role": "Operator",
                "expires_in": "1h",
            },
            "register": "again",
        },
        {"name": "list", "baremetal.tenancy.bmc_account": {**_admin(bmc), "state": "listed"}, "register": "listing"},
        {
            "name": "delete",
            "baremetal.tenancy.bmc_account": {**_admin(bmc), "username": "bmt-op1", "state": "absent"},
            "register": "gone",
        },
        {
            "name": "delete again",
            "baremetal.tenancy.bmc_account": {**_admin(bmc), "username": "bmt-op1", "state": "absent"},
            "register": "gone2",
        },
        _uri("read after deletion", bmc, system, register="after"),
        _save(
            out,
            "{'password': acct.password, 'username': acct.username, 'acct_keys': acct.keys() | list,"
            " 'read': read.status, 'power': power.status, 'mkacct': mkacct.status, 'after': after.status,"
            " 'again_changed': again.changed, 'again_password': again.password | default(None),"
            " 'listing': listing.accounts, 'gone': gone.changed, 'gone2': gone2.changed,"
            " 'expires': acct.account.expires, 'enforced': acct.account.expiry_enforced_by,"
            " 'dry_changed': dry.changed, 'dry_password': dry.password | default(None), 'dry_diff': dry.diff,"
            " 'before': before.status}",
        ),
    ]
    run = run_playbook(localhost_play(tasks), {}, tmp_path, verbosity=3, callback="default")
    assert run.rc == 0, run.explain()
    res = json.loads(out.read_text())
    # Check mode: reports the creation (with a diff), creates nothing, returns no password.
    assert res["dry_changed"] is True and res["dry_password"] is None
    assert res["dry_diff"]["before"] == {} and res["dry_diff"]["after"]["username"] == "bmt-op1"
    assert res["before"] == 401
    assert res["username"] == "bmt-op1" and len(res["password"]) == sushy_harness.MAX_PASSWORD_LENGTH
    assert res["read"] == 200
    assert res["power"] == 204
    assert res["mkacct"] == 403
    assert res["after"] == 401
    assert res["again_changed"] is False and res["again_password"] is None
    assert [a["username"] for a in res["listing"]] == ["bmt-manual", "bmt-op1"]  # bare BMC: the prefix marks them
    assert res["gone"] is True and res["gone2"] is False
    assert res["expires"] and res["enforced"] == "bmc"
    _status, doc = bmc.request("GET", system)
    assert doc["PowerState"] == "On"
    assert "bmt-sneaky" not in [a["UserName"] for a in bmc.accounts()]
    assert _foreign(bmc) == before
    # The password was returned (registered) but never shown, even at -vvv; nor the admin's.
    text = run.stdout + run.stderr
    assert res["password"] not in text
    assert bmc.password not in text
    assert "the output has been hidden" in text


def test_expiry_and_prune(bmc, tmp_path):
    before = _foreign(bmc)
    system = bmc.bmcs[0].system_id
    out = tmp_path / "out.json"
    tasks = [
        {
            "name": "create",
            "baremetal.tenancy.bmc_account": {**_admin(bmc), "username": "bmt-short", "expires_in": "25s"},
            "register": "acct",
        },
        _uri("read at once", bmc, system, register="first"),
        {
            **_uri("read until refused", bmc, system, register="later"),
            "until": "later.status == 401",
            "retries": 40,
            "delay": 2,
        },
        {"name": "prune", "baremetal.tenancy.bmc_account": {**_admin(bmc), "state": "pruned"}, "register": "pruned"},
        _save(out, "{'first': first.status, 'later': later.status, 'removed': pruned.removed}"),
    ]
    run = run_playbook(localhost_play(tasks), {}, tmp_path)
    assert run.ok, _failures(run)
    res = json.loads(out.read_text())
    assert res["first"] == 200
    assert res["later"] == 401
    assert res["removed"] == ["bmt-short"]
    names = [a["UserName"] for a in bmc.accounts()]
    assert "bmt-short" not in names and "bmt-manual" in names
    assert _foreign(bmc) == before


def test_fixed_slot_bmc(slot_bmc, tmp_path):
    em = slot_bmc
    before = _foreign(em)
    system = em.bmcs[0].system_id
    out = tmp_path / "out.json"
    tasks = [
        {
            "name": "create",
            "baremetal.tenancy.bmc_account": {**_admin(em), "username": "bmt-slot1", "role": "ReadOnly"},
            "register": "acct",
        },
        _uri("read", em, system, register="read"),
        _uri("power as read-only", em, _reset(em), "POST", {"ResetType": "On"}, register="power"),
        {
            "name": "make operator and rotate",
            "baremetal.tenancy.bmc_account": {
                **_admin(em),
                "username": "bmt-slot1",
                "role": "Operator",
                "rotate_password": True,
            },
            "register": "rot",
        },
        _uri("old password", em, system, register="old"),
        _uri(
            "new password", em, _reset(em), "POST", {"ResetType": "On"}, password="{{ rot.password }}", register="newpw"
        ),
        {
            "name": "disable",
            "baremetal.tenancy.bmc_account": {**_admin(em), "username": "bmt-slot1", "state": "disabled"},
            "register": "dis",
        },
        _uri("disabled login", em, system, password="{{ rot.password }}", register="disabled"),
        {
            "name": "delete",
            "baremetal.tenancy.bmc_account": {**_admin(em), "username": "bmt-slot1", "state": "absent"},
            "register": "gone",
        },
        _save(
            out,
            "{'slot': acct.account.slot, 'uri': acct.account.uri, 'read': read.status, 'power': power.status,"
            " 'old': old.status, 'newpw': newpw.status, 'rotated': rot.password != acct.password,"
            " 'dis': dis.changed, 'disabled': disabled.status, 'gone': gone.changed}",
        ),
    ]
    run = run_playbook(localhost_play(tasks), {}, tmp_path)
    assert run.ok, _failures(run)
    res = json.loads(out.read_text())
    assert res["slot"] is True
    # Slot 1 is reserved (the PATCH there is refused, the next empty slot is used), 2 is admin, 3 ops-team.
    assert res["uri"] == "/redfish/v1/AccountService/Accounts/4"
    assert (res["read"], res["power"]) == (200, 403)
    assert (res["old"], res["newpw"], res["rotated"]) == (401, 204, True)
    assert (res["dis"], res["disabled"]) == (True, 401)
    assert res["gone"] is True
    slots = {a["Id"]: a["UserName"] for a in em.accounts()}
    assert slots["4"] == "" and slots["3"] == "ops-team" and len(slots) == 6
    assert _foreign(em) == before


def _admin_bmh_ledger(kube_env, namespace, name) -> str | None:
    with kube_env.api("admin") as api:
        host = client.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, "baremetalhosts", name
        )
    return (host["metadata"].get("annotations") or {}).get("baremetal.tenancy/bmc-accounts")


@pytest.mark.real_bmo
def test_host_accounts_on_metal3_are_revoked_at_release(kube_env, metal3_bmo_env, bmc, tmp_path):
    """The BareMetalHost is written through baremetal-operator's CRD and webhook (its namespace is not one
    the operator reconciles: the BMC's accounts are the subject here, not the host's states)."""
    namespace = "bmt-access"
    with kube_env.api("admin") as api:
        try:
            client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
        except client.exceptions.ApiException as exc:
            if exc.status != 409:
                raise
    before = _foreign(bmc)
    b = bmc.bmcs[0]
    out = tmp_path / "out.json"
    tasks = [
        {
            "name": "register",
            "baremetal.tenancy.host_register": {
                "namespace": namespace,
                "hosts": [{"address": b.address, "username": b.username, "password": b.password, "name": "acct-host"}],
            },
        },
        {
            "name": "grant",
            "baremetal.tenancy.bmc_account": {
                "host_name": "acct-host",
                "namespace": namespace,
                "grantee": "tenant-a",
                "expires_in": "2h",
            },
            "register": "acct",
        },
        _uri("lessee powers on", bmc, _reset(bmc), "POST", {"ResetType": "On"}, register="power"),
        {
            "name": "list",
            "baremetal.tenancy.bmc_account": {"host_name": "acct-host", "namespace": namespace, "state": "listed"},
            "register": "listing",
        },
        {
            "name": "touch a hand-made account",
            "baremetal.tenancy.bmc_account": {
                "host_name": "acct-host",
                "namespace": namespace,
                "username": "bmt-manual",
                "state": "absent",
            },
            "register": "refused",
            "ignore_errors": True,
        },
        _save(
            out,
            "{'username': acct.username, 'password': acct.password, 'power': power.status,"
            " 'listing': listing.accounts, 'refused': refused.msg | default('')}",
        ),
    ]
    run = run_playbook(localhost_play(tasks), kube_env.ansible_env("admin"), tmp_path)
    assert run.result("grant").get("censored"), "the task output with the password must be hidden"
    res = json.loads(out.read_text())
    username = res["username"]
    assert username.startswith("bmt-") and res["power"] == 204
    assert [(a["username"], a["grantee"]) for a in res["listing"]] == [(username, "tenant-a")]
    assert "not recorded as created by the collection" in res["refused"]
    ledger = json.loads(_admin_bmh_ledger(kube_env, namespace, "acct-host"))
    assert [(e["username"], e["grantee"]) for e in ledger] == [(username, "tenant-a")]
    assert res["password"] not in run.stdout + run.stderr

    # What host_release / the lease end calls, as the administrator.
    bmc_access, metal3_host = _module_utils()
    with kube_env.api("admin") as api:
        host = metal3_host(api, namespace, "acct-host")
        assert bmc_access.revoke_host_accounts(host, grantee="tenant-b")["removed"] == []
        done = bmc_access.revoke_host_accounts(metal3_host(api, namespace, "acct-host"), grantee="tenant-a")
    assert done == {"removed": [username], "dropped": [], "changed": True}
    assert username not in [a["UserName"] for a in bmc.accounts()]
    assert _admin_bmh_ledger(kube_env, namespace, "acct-host") is None
    assert bmc.request("GET", b.system_id, username, res["password"])[0] == 401
    assert _foreign(bmc) == before


def test_host_accounts_on_ironic_are_revoked_at_lease_end(openstack_env, bmc, tmp_path):
    """host_lease ends the lease: the lessee's BMC account goes first (bmc_password
    needed, since Ironic masks the stored one); without it the lease is deferred."""
    before = _foreign(bmc)
    b = bmc.bmcs[0]
    tenant = openstack_env.tenants["tenant-a"]
    out = tmp_path / "out.json"
    lease = {"cloud": "admin", "project": tenant.project_id, "nodes": ["acct-node"]}
    tasks = [
        {
            "name": "register",
            "baremetal.tenancy.host_register": {
                "backend": "ironic",
                "cloud": "admin",
                "owner": "infra",
                "hosts": [{"address": b.address, "username": b.username, "password": b.password, "name": "acct-node"}],
            },
        },
        {"name": "lease", "baremetal.tenancy.host_lease": lease},
        # recorded by project name: the lease end knows the lessee by ID and finds it by name too
        {
            "name": "grant",
            "baremetal.tenancy.bmc_account": {
                "backend": "ironic",
                "cloud": "admin",
                "host_name": "acct-node",
                "bmc_password": b.password,
                "grantee": "tenant-a",
                "role": "Operator",
                "expires_in": "2h",
            },
            "register": "acct",
        },
        _uri("lessee powers off", bmc, _reset(bmc), "POST", {"ResetType": "ForceOff"}, register="power"),
        {
            "name": "end without the BMC password",
            "baremetal.tenancy.host_lease": dict(lease, state="absent"),
            "register": "deferred",
        },
        _save(
            out,
            "{'username': acct.username, 'password': acct.password, 'power': power.status,"
            " 'deferred': deferred.deferred}",
        ),
    ]
    run = run_playbook(localhost_play(tasks), openstack_env.ansible_env("admin"), tmp_path / "grant")
    assert run.ok, _failures(run)
    res = json.loads(out.read_text())
    assert res["power"] == 204
    assert [d["node"] for d in res["deferred"]] == ["acct-node"]
    assert "bmc_password" in res["deferred"][0]["reason"]
    conn = openstack_env.admin_conn
    node = conn.baremetal.get_node("acct-node")
    assert node.lessee == tenant.project_id, "the lease must stay while the account cannot be deleted"
    ledger = json.loads(node.driver_info["bmt_bmc_accounts"])
    assert [e["username"] for e in ledger] == [res["username"]]
    # A lessee cannot read the record (driver_info is redacted for it).
    seen = tenant.conn("member").baremetal.get_node(node.id)
    assert "bmt_bmc_accounts" not in json.dumps(seen.driver_info or {}), (
        seen.owner,
        seen.lessee,
        tenant.project_id,
        openstack_env.infra_project_id,
    )

    end = run_playbook(
        localhost_play(
            [
                {"name": "end", "baremetal.tenancy.host_lease": dict(lease, state="absent", bmc_password=b.password)},
            ]
        ),
        openstack_env.ansible_env("admin"),
        tmp_path / "end",
        verbosity=3,
    )
    assert end.ok, _failures(end)
    ended = end.result("end")
    assert [(a["node"], a["action"], a.get("bmc_accounts_removed")) for a in ended["actions"]] == [
        ("acct-node", "ended", [res["username"]])
    ]
    node = conn.baremetal.get_node("acct-node")
    assert node.lessee is None and "bmt_bmc_accounts" not in node.driver_info
    assert res["username"] not in [a["UserName"] for a in bmc.accounts()]
    assert bmc.request("GET", b.system_id, res["username"], res["password"])[0] == 401
    assert b.password not in end.stdout + end.stderr
    assert _foreign(bmc) == before
