# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Temporary BMC accounts: the I/O (BMC through :mod:`redfish.client`, ledgers on hosts).

Entry points:

* :func:`run_bmc_account` - the ``bmc_account`` module;
* :func:`revoke_host_accounts` - what ending a lease or releasing a claim
  calls to delete the BMC accounts granted on a host (administrator
  credentials; see its docstring for the exact call);
* :class:`AccountTable` - one BMC's AccountService (POST or fixed slots).

Where the ledger lives (see :mod:`account_rules` for the marking rules):
metal3 - annotation ``baremetal.tenancy/bmc-accounts`` on the BareMetalHost
(tenants cannot read BMHs, and the binder never imports it into a claim:
only ``export.hostclaim.metal3.io`` annotations cross, and keys naming
``bmc`` never do); ironic - ``driver_info["bmt_bmc_accounts"]`` of the node
(readable and writable only by the owner's and system readers/members, never
by a lessee).  The BMH write carries a resourceVersion precondition (a
conflict re-reads and retries); Ironic's PATCH has no precondition, so the
node's ledger is written right after it is read.

The module runs in named phases (:func:`run_bmc_account`): validate the
options (:func:`validate`, no I/O) -> open the host's ledger
(:func:`open_ledger`) -> open the BMC (:func:`bmc_credentials`,
:class:`AccountTable`) -> plan (:func:`plan_account`, :func:`plan_bulk`,
pure decisions over what was read) -> apply and record (every BMC and ledger
write goes through the one :class:`Writer`, which simulates them in check
mode) -> report (:func:`report`).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    undo_after,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import account_rules as ba
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import client as redfish

# ------------------------------------------------------------------ ledgers on hosts
#
# A host's ledger is kept by its backend's own code (``metal3.bmc_ledger.Metal3Host``, a BareMetalHost;
# ``ironic.bmc_ledger.IronicHost``, an Ironic node), so this package imports neither backend: the callers open
# the host and hand it over. A handle has ``obj`` (the host named in errors), ``load()`` (the entries),
# ``save(entries)`` and ``bmc(password=None)`` (``(address, username, password[, validate_certs])``).


@dataclass
class HostLedger:
    """The ledger of one host, loaded once; ``changed`` once an entry was put or dropped."""

    handle: Any
    entries: list[dict]
    changed: bool = False

    @property
    def obj(self) -> str:
        return self.handle.obj

    def entry(self, username: str) -> dict | None:
        return ba.ledger_entry(self.entries, username)

    def put(self, entry: dict, before: dict | None) -> None:
        self.entries = ba.ledger_put(self.entries, entry)
        self.changed = self.changed or entry != before

    def drop(self, usernames: set[str] | str) -> None:
        gone = {usernames} if isinstance(usernames, str) else set(usernames)
        self.entries = [e for e in self.entries if e["username"] not in gone]
        self.changed = True


class BmcCredentials(NamedTuple):
    """Where the BMC is and the administrator account the collection logs in with."""

    address: str
    username: str
    password: str
    validate_certs: bool


# ------------------------------------------------------------------ one BMC's accounts


class Created(NamedTuple):
    """A created account as the module reports it (simulated in check mode)."""

    view: dict
    password: str | None
    entry: dict | None


class AccountTable:
    """The AccountService of one BMC, read once, then changed account by account."""

    def __init__(self, bmc: redfish.Bmc) -> None:
        self.bmc = bmc
        self.service = bmc.account_service()
        if self.service.get("ServiceEnabled") is False:
            raise InvalidInput(bmc.obj, "the BMC's AccountService is disabled")
        self.refresh()

    def refresh(self) -> None:
        self.collection, self.docs = self.bmc.accounts(self.service)
        self.with_expiration = ba.supports_expiration(self.docs)

    @property
    def password_length(self) -> int:
        return ba.password_length(self.service.get("MinPasswordLength"), self.service.get("MaxPasswordLength"))

    @property
    def uses_slots(self) -> bool:
        """Whether a new account goes into a fixed slot (no POST on the collection)."""
        return ba.create_plan(self.docs)[0] == "patch"

    def roles(self) -> list[str] | None:
        return self.bmc.roles(self.service)

    def find(self, username: str) -> dict | None:
        return ba.find_account(self.docs, username)

    def create(
        self, username: str, role: str, expires: datetime.datetime | None, enabled: bool = True
    ) -> tuple[dict, str, bool]:
        """Create the account (POST, or PATCH into an empty slot); return (doc, password, slot)."""
        password = ba.generate_password(self.password_length)
        body = ba.create_body(username, password, role, enabled, expires, self.with_expiration)
        how, slots = ba.create_plan(self.docs)
        obj = "BMC account %s" % username
        if how == "post":
            try:
                doc, headers = self.bmc.post(self.collection, body, "create account %s" % username)
            except InvalidInput as err:
                if err.details.get("status") != 405:
                    raise
                raise InvalidInput(obj, "the BMC refuses POST on its accounts and shows no empty slot") from err
            self.refresh()
            location = (headers or {}).get("Location") or doc.get("@odata.id")
            made = self.find(username)
            if made is None:
                raise NotFound(obj, "created (%s) but not listed by the BMC" % (location or "no location"))
            return made, password, False
        last = None
        for slot in slots:
            uri = slot["@odata.id"]
            try:
                self.bmc.patch(uri, body, etag=slot.get("@odata.etag"), what="account slot %s" % slot.get("Id"))
            except (InvalidInput, Conflict) as err:  # reserved slot (400) or taken meanwhile (409/412)
                last = err
                continue
            self.refresh()
            made = self.find(username)
            if made is not None and made.get("@odata.id", "").rstrip("/") == uri.rstrip("/"):
                return made, password, True
            last = Conflict(obj, "slot %s was taken by someone else meanwhile" % slot.get("Id"))
        raise last or InvalidInput(obj, "no empty account slot left on the BMC")

    def update(self, doc: dict, body: dict, what: str) -> None:
        if body:
            self.bmc.patch(doc["@odata.id"], body, etag=doc.get("@odata.etag"), what=what)

    def remove(self, doc: dict, slot: bool | None = None) -> None:
        """DELETE the account; on a fixed-slot BMC (or a 405) empty its slot instead."""
        name = doc.get("UserName")
        if not ba.is_collection_username(name):  # the one guard every removal passes
            raise InvalidInput("BMC account %s" % name, "was not created by the collection: never touched")
        if slot is None:
            slot = self.uses_slots
        if not slot:
            try:
                self.bmc.delete(doc["@odata.id"], "delete account %s" % name)
                return
            except InvalidInput as err:
                if err.details.get("status") != 405:
                    raise
        self.bmc.patch(
            doc["@odata.id"],
            ba.clear_slot_body(),
            etag=doc.get("@odata.etag"),
            what="empty the slot of account %s" % name,
        )


# ------------------------------------------------------------------ the one writer


class Writer:
    """Every write to a BMC or to a host's ledger passes here.

    Each write marks :attr:`changed`; in check mode it is only simulated:
    nothing is sent, a new account is reported as it would be, and no
    password is made.
    """

    def __init__(self, table: AccountTable | None, check_mode: bool) -> None:
        self.table = table
        self.check_mode = check_mode
        self.changed = False

    def _write(self) -> bool:
        """Mark the change; whether to really write."""
        self.changed = True
        return not self.check_mode

    def create(
        self,
        username: str,
        role: str,
        expires: datetime.datetime | None,
        grantee: str | None,
        now: datetime.datetime,
    ) -> Created:
        table = self.table
        if not self._write():
            view = dict(
                username=username,
                role=role,
                enabled=True,
                locked=False,
                uri=None,
                expires=ba.format_time(expires),
                expired=False,
                expiry_enforced_by=("bmc" if table.with_expiration else "collection") if expires else None,
                slot=table.uses_slots,
            )
            return Created(view, None, None)
        made, password, slot = table.create(username, role, expires)
        entry = dict(
            username=username,
            uri=made["@odata.id"].rstrip("/"),
            role=role,
            grantee=grantee,
            created=ba.format_time(now),
            expires=ba.format_time(expires),
            bmc_expiry=table.with_expiration,
            slot=slot,
        )
        return Created(ba.account_view(made, entry, now), password, entry)

    def update(self, doc: dict, body: dict, what: str, rotate_password: bool = False) -> str | None:
        """PATCH ``body`` (one PATCH with the new password when rotating: the ETag is used once)."""
        if not body and not rotate_password:
            return None
        if not self._write():
            return None
        password = None
        if rotate_password:
            password = ba.generate_password(self.table.password_length)
            body = dict(body, Password=password)
        self.table.update(doc, body, what)
        return password

    def remove(self, doc: dict, slot: bool | None = None) -> None:
        if self._write():
            self.table.remove(doc, slot)

    def save_ledger(self, handle: Any, entries: list[dict]) -> None:
        if self._write():
            handle.save(entries)


# ------------------------------------------------------------------ revoke (lease end, claim release)


def revoke_host_accounts(
    handle: Any,
    grantee: Any = None,
    only_expired: bool = False,
    bmc_password: str | None = None,
    check_mode: bool = False,
    timeout: int = 30,
) -> dict:
    """Delete the BMC accounts the collection granted on the host ``handle`` opens; return what was removed.

    Called, with ADMINISTRATOR credentials, when a lease ends or a claim that
    was granted BMC access is released:

    * metal3: ``revoke_host_accounts(Metal3Host(<kube ApiClient or KubeIO>,
      <BMH namespace>, bmh_name), grantee=<claim namespace>)`` (BMC address
      and credentials come from the BMH and its Secret);
    * ironic: ``revoke_host_accounts(IronicHost(<system-scoped openstacksdk
      Connection>, node_uuid_or_name), grantee=<lessee project id>,
      bmc_password=<BMC admin password or None>)`` - Ironic masks
      ``redfish_password``, so the password must be given unless the
      caller's policy shows it.

    ``grantee`` may also be a collection of the names one grantee goes by
    (a project's ID and name); ``grantee=None`` removes every recorded
    account (whoever it was for);
    ``only_expired`` only those whose expiry passed.  A host with an empty
    ledger returns at once without contacting the BMC.  Entries whose account
    is gone, or was replaced by an account the collection did not create,
    are dropped from the ledger; those accounts are never touched.

    Returns a dict: ``removed`` (user names), ``dropped`` (stale ledger
    entries), ``changed`` (bool).
    """
    entries = handle.load()
    if not ba.revocations(entries, [], grantee, only_expired).stale:
        return dict(removed=[], dropped=[], changed=False)
    creds = BmcCredentials(*handle.bmc(bmc_password))
    writer = Writer(None, check_mode)
    with _open_bmc("BMC of %s" % handle.obj, creds, timeout) as bmc:
        writer.table = AccountTable(bmc)
        plan = ba.revocations(entries, writer.table.docs, grantee, only_expired)
        for entry, doc in plan.remove:
            writer.remove(doc, entry.get("slot"))
    gone = {e["username"] for e, unused in plan.remove} | {e["username"] for e in plan.stale}
    if gone:
        writer.save_ledger(handle, [e for e in entries if e["username"] not in gone])
    return dict(
        removed=sorted(e["username"] for e, unused in plan.remove),
        dropped=sorted(e["username"] for e in plan.stale),
        changed=bool(gone),
    )


# ------------------------------------------------------------------ the module: phases


SINGLE_STATES = ("present", "disabled", "absent")


@dataclass(frozen=True)
class Request:
    """The module's options, validated (phase 1, no I/O)."""

    state: str
    username: str | None
    grantee: str | None
    role: str
    expires: datetime.datetime | None
    manage_expiry: bool
    rotate_password: bool
    now: datetime.datetime = field(compare=False)

    @property
    def obj(self) -> str:
        return "BMC account %s" % (self.username or "(all of grantee %s)" % self.grantee)

    @property
    def single(self) -> bool:
        """One named account (present, disabled, absent with a user name)."""
        return self.state in SINGLE_STATES and bool(self.username)


class AccountPlan(NamedTuple):
    """What was read about one named account: the BMC's document, the ledger's entry, the view before."""

    username: str
    doc: dict | None
    entry: dict | None
    before: dict | None


class Outcome(NamedTuple):
    """What applying a plan to one account gives: the view after, a new password, a new ledger entry."""

    after: dict | None
    password: str | None = None
    entry: dict | None = None


def _bmc_from_params(params: dict) -> BmcCredentials:
    if not params.get("bmc_address"):
        raise InvalidInput("options", "give host_name (with backend) or bmc_address, bmc_username and bmc_password")
    for key in ("bmc_username", "bmc_password"):
        if not params.get(key):
            raise InvalidInput("option %s" % key, "is required with bmc_address")
    return BmcCredentials(
        params["bmc_address"], params["bmc_username"], params["bmc_password"], params["bmc_validate_certs"]
    )


def validate(params: dict, backend: str) -> Request:
    """Phase 1: check the options and compute the expiry and the user name; no I/O."""
    host_name = params.get("host_name")
    if host_name and backend == "metal3" and not params.get("namespace"):
        raise InvalidInput("option namespace", "is required with backend metal3 and host_name")
    if not host_name or params.get("bmc_address"):
        _bmc_from_params(params)
    state = params["state"]
    now = ba.utcnow()
    expires = ba.expiry_from(params.get("expires_at"), params.get("expires_in"), now)
    username = None
    if state in SINGLE_STATES and (params.get("username") or params.get("grantee")):
        username = params.get("username") or ba.default_username(params.get("grantee"))
        ba.validate_username(username)
    if state in ("present", "disabled") and username is None:
        raise InvalidInput("option username", "is required with state %s (or give grantee)" % state)
    if state == "absent" and username is None and not (host_name and params.get("grantee")):
        raise InvalidInput("option username", "is required with state absent (or give host_name and grantee)")
    return Request(
        state=state,
        username=username,
        grantee=params.get("grantee"),
        role=params["role"],
        expires=expires,
        # expires_in counts from the creation: rerunning the task must not push the expiry back.
        manage_expiry=params.get("expires_at") is not None,
        rotate_password=bool(params.get("rotate_password")),
        now=now,
    )


def open_ledger(params: dict, open_host: Callable[[str], Any]) -> HostLedger | None:
    """Phase 2: the ledger of ``host_name`` (None without a host); ``open_host(name)`` gives its backend's handle."""
    if not params.get("host_name"):
        return None
    handle = open_host(params["host_name"])
    return HostLedger(handle, handle.load())


def bmc_credentials(params: dict, backend: str, ledger: HostLedger | None) -> BmcCredentials:
    """Phase 3a: the options' BMC, else the one recorded on the host."""
    if ledger is None or params.get("bmc_address"):
        return _bmc_from_params(params)
    if backend == "ironic":
        creds = BmcCredentials(*ledger.handle.bmc(params.get("bmc_password")))
        if params.get("bmc_username"):
            creds = creds._replace(username=params["bmc_username"])
        return creds
    return BmcCredentials(*ledger.handle.bmc())


def _open_bmc(label: str, creds: BmcCredentials, timeout: int) -> redfish.Bmc:
    """Phase 3b: the connection to the BMC (a context manager)."""
    return redfish.Bmc(
        label, creds.address, creds.username, creds.password, validate_certs=creds.validate_certs, timeout=timeout
    )


def plan_account(table: AccountTable, request: Request, ledger: HostLedger | None) -> AccountPlan:
    """Phase 4 (one account): what the BMC and the ledger hold; refuse an account the collection did not make.

    A ledger entry whose account is gone is dropped here (recorded later).
    """
    username = request.username
    doc = table.find(username)
    entry = ledger.entry(username) if ledger is not None else None
    if doc is not None and ledger is not None and (entry is None or not ba.entry_matches(entry, doc)):
        raise Conflict(
            request.obj,
            "exists on the BMC but is not recorded as created by the collection for %s: left alone" % ledger.obj,
        )
    if entry is not None and doc is None:
        ledger.drop(username)
        entry = None
    before = ba.account_view(doc, entry, request.now) if doc else None
    return AccountPlan(username, doc, entry, before)


def check_role(table: AccountTable, request: Request) -> None:
    roles = table.roles()
    if request.state == "present" and roles is not None and request.role not in roles:
        raise InvalidInput(request.obj, "role %s is not one of the BMC's roles (%s)" % (request.role, ", ".join(roles)))


def apply_present(
    writer: Writer, table: AccountTable, plan: AccountPlan, request: Request, ledger: HostLedger | None
) -> Outcome:
    """Phase 5 (present): create the account, or bring its role and expiry to the request."""
    username = plan.username
    if request.expires is not None and not table.with_expiration and ledger is None:
        raise InvalidInput(
            "BMC account %s" % username,
            "the BMC does not enforce AccountExpiration and no host was given "
            "to record the expiry: give host_name, or no expiry",
        )
    if plan.doc is None:
        created = writer.create(username, request.role, request.expires, request.grantee, request.now)
        return Outcome(created.view, created.password, created.entry if ledger is not None else None)
    body = ba.update_body(
        plan.doc,
        role=request.role,
        enabled=True,
        expires=request.expires,
        with_expiration=table.with_expiration,
        manage_expiry=request.manage_expiry,
    )
    new_entry = dict(plan.entry) if plan.entry else None
    if new_entry is not None:
        new_entry["role"] = request.role
        if request.manage_expiry:
            new_entry["expires"] = ba.format_time(request.expires)
        if request.grantee is not None:
            new_entry["grantee"] = request.grantee
    after = dict(plan.doc)
    after.update(body)
    password = writer.update(plan.doc, body, "update %s" % username, rotate_password=request.rotate_password)
    return Outcome(ba.account_view(after, new_entry, request.now), password, new_entry)


def apply_account(
    writer: Writer, table: AccountTable, plan: AccountPlan, request: Request, ledger: HostLedger | None
) -> Outcome:
    """Phase 5 (one account): present, disabled or absent; the ledger follows (phase 6)."""
    if request.state == "present":
        outcome = apply_present(writer, table, plan, request, ledger)
        if outcome.entry is not None and ledger is not None:
            ledger.put(outcome.entry, plan.entry)
        return outcome
    if request.state == "disabled":
        if plan.doc is not None:
            writer.update(plan.doc, ba.update_body(plan.doc, enabled=False), "disable %s" % plan.username)
        return Outcome(dict(plan.before, enabled=False) if plan.before else None)
    if plan.doc is not None:  # absent
        writer.remove(plan.doc, (plan.entry or {}).get("slot"))
        if ledger is not None:
            ledger.drop(plan.username)
    return Outcome(None)


def plan_bulk(table: AccountTable, request: Request, ledger: HostLedger | None) -> ba.Revocations:
    """Phase 4 (absent by grantee, pruned): the recorded (or, without a host, prefixed) accounts to remove."""
    if ledger is not None:
        entries = ledger.entries
    else:
        entries = [
            dict(username=d["UserName"], uri=d["@odata.id"].rstrip("/"), expires=d.get("AccountExpiration"))
            for d, unused in ba.collection_accounts(table.docs)
        ]
    return ba.revocations(
        entries,
        table.docs,
        request.grantee if request.state == "absent" else None,
        only_expired=(request.state == "pruned"),
        now=request.now,
    )


def apply_bulk(writer: Writer, plan: ba.Revocations, ledger: HostLedger | None) -> list[str]:
    """Phase 5 (bulk): remove the accounts, drop them and the stale entries from the ledger; the removed names."""
    for entry, doc in plan.remove:
        writer.remove(doc, entry.get("slot"))
    gone = {e["username"] for e, unused in plan.remove} | {e["username"] for e in plan.stale}
    if ledger is not None and gone:
        ledger.drop(gone)
    return sorted(e["username"] for e, unused in plan.remove)


def record(writer: Writer, ledger: HostLedger | None) -> None:
    """Phase 6: write the host's ledger once, when it changed."""
    if ledger is not None and ledger.changed:
        writer.save_ledger(ledger.handle, ledger.entries)


def report(mod: Any, writer: Writer, table: AccountTable, request: Request, ledger: HostLedger | None) -> None:
    """Phase 7: the accounts after the change (re-read when something was written)."""
    mod.changed(writer.changed)
    if writer.changed and not writer.check_mode:
        table.refresh()
    entries = ledger.entries if ledger is not None else None
    mod.result["accounts"] = [
        ba.account_view(d, e, request.now) for d, e in ba.collection_accounts(table.docs, entries)
    ]
    mod.result["expiry_enforced_by_bmc"] = table.with_expiration


def run_bmc_account(mod: Any, open_host: Callable[[str], Any]) -> None:
    """The bmc_account module: ``open_host(name)`` gives the ledger handle of a host on the module's backend."""
    params = mod.params
    request = validate(params, mod.backend)
    ledger = open_ledger(params, open_host)
    creds = bmc_credentials(params, mod.backend, ledger)
    label = "BMC of %s" % (ledger.obj if ledger is not None else "the given address")
    with _open_bmc(label, creds, params["bmc_timeout"]) as bmc:
        table = AccountTable(bmc)
        writer = Writer(table, mod.check_mode)
        check_role(table, request)
        created = None
        if request.single:
            plan = plan_account(table, request, ledger)
            outcome = apply_account(writer, table, plan, request, ledger)
            if plan.doc is None and outcome.entry is not None:
                created = outcome.entry
            mod.set_diff(plan.before or {}, outcome.after or {})
            if outcome.after:
                mod.result["account"] = outcome.after
            if outcome.password:
                mod.result["password"] = outcome.password
                mod.result["username"] = plan.username
        elif request.state in ("absent", "pruned"):
            removed = apply_bulk(writer, plan_bulk(table, request, ledger), ledger)
            mod.result["removed"] = removed
            mod.set_diff({"accounts": removed}, {"accounts": []})
        record_or_undo(mod, writer, table, ledger, created)
        report(mod, writer, table, request, ledger)


def record_or_undo(
    mod: Any, writer: Writer, table: AccountTable, ledger: HostLedger | None, created: dict | None
) -> None:
    """Phase 6 (:func:`record`); when the ledger cannot be written, the account this run ``created`` (its
    ledger entry) is deleted from the BMC again (best effort).  An account the ledger does not know is one
    the collection refuses to touch on the next run, and its password would be known to nobody; the error
    says when it could not be deleted."""
    try:
        record(writer, ledger)
    except Exception as exc:
        if created is not None:
            _undo_creation(mod, table, created, exc)
        raise


def _undo_creation(mod: Any, table: AccountTable, entry: dict, error: Exception) -> None:
    def undo():
        table.refresh()
        doc = table.find(entry["username"])
        if doc is not None:
            table.remove(doc, entry.get("slot"))
        for key in ("password", "username", "account"):
            mod.result.pop(key, None)

    undo_after(error, "BMC account %s" % entry["username"], undo)
