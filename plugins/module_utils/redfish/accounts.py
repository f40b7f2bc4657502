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
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    InvalidInput,
    NotFound,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import account_rules as ba
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import client as redfish
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.ironic_ledger import (
    IronicHost,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.metal3_ledger import (
    Metal3Host,
)

# ------------------------------------------------------------------ ledgers on hosts


def open_host(backend, host, namespace=None, api_client=None, conn=None):
    if backend == "metal3":
        if not namespace:
            raise InvalidInput("option namespace", "is required with backend metal3 and host_name")
        return Metal3Host(api_client, namespace, host)
    return IronicHost(conn, host)


# ------------------------------------------------------------------ one BMC's accounts


class AccountTable:
    """The AccountService of one BMC, read once, then changed account by account."""

    def __init__(self, bmc):
        self.bmc = bmc
        self.service = bmc.account_service()
        if self.service.get("ServiceEnabled") is False:
            raise InvalidInput(bmc.obj, "the BMC's AccountService is disabled")
        self.refresh()

    def refresh(self):
        self.collection, self.docs = self.bmc.accounts(self.service)
        self.with_expiration = ba.supports_expiration(self.docs)

    @property
    def password_length(self):
        return ba.password_length(self.service.get("MinPasswordLength"), self.service.get("MaxPasswordLength"))

    def roles(self):
        return self.bmc.roles(self.service)

    def find(self, username):
        return ba.find_account(self.docs, username)

    def create(self, username, role, expires, enabled=True):
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
                raise InvalidInput(obj, "the BMC refuses POST on its accounts and shows no empty slot")
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

    def update(self, doc, body, what):
        if body:
            self.bmc.patch(doc["@odata.id"], body, etag=doc.get("@odata.etag"), what=what)

    def remove(self, doc, slot=None):
        """DELETE the account; on a fixed-slot BMC (or a 405) empty its slot instead."""
        name = doc.get("UserName")
        if not ba.is_collection_username(name):  # the one guard every removal passes
            raise InvalidInput("BMC account %s" % name, "was not created by the collection: never touched")
        if slot is None:
            slot = ba.create_plan(self.docs)[0] == "patch"
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


# ------------------------------------------------------------------ revoke (lease end, claim release)


def revoke_host_accounts(
    backend,
    host,
    namespace=None,
    api_client=None,
    conn=None,
    grantee=None,
    only_expired=False,
    bmc_password=None,
    check_mode=False,
    timeout=30,
):
    """Delete the BMC accounts the collection granted on ``host``; return what was removed.

    Called, with ADMINISTRATOR credentials, when a lease ends or a claim that
    was granted BMC access is released:

    * metal3: ``revoke_host_accounts("metal3", bmh_name, namespace=<BMH
      namespace>, api_client=<kube ApiClient>, grantee=<claim namespace>)``
      (BMC address and credentials come from the BMH and its Secret);
    * ironic: ``revoke_host_accounts("ironic", node_uuid_or_name,
      conn=<system-scoped openstacksdk Connection>, grantee=<lessee project
      id>, bmc_password=<BMC admin password or None>)`` - Ironic masks
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
    handle = open_host(backend, host, namespace, api_client, conn)
    entries = handle.load()
    selected = ba.revocations(entries, [], grantee, only_expired)[1]
    if not selected:
        return dict(removed=[], dropped=[], changed=False)
    address, username, password, verify = handle.bmc(bmc_password) if backend == "ironic" else handle.bmc()
    with redfish.Bmc(
        "BMC of %s" % handle.obj, address, username, password, validate_certs=verify, timeout=timeout
    ) as bmc:
        table = AccountTable(bmc)
        to_remove, stale = ba.revocations(entries, table.docs, grantee, only_expired)
        if not check_mode:
            for entry, doc in to_remove:
                table.remove(doc, entry.get("slot"))
    gone = set(e["username"] for e, unused in to_remove) | set(e["username"] for e in stale)
    if gone and not check_mode:
        handle.save([e for e in entries if e["username"] not in gone])
    return dict(
        removed=sorted(e["username"] for e, unused in to_remove),
        dropped=sorted(e["username"] for e in stale),
        changed=bool(gone),
    )


# ------------------------------------------------------------------ the module


def _bmc_from_params(params):
    if not params.get("bmc_address"):
        raise InvalidInput("options", "give host_name (with backend) or bmc_address, bmc_username and bmc_password")
    for key in ("bmc_username", "bmc_password"):
        if not params.get(key):
            raise InvalidInput("option %s" % key, "is required with bmc_address")
    return params["bmc_address"], params["bmc_username"], params["bmc_password"], params["bmc_validate_certs"]


def run_bmc_account(mod, connect_backend):
    """The bmc_account module: ``connect_backend()`` gives the kube ApiClient or openstack Connection."""
    params = mod.params
    state = params["state"]
    handle, entries = None, None
    if params.get("host_name"):
        client = connect_backend()
        kwargs = dict(api_client=client) if mod.backend == "metal3" else dict(conn=client)
        handle = open_host(mod.backend, params["host_name"], params.get("namespace"), **kwargs)
        entries = handle.load()
        if params.get("bmc_address"):
            address, user, password, verify = _bmc_from_params(params)
        elif mod.backend == "ironic":
            address, user, password, verify = handle.bmc(params.get("bmc_password"))
            if params.get("bmc_username"):
                user = params["bmc_username"]
        else:
            address, user, password, verify = handle.bmc()
    else:
        address, user, password, verify = _bmc_from_params(params)
    if params.get("bmc_validate_certs") is not None and params.get("bmc_address"):
        verify = params["bmc_validate_certs"]
    now = ba.utcnow()
    expires = ba.expiry_from(params.get("expires_at"), params.get("expires_in"), now)
    username = None
    if state in ("present", "disabled", "absent") and (params.get("username") or params.get("grantee")):
        username = params.get("username") or ba.default_username(params.get("grantee"))
        ba.validate_username(username)
    if state in ("present", "disabled") and username is None:
        raise InvalidInput("option username", "is required with state %s (or give grantee)" % state)
    if state == "absent" and username is None and not (handle and params.get("grantee")):
        raise InvalidInput("option username", "is required with state absent (or give host_name and grantee)")

    obj = "BMC account %s" % (username or "(all of grantee %s)" % params.get("grantee"))
    bmc_label = "BMC of %s" % (handle.obj if handle else "the given address")
    with redfish.Bmc(bmc_label, address, user, password, validate_certs=verify, timeout=params["bmc_timeout"]) as bmc:
        table = AccountTable(bmc)
        roles = table.roles()
        if state == "present" and roles is not None and params["role"] not in roles:
            raise InvalidInput(obj, "role %s is not one of the BMC's roles (%s)" % (params["role"], ", ".join(roles)))
        ledger_changed = False
        acted = None
        if state in ("present", "disabled", "absent") and username:
            doc = table.find(username)
            entry = ba.ledger_entry(entries, username) if entries is not None else None
            if doc is not None and entries is not None and (entry is None or not ba.entry_matches(entry, doc)):
                raise Conflict(
                    obj,
                    "exists on the BMC but is not recorded as created by the collection for %s: "
                    "left alone" % handle.obj,
                )
            if entry is not None and doc is None:
                entries = ba.ledger_drop(entries, username)
                ledger_changed = True
                entry = None
            before = ba.account_view(doc, entry, now) if doc else None
            if state == "present":
                acted = _present(mod, table, doc, entry, username, expires, now, handle, params)
                if acted.get("entry") is not None and entries is not None:
                    entries = ba.ledger_put(entries, acted["entry"])
                    ledger_changed = ledger_changed or acted["entry"] != entry
            elif state == "disabled":
                if doc is not None:
                    body = ba.update_body(doc, enabled=False)
                    if body:
                        mod.changed()
                        if not mod.check_mode:
                            table.update(doc, body, "disable %s" % username)
                acted = dict(after=dict(before, enabled=False) if before else None)
            else:  # absent
                if doc is not None:
                    mod.changed()
                    if not mod.check_mode:
                        table.remove(doc, (entry or {}).get("slot"))
                    if entries is not None:
                        entries = ba.ledger_drop(entries, username)
                        ledger_changed = True
                acted = dict(after=None)
            mod.set_diff(before or {}, acted.get("after") or {})
            if acted.get("after"):
                mod.result["account"] = acted["after"]
            if acted.get("password"):
                mod.result["password"] = acted["password"]
                mod.result["username"] = username
        elif state in ("absent", "pruned"):
            docs_entries = (
                entries
                if entries is not None
                else [
                    dict(username=d["UserName"], uri=d["@odata.id"].rstrip("/"), expires=d.get("AccountExpiration"))
                    for d, unused in ba.collection_accounts(table.docs)
                ]
            )
            to_remove, stale = ba.revocations(
                docs_entries,
                table.docs,
                params.get("grantee") if state == "absent" else None,
                only_expired=(state == "pruned"),
                now=now,
            )
            for entry, doc in to_remove:
                mod.changed()
                if not mod.check_mode:
                    table.remove(doc, entry.get("slot"))
            gone = set(e["username"] for e, unused in to_remove) | set(e["username"] for e in stale)
            if entries is not None and gone:
                entries = [e for e in entries if e["username"] not in gone]
                ledger_changed = True
            mod.result["removed"] = sorted(e["username"] for e, unused in to_remove)
            mod.set_diff({"accounts": sorted(e["username"] for e, unused in to_remove)}, {"accounts": []})
        if handle is not None and ledger_changed:
            mod.changed()
            if not mod.check_mode:
                handle.save(entries)
        if not mod.check_mode and mod.result["changed"]:
            table.refresh()
        mod.result["accounts"] = [ba.account_view(d, e, now) for d, e in ba.collection_accounts(table.docs, entries)]
        mod.result["expiry_enforced_by_bmc"] = table.with_expiration


def _present(mod, table, doc, entry, username, expires, now, handle, params):
    """Create or update the account; returns dict(after=view, password=..., entry=ledger entry)."""
    role = params["role"]
    # expires_in counts from the creation: rerunning the task must not push the expiry back.
    manage_expiry = params.get("expires_at") is not None
    if expires is not None and not table.with_expiration and handle is None:
        raise InvalidInput(
            "BMC account %s" % username,
            "the BMC does not enforce AccountExpiration and no host was given "
            "to record the expiry: give host_name, or no expiry",
        )
    grantee = params.get("grantee")
    if doc is None:
        mod.changed()
        if mod.check_mode:
            view = dict(
                username=username,
                role=role,
                enabled=True,
                locked=False,
                uri=None,
                expires=ba.format_time(expires),
                expired=False,
                expiry_enforced_by=("bmc" if table.with_expiration else "collection") if expires else None,
                slot=ba.create_plan(table.docs)[0] == "patch",
            )
            return dict(after=view, password=None, entry=None)
        made, password, slot = table.create(username, role, expires)
        new_entry = dict(
            username=username,
            uri=made["@odata.id"].rstrip("/"),
            role=role,
            grantee=grantee,
            created=ba.format_time(now),
            expires=ba.format_time(expires),
            bmc_expiry=table.with_expiration,
            slot=slot,
        )
        return dict(
            after=ba.account_view(made, new_entry, now),
            password=password,
            entry=new_entry if handle is not None else None,
        )
    body = ba.update_body(
        doc,
        role=role,
        enabled=True,
        expires=expires,
        with_expiration=table.with_expiration,
        manage_expiry=manage_expiry,
    )
    password = None
    new_entry = dict(entry) if entry else None
    if new_entry is not None:
        new_entry["role"] = role
        if manage_expiry:
            new_entry["expires"] = ba.format_time(expires)
        if grantee is not None:
            new_entry["grantee"] = grantee
    after = dict(doc)
    after.update(body)
    if params.get("rotate_password") and not mod.check_mode:
        # One PATCH for the role/expiry change and the new password (the ETag is used once).
        password = ba.generate_password(table.password_length)
        body["Password"] = password
    if body or params.get("rotate_password"):
        mod.changed()
        if not mod.check_mode:
            table.update(doc, body, "update %s" % username)
    return dict(after=ba.account_view(after, new_entry, now), password=password, entry=new_entry)
