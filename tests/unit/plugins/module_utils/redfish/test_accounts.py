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


class BmcTable(FakeTable):
    """A FakeTable whose created accounts are listed (as the BMC's AccountService lists them) and removable."""

    def __init__(self, refuse_remove=False):
        super().__init__()
        self.refuse_remove = refuse_remove

    def refresh(self):
        pass

    def create(self, username, role, expires):
        made, password, slot = super().create(username, role, expires)
        self.docs.append(made)
        return made, password, slot

    def remove(self, doc, slot=None):
        if self.refuse_remove:
            raise Conflict("BMC account %s" % doc["UserName"], "the BMC is busy")
        super().remove(doc, slot)
        self.docs = [d for d in self.docs if d["UserName"] != doc["UserName"]]


class BrokenHandle(FakeHandle):
    def save(self, entries):
        raise Conflict(self.obj, "the account ledger kept changing; try again")


class Mod:
    def __init__(self):
        self.result = {}


def create_then_record(table):
    """Create bmt-a on a host whose ledger cannot be written; returns (the error, the module's result)."""
    ledger = accounts.HostLedger(BrokenHandle(), [])
    writer = accounts.Writer(table, False)
    req = request(username="bmt-a", host_name="h1", namespace="metal3")
    plan = accounts.plan_account(table, req, ledger)
    outcome = accounts.apply_account(writer, table, plan, req, ledger)
    mod = Mod()
    mod.result.update(password=outcome.password, username="bmt-a", account=outcome.after)
    with pytest.raises(Conflict) as caught:
        accounts.record_or_undo(mod, writer, table, ledger, outcome.entry)
    return caught.value, mod.result


def test_an_account_the_ledger_cannot_record_is_deleted_again():
    # left on the BMC, it would be refused by every later run (not in the ledger) and nobody would know its password
    table = BmcTable()
    error, result = create_then_record(table)
    assert table.writes == [("create", "bmt-a"), ("remove", "bmt-a")]
    assert table.find("bmt-a") is None
    assert "account ledger kept changing" in error.message and "BMC account bmt-a was undone" in error.message
    assert "password" not in result and "account" not in result


def test_an_account_that_cannot_be_deleted_again_is_reported_with_its_password():
    table = BmcTable(refuse_remove=True)
    error, result = create_then_record(table)
    assert table.find("bmt-a") is not None
    assert "BMC account bmt-a is left behind: undoing it failed" in error.message and "busy" in error.message
    assert result["password"] == "pw"  # the only way left to reach (and remove) it


def test_a_ledger_failure_after_an_update_undoes_nothing():
    table = BmcTable()
    table.docs.append(doc())
    with pytest.raises(Conflict) as caught:
        accounts.record_or_undo(Mod(), accounts.Writer(table, False), table, _changed_ledger(), None)
    assert table.writes == [] and "undone" not in caught.value.message


def _changed_ledger():
    ledger = accounts.HostLedger(BrokenHandle(), [dict(username="bmt-a", uri="/redfish/v1/AccountService/Accounts/3")])
    ledger.drop("bmt-a")
    return ledger
