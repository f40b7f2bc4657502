# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Temporary BMC accounts: the pure part (no I/O, no client library).

How the collection marks the accounts it creates
------------------------------------------------
Redfish ``ManagerAccount`` has no free-form field that every BMC accepts
(``Description`` is read-only on most, ``OEMAccountTypes`` is vendor-checked),
so an account is the collection's when BOTH hold:

1. its ``UserName`` starts with :data:`ACCOUNT_PREFIX` (``bmt-``): short
   enough for BMCs that allow 16 characters, made only of characters every
   BMC accepts; the collection refuses to create, change or delete any
   account whose name lacks the prefix;
2. when the account was made for a host (``host`` option), the host's
   **ledger** records it: a JSON list on the host that only administrators
   can read or write (BareMetalHost annotation :data:`LEDGER_ANNOTATION`;
   Ironic node ``driver_info[LEDGER_KEY]``, which lessees can neither read
   nor write), with the account's ``UserName``, its URI on the BMC, role,
   grantee, creation time and expiry.  An account is only touched through a
   ledger entry whose URI AND user name both still match it, so an account
   that someone else later created in the same slot, or renamed, is left
   alone.  Without a host (a bare BMC endpoint) only the prefix marks them.

Expiry is written to ``AccountExpiration`` (ManagerAccount v1_8+) when the
BMC's accounts carry that property, so the BMC itself refuses the account
afterwards; it is always recorded in the ledger too, so that
``state: pruned`` (and lease/claim ends) remove expired accounts on BMCs
that do not enforce it.

Fixed slots: some BMCs have a fixed table of accounts (``POST`` answers
405, empty slots have an empty ``UserName``).  :func:`create_plan` picks
``PATCH`` into the first empty slot when the collection shows empty slots
(else ``POST``); deleting such an account ``PATCH``es the slot back to empty
(:func:`clear_slot_body`).
"""

from __future__ import annotations

import datetime
import json
import re
import secrets
import string
from typing import Any, NamedTuple

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput

ACCOUNT_PREFIX = "bmt-"
DEFAULT_MAX_USERNAME = 16
LEDGER_ANNOTATION = "baremetal.tenancy/bmc-accounts"
LEDGER_KEY = "bmt_bmc_accounts"
DEFAULT_ROLE = "Operator"
STANDARD_ROLES = ("Administrator", "Operator", "ReadOnly")
USERNAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
# Characters every BMC we know accepts in passwords, and that need no quoting in YAML or a shell.
PASSWORD_SYMBOLS = "-_.+"
DEFAULT_PASSWORD_LENGTH = 24
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_RE = re.compile(r"^\s*(\d+)\s*([smhdw]?)\s*$")
LEDGER_FIELDS = ("username", "uri", "role", "grantee", "created", "expires", "bmc_expiry", "slot")

UTC = datetime.timezone.utc


# ------------------------------------------------------------------ names


def is_collection_username(name: Any) -> bool:
    """Whether ``name`` carries the collection's prefix (and is more than the prefix)."""
    return isinstance(name, str) and name.startswith(ACCOUNT_PREFIX) and len(name) > len(ACCOUNT_PREFIX)


def validate_username(name: Any, max_length: int = DEFAULT_MAX_USERNAME) -> str:
    """Check a user name the collection may manage; return it or raise InvalidInput."""
    where = "option username: BMC account %r" % (name,)
    if not isinstance(name, str) or not name:
        raise InvalidInput("option username", "must be a non-empty string")
    if not is_collection_username(name):
        raise InvalidInput(
            where,
            "the collection only manages accounts whose name starts with %r "
            "(accounts it did not create are never touched)" % ACCOUNT_PREFIX,
        )
    if len(name) > max_length:
        raise InvalidInput(where, "must be at most %d characters (BMCs limit user names)" % max_length)
    if not USERNAME_RE.match(name):
        raise InvalidInput(where, "must be lower-case letters, digits, '.', '_' or '-'")
    return name


def default_username(grantee: str, max_length: int = DEFAULT_MAX_USERNAME) -> str:
    """A stable user name for ``grantee`` (a tenant namespace or project): prefix + hash."""
    import hashlib

    if not grantee:
        raise InvalidInput("option username", "is required when grantee is not given")
    digest = hashlib.sha256(grantee.encode("utf-8")).hexdigest()
    return ACCOUNT_PREFIX + digest[: max(4, min(10, max_length - len(ACCOUNT_PREFIX)))]


# ------------------------------------------------------------------ time


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(UTC)


def format_time(moment: datetime.datetime | None) -> str | None:
    """``2026-05-01T12:00:00Z`` (seconds precision, UTC)."""
    if moment is None:
        return None
    return moment.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: Any, where: str = "time") -> datetime.datetime:
    """Parse an ISO 8601 date-time with a time zone (``Z`` allowed) into an aware datetime."""
    if isinstance(text, datetime.datetime):
        moment = text
    else:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(where, "must be an ISO 8601 date-time, got %r" % (text,))
        value = text.strip()
        if value.endswith("Z") or value.endswith("z"):
            value = value[:-1] + "+00:00"
        try:
            moment = datetime.datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(
                where, "must be an ISO 8601 date-time such as 2026-05-01T12:00:00Z, got %r" % (text,)
            ) from None
    if moment.tzinfo is None:
        raise InvalidInput(where, "must carry a time zone (for example a trailing Z), got %r" % (text,))
    return moment


def parse_duration(value: Any, where: str = "option expires_in") -> int:
    """Seconds from ``90``, ``"90s"``, ``"30m"``, ``"8h"``, ``"2d"`` or ``"1w"``."""
    if isinstance(value, bool):
        raise InvalidInput(where, "must be a duration such as 30m, 8h or 2d")
    if isinstance(value, int):
        seconds = value
    else:
        match = _DURATION_RE.match(str(value))
        if not match:
            raise InvalidInput(where, "must be a duration such as 90s, 30m, 8h, 2d or 1w, got %r" % (value,))
        seconds = int(match.group(1)) * _UNITS[match.group(2) or "s"]
    if seconds <= 0:
        raise InvalidInput(where, "must be longer than zero")
    return seconds


def expiry_from(
    expires_at: Any = None, expires_in: Any = None, now: datetime.datetime | None = None
) -> datetime.datetime | None:
    """The expiry moment (aware datetime) or ``None`` for an account that never expires."""
    if expires_at is not None and expires_in is not None:
        raise InvalidInput("options expires_at and expires_in", "are mutually exclusive")
    now = now or utcnow()
    if expires_in is not None:
        return now + datetime.timedelta(seconds=parse_duration(expires_in))
    if expires_at is not None:
        moment = parse_time(expires_at, "option expires_at")
        if moment <= now:
            raise InvalidInput("option expires_at", "%s is already past" % format_time(moment))
        return moment
    return None


def is_expired(expires: Any, now: datetime.datetime | None = None) -> bool:
    """Whether an expiry (text or datetime, or None) has passed."""
    if not expires:
        return False
    try:
        moment = parse_time(expires)
    except InvalidInput:
        return False
    return moment <= (now or utcnow())


# ------------------------------------------------------------------ passwords


def password_length(
    min_length: int | None = None, max_length: int | None = None, wanted: int = DEFAULT_PASSWORD_LENGTH
) -> int:
    """The length to generate, within what the AccountService advertises."""
    low = max(int(min_length or 0), 8)
    high = int(max_length) if max_length else 64
    if high < low:
        raise InvalidInput(
            "BMC AccountService", "MaxPasswordLength %s is below MinPasswordLength %s" % (max_length, min_length)
        )
    return max(low, min(wanted, high))


def generate_password(length: int = DEFAULT_PASSWORD_LENGTH, rng: Any = None) -> str:
    """A random password with upper, lower, digit and symbol characters."""
    if length < 8:
        raise InvalidInput("password length", "must be at least 8")
    rng = rng or secrets.SystemRandom()
    classes = (string.ascii_uppercase, string.ascii_lowercase, string.digits, PASSWORD_SYMBOLS)
    chars = [rng.choice(c) for c in classes]
    alphabet = string.ascii_letters + string.digits + PASSWORD_SYMBOLS
    chars.extend(rng.choice(alphabet) for unused in range(length - len(chars)))
    rng.shuffle(chars)
    # Starting with a letter keeps it out of option-parsing trouble in BMC CLIs.
    if not chars[0].isalpha():
        first = next(i for i, c in enumerate(chars) if c.isalpha())
        chars[0], chars[first] = chars[first], chars[0]
    return "".join(chars)


# ------------------------------------------------------------------ the BMC's account table


def account_id(doc: dict) -> Any:
    """Numeric-aware sort key of an account resource."""
    ident = str(doc.get("Id") or doc.get("@odata.id", "").rstrip("/").rsplit("/", 1)[-1])
    return (0, int(ident), "") if ident.isdigit() else (1, 0, ident)


def is_empty_slot(doc: dict) -> bool:
    """A fixed-slot BMC's unused slot: no user name."""
    return not (doc.get("UserName") or "")


def supports_expiration(docs: list[dict]) -> bool:
    """Whether the BMC's accounts carry ``AccountExpiration`` (ManagerAccount v1_8+)."""
    return any("AccountExpiration" in doc for doc in docs if not is_empty_slot(doc))


def find_account(docs: list[dict], username: str) -> dict | None:
    for doc in docs:
        if doc.get("UserName") == username:
            return doc
    return None


def create_plan(docs: list[dict]) -> tuple[str, list[dict]]:
    """How to create an account on a BMC whose account table is ``docs``.

    ``("post", [])`` when the collection has no empty slot, else
    ``("patch", [slot docs in Id order])``: the caller tries them in order
    (a reserved slot answers 400, a slot taken meanwhile 412/409).
    """
    empty = sorted((d for d in docs if is_empty_slot(d)), key=account_id)
    if empty:
        return "patch", empty
    return "post", []


def create_body(
    username: str,
    password: str,
    role: str,
    enabled: bool = True,
    expires: datetime.datetime | None = None,
    with_expiration: bool = False,
) -> dict:
    body = {"UserName": username, "Password": password, "RoleId": role, "Enabled": bool(enabled)}
    if with_expiration:
        body["AccountExpiration"] = format_time(expires) if expires else None
    return body


def clear_slot_body() -> dict:
    """What empties a fixed slot again (the way vendors with fixed slots delete accounts)."""
    return {"UserName": "", "Enabled": False, "RoleId": "None"}


def update_body(
    doc: dict,
    role: str | None = None,
    enabled: bool | None = None,
    expires: datetime.datetime | None = None,
    with_expiration: bool = False,
    manage_expiry: bool = False,
) -> dict:
    """The PATCH that brings ``doc`` to the wanted role/enabled/expiry; ``{}`` when nothing differs."""
    body = {}
    if role is not None and doc.get("RoleId") != role:
        body["RoleId"] = role
    if enabled is not None and bool(doc.get("Enabled")) != bool(enabled):
        body["Enabled"] = bool(enabled)
    if enabled and doc.get("Locked"):
        body["Locked"] = False
    if with_expiration and manage_expiry:
        wanted = format_time(expires) if expires else None
        current = doc.get("AccountExpiration")
        if _normal_time(current) != _normal_time(wanted):
            body["AccountExpiration"] = wanted
    return body


def _normal_time(text):
    if not text:
        return None
    try:
        return format_time(parse_time(text))
    except InvalidInput:
        return text


# ------------------------------------------------------------------ ledger


def ledger_load(text: Any) -> list[dict]:
    """Entries of a ledger (JSON list of dicts); anything unreadable is an empty ledger."""
    if isinstance(text, list):
        raw = text
    else:
        if not text:
            return []
        try:
            raw = json.loads(text)
        except (TypeError, ValueError):
            return []
    if not isinstance(raw, list):
        return []
    entries = []
    for item in raw:
        if isinstance(item, dict) and is_collection_username(item.get("username")) and item.get("uri"):
            entries.append(dict((k, item.get(k)) for k in LEDGER_FIELDS if item.get(k) is not None))
    return entries


def ledger_dump(entries: list[dict]) -> str | None:
    """Canonical JSON text of a ledger (sorted, compact), or ``None`` when empty."""
    if not entries:
        return None
    clean = [dict((k, e[k]) for k in LEDGER_FIELDS if e.get(k) is not None) for e in entries]
    clean.sort(key=lambda e: (e["username"], e["uri"]))
    return json.dumps(clean, sort_keys=True, separators=(",", ":"))


def ledger_put(entries: list[dict], entry: dict) -> list[dict]:
    """A new ledger with ``entry`` replacing any entry of the same user name."""
    out = [e for e in entries if e.get("username") != entry["username"]]
    out.append(dict((k, entry[k]) for k in LEDGER_FIELDS if entry.get(k) is not None))
    return out


def ledger_rebase(fresh: list[dict], before: list[dict], after: list[dict]) -> list[dict]:
    """Apply the change ``before -> after`` to ``fresh`` (a ledger re-read after a conflict):
    entries added or changed are put, entries removed are dropped, the rest of ``fresh`` is kept."""
    old = dict((e["username"], e) for e in before)
    new = dict((e["username"], e) for e in after)
    out = [e for e in fresh if e["username"] not in old or e["username"] in new]
    for name, entry in new.items():
        if old.get(name) != entry:
            out = ledger_put(out, entry)
    return [e for e in out if not (e["username"] in old and e["username"] not in new)]


def ledger_drop(entries: list[dict], username: str) -> list[dict]:
    return [e for e in entries if e.get("username") != username]


def ledger_entry(entries: list[dict] | None, username: str) -> dict | None:
    for entry in entries:
        if entry.get("username") == username:
            return entry
    return None


def _doc_uri(doc):
    return (doc.get("@odata.id") or "").rstrip("/")


def entry_matches(entry: dict, doc: dict) -> bool:
    """A ledger entry designates ``doc`` only when URI and user name both match."""
    return (
        bool(doc)
        and _doc_uri(doc) == (entry.get("uri") or "").rstrip("/")
        and doc.get("UserName") == entry.get("username")
    )


def _grantees(grantee):
    """``None`` (everyone), or the set of grantee names that one grantee goes by (a project's ID and name)."""
    if grantee is None:
        return None
    if isinstance(grantee, (list, tuple, set, frozenset)):
        return set(grantee)
    return set([grantee])


class Revocation(NamedTuple):
    """A recorded account still on the BMC, to remove."""

    entry: dict
    doc: dict


class Revocations(NamedTuple):
    """What :func:`revocations` decides: accounts to remove, ledger entries to drop."""

    remove: list[Revocation]
    stale: list[dict]


class ManagedAccount(NamedTuple):
    """An account the collection created, with its ledger entry (or ``None`` without a ledger)."""

    doc: dict
    entry: dict | None


def revocations(
    entries: list[dict],
    docs: list[dict],
    grantee: Any = None,
    only_expired: bool = False,
    now: datetime.datetime | None = None,
) -> Revocations:
    """Which recorded accounts to remove now.

    Returns :class:`Revocations` ``(remove, stale)``: ``remove`` is a list of
    :class:`Revocation` ``(entry, doc)`` for accounts still on the BMC (filtered by ``grantee`` when
    given - one name, or a collection of the names one grantee goes by - and by expiry with ``only_expired``); ``stale`` lists the entries
    (same filters) whose account is gone or no longer matches: they are
    dropped from the ledger, and the BMC is not touched for them.
    """
    by_uri = dict((_doc_uri(d), d) for d in docs)
    grantees = _grantees(grantee)
    to_remove, stale = [], []
    for entry in entries:
        if grantees is not None and entry.get("grantee") not in grantees:
            continue
        if only_expired and not is_expired(entry.get("expires"), now):
            doc = by_uri.get((entry.get("uri") or "").rstrip("/"))
            if not (doc and entry_matches(entry, doc) and is_expired(doc.get("AccountExpiration"), now)):
                continue
        doc = by_uri.get((entry.get("uri") or "").rstrip("/"))
        if doc is not None and entry_matches(entry, doc):
            to_remove.append(Revocation(entry, doc))
        else:
            stale.append(entry)
    return Revocations(to_remove, stale)


def collection_accounts(docs: list[dict], entries: list[dict] | None = None) -> list[ManagedAccount]:
    """The accounts the collection created: prefixed, and (with a ledger) recorded in it."""
    out = []
    for doc in sorted(docs, key=account_id):
        if not is_collection_username(doc.get("UserName")):
            continue
        entry = None
        if entries is not None:
            entry = next((e for e in entries if entry_matches(e, doc)), None)
            if entry is None:
                continue
        out.append(ManagedAccount(doc, entry))
    return out


def account_view(doc: dict, entry: dict | None = None, now: datetime.datetime | None = None) -> dict:
    """What the module returns about an account: never a password."""
    expires = doc.get("AccountExpiration") or (entry or {}).get("expires")
    view = dict(
        username=doc.get("UserName"),
        uri=_doc_uri(doc),
        role=doc.get("RoleId"),
        enabled=bool(doc.get("Enabled")),
        locked=bool(doc.get("Locked")),
        expires=_normal_time(expires),
        expired=is_expired(expires, now),
        expiry_enforced_by=("bmc" if doc.get("AccountExpiration") else ("collection" if expires else None)),
        slot=bool((entry or {}).get("slot")),
    )
    if entry is not None:
        view["grantee"] = entry.get("grantee")
        view["created"] = entry.get("created")
    return view
