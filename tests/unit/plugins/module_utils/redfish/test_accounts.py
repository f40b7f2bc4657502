# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The bmc_account phases without a BMC: the one writer simulates every write in check mode."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import account_rules as ba
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import accounts

PARAMS = dict(
    host_name=None,
    namespace=None,
    bmc_address="redfish://127.0.0.1/redfish/v1/Systems/1",
    bmc_username="root",
    bmc_password="secret",
    bmc_validate_certs=True,
    bmc_timeout=30,
    username=None,
    grantee="tenant-a",
    role="Operator",
    state="present",
    expires_at=None,
    expires_in=None,
    rotate_password=False,
)


class FakeTable:
    """Records every write an AccountTable would send."""

    with_expiration = True
    uses_slots = False
    password_length = 16

    def __init__(self, docs=()):
        self.docs = list(docs)
        self.writes = []

    def find(self, username):
        return ba.find_account(self.docs, username)

    def create(self, username, role, expires):
        self.writes.append(("create", username))
        doc = {"@odata.id": "/redfish/v1/AccountService/Accounts/9", "UserName": username, "RoleId": role}
        return doc, "pw", False

    def update(self, doc, body, what):
        self.writes.append(("update", what, sorted(body)))

    def remove(self, doc, slot=None):
        self.writes.append(("remove", doc["UserName"]))


class FakeHandle:
    obj = "BareMetalHost metal3/h1"

    def __init__(self):
        self.saved = []

    def save(self, entries):
        self.saved.append(entries)


def request(**params):
    return accounts.validate(dict(PARAMS, **params), "metal3")


def doc(username="bmt-a", uri="/redfish/v1/AccountService/Accounts/3"):
    return {"@odata.id": uri, "UserName": username, "RoleId": "ReadOnly", "Enabled": True}


@pytest.mark.parametrize("check_mode", [True, False])
def test_a_new_account_is_written_only_outside_check_mode(check_mode):
    table = FakeTable()
    writer = accounts.Writer(table, check_mode)
    req = request(username="bmt-a")
    plan = accounts.plan_account(table, req, None)
    outcome = accounts.apply_account(writer, table, plan, req, None)
    assert writer.changed is True
    assert table.writes == ([] if check_mode else [("create", "bmt-a")])
    assert outcome.after["username"] == "bmt-a"
    assert (outcome.password is None) is check_mode


def test_check_mode_rotation_reports_a_change_and_makes_no_password():
    table = FakeTable([doc()])
    writer = accounts.Writer(table, True)
    password = writer.update(doc(), {}, "update bmt-a", rotate_password=True)
    assert password is None and writer.changed and table.writes == []


def test_rotation_sends_the_password_with_the_change_in_one_patch():
    table = FakeTable([doc()])
    writer = accounts.Writer(table, False)
    password = writer.update(doc(), {"RoleId": "Operator"}, "update bmt-a", rotate_password=True)
    assert password and table.writes == [("update", "update bmt-a", ["Password", "RoleId"])]


def test_an_unchanged_account_is_not_a_change():
    writer = accounts.Writer(FakeTable(), False)
    assert writer.update(doc(), {}, "disable bmt-a") is None
    assert writer.changed is False


def test_the_ledger_is_saved_once_and_never_in_check_mode():
    for check_mode, saves in ((True, 0), (False, 1)):
        handle = FakeHandle()
        ledger = accounts.HostLedger(handle, [dict(username="bmt-a", uri="/x")])
        ledger.drop("bmt-a")
        writer = accounts.Writer(None, check_mode)
        accounts.record(writer, ledger)
        assert writer.changed is True
        assert len(handle.saved) == saves


def test_an_account_not_in_the_ledger_is_left_alone():
    table = FakeTable([doc()])
    ledger = accounts.HostLedger(FakeHandle(), [])
    with pytest.raises(Conflict):
        accounts.plan_account(table, request(username="bmt-a"), ledger)


def test_a_recorded_account_gone_from_the_bmc_leaves_the_ledger():
    ledger = accounts.HostLedger(FakeHandle(), [dict(username="bmt-a", uri="/redfish/v1/AccountService/Accounts/3")])
    plan = accounts.plan_account(FakeTable(), request(username="bmt-a"), ledger)
    assert plan.doc is None and plan.entry is None
    assert ledger.entries == [] and ledger.changed


def test_bulk_removal_in_check_mode_removes_nothing():
    table = FakeTable([doc("bmt-a"), doc("root", "/redfish/v1/AccountService/Accounts/1")])
    writer = accounts.Writer(table, True)
    req = request(state="pruned", grantee=None)
    plan = accounts.plan_bulk(table, req, None)
    assert isinstance(plan, ba.Revocations)
    assert accounts.apply_bulk(writer, plan, None) == []
    assert table.writes == []


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(bmc_address=None), "give host_name"),
        (dict(host_name="h1"), "option namespace"),
        (dict(state="disabled", grantee=None), "option username"),
        (dict(state="absent", grantee=None), "option username"),
        (dict(username="root"), "bmt-"),
    ],
)
def test_invalid_options_fail_before_any_io(params, message):
    with pytest.raises(InvalidInput) as err:
        request(**params)
    assert message in err.value.message


def test_the_default_user_name_comes_from_the_grantee():
    req = request()
    assert req.username == ba.default_username("tenant-a") and req.single
