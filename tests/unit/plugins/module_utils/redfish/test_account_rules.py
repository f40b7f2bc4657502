# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import datetime
import json
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import account_rules as ba

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
ACCOUNTS = "/redfish/v1/AccountService/Accounts/"


def acct(ident, name, role="Operator", enabled=True, expiration="absent", **extra):
    doc = {
        "@odata.id": ACCOUNTS + str(ident),
        "Id": str(ident),
        "UserName": name,
        "RoleId": role,
        "Enabled": enabled,
        "Locked": False,
    }
    if expiration != "absent":
        doc["AccountExpiration"] = expiration
    doc.update(extra)
    return doc


# ------------------------------------------------------------------ names


@pytest.mark.parametrize("name", ["bmt-a", "bmt-3f1a9c0d2e", "bmt-ops.team_1", "bmt-" + "x" * 12])
def test_valid_usernames(name):
    assert ba.validate_username(name) == name


@pytest.mark.parametrize(
    "name,fragment",
    [
        ("root", "only manages accounts whose name starts with 'bmt-'"),
        ("bmt-", "only manages accounts"),
        ("BMT-x", "only manages accounts"),
        ("bmt-" + "x" * 13, "at most 16"),
        ("bmt-UPPER", "lower-case"),
        ("bmt-a b", "lower-case"),
        ("", "non-empty"),
        (None, "non-empty"),
    ],
)
def test_invalid_usernames(name, fragment):
    with pytest.raises(InvalidInput) as err:
        ba.validate_username(name)
    assert fragment in err.value.message


def test_username_length_follows_the_bmc_limit():
    assert ba.validate_username("bmt-" + "x" * 20, max_length=32)


@given(st.text(min_size=1, max_size=60))
def test_default_username_is_stable_valid_and_prefixed(grantee):
    name = ba.default_username(grantee)
    assert name == ba.default_username(grantee)
    assert ba.validate_username(name) == name
    assert len(name) <= ba.DEFAULT_MAX_USERNAME


def test_default_username_differs_per_grantee_and_needs_one():
    assert ba.default_username("tenant-a") != ba.default_username("tenant-b")
    with pytest.raises(InvalidInput):
        ba.default_username(None)


def test_prefix_check():
    assert ba.is_collection_username("bmt-x")
    for name in ("bmt-", "admin", "", None, 5, "xbmt-a"):
        assert not ba.is_collection_username(name)


# ------------------------------------------------------------------ time


@pytest.mark.parametrize(
    "value,seconds",
    [
        (90, 90),
        ("90", 90),
        ("90s", 90),
        ("30m", 1800),
        ("8h", 28800),
        ("2d", 172800),
        ("1w", 604800),
        (" 5 m ", 300),
    ],
)
def test_durations(value, seconds):
    assert ba.parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["", "5y", "-5m", "m", "1.5h", True, 0, "0s"])
def test_bad_durations(value):
    with pytest.raises(InvalidInput):
        ba.parse_duration(value)


def test_expiry_from():
    assert ba.expiry_from(now=NOW) is None
    assert ba.expiry_from(expires_in="2h", now=NOW) == NOW + datetime.timedelta(hours=2)
    assert ba.expiry_from(expires_at="2026-05-02T00:00:00Z", now=NOW) == datetime.datetime(2026, 5, 2, tzinfo=UTC)
    assert ba.expiry_from(expires_at="2026-05-01T14:00:00+01:00", now=NOW) == NOW + datetime.timedelta(hours=1)
    with pytest.raises(InvalidInput) as err:
        ba.expiry_from(expires_at="2026-05-01T11:00:00Z", now=NOW)
    assert "already past" in err.value.message
    with pytest.raises(InvalidInput):
        ba.expiry_from(expires_at="2026-05-02T00:00:00", now=NOW)  # no time zone
    with pytest.raises(InvalidInput):
        ba.expiry_from(expires_at="tomorrow", now=NOW)
    with pytest.raises(InvalidInput):
        ba.expiry_from(expires_at="2026-05-02T00:00:00Z", expires_in="1h", now=NOW)


def test_format_and_expired():
    assert ba.format_time(NOW.replace(microsecond=123)) == "2026-05-01T12:00:00Z"
    assert ba.format_time(None) is None
    assert ba.is_expired("2026-05-01T11:59:59Z", NOW)
    assert ba.is_expired("2026-05-01T12:00:00Z", NOW)
    assert not ba.is_expired("2026-05-01T12:00:01Z", NOW)
    assert not ba.is_expired(None, NOW)
    assert not ba.is_expired("garbage", NOW)
    assert ba.is_expired(NOW - datetime.timedelta(seconds=1), NOW)


# ------------------------------------------------------------------ passwords


@settings(max_examples=200)
@given(length=st.integers(min_value=8, max_value=64), seed=st.integers())
def test_generated_passwords(length, seed):
    pw = ba.generate_password(length, random.Random(seed))
    assert len(pw) == length
    assert any(c.isupper() for c in pw) and any(c.islower() for c in pw) and any(c.isdigit() for c in pw)
    assert any(c in ba.PASSWORD_SYMBOLS for c in pw)
    assert pw[0].isalpha()
    assert set(pw) <= set(string.ascii_letters + string.digits + ba.PASSWORD_SYMBOLS)


def test_passwords_are_random():
    assert len(set(ba.generate_password() for unused in range(50))) == 50
    with pytest.raises(InvalidInput):
        ba.generate_password(7)


@pytest.mark.parametrize(
    "low,high,want", [(None, None, 24), (8, 20, 20), (30, 64, 30), (None, 12, 12), (8, 8, 8), (1, None, 24)]
)
def test_password_length_honours_the_account_service(low, high, want):
    assert ba.password_length(low, high) == want


def test_password_length_rejects_impossible_policy():
    with pytest.raises(InvalidInput):
        ba.password_length(20, 10)


# ------------------------------------------------------------------ account table


def test_create_plan_posts_when_no_slot_is_empty():
    docs = [acct(1, "admin", "Administrator"), acct(2, "ops")]
    assert ba.create_plan(docs) == ("post", [])


def test_create_plan_patches_empty_slots_in_numeric_order():
    docs = [acct(10, ""), acct(2, "admin"), acct(3, "", enabled=False), acct(1, "", role="None")]
    how, slots = ba.create_plan(docs)
    assert how == "patch"
    assert [s["Id"] for s in slots] == ["1", "3", "10"]


def test_account_id_sorts_non_numeric_after_numeric():
    docs = [{"Id": "b"}, {"Id": "10"}, {"@odata.id": ACCOUNTS + "2"}, {"Id": "a"}]
    assert [ba.account_id(d)[1:] for d in sorted(docs, key=ba.account_id)] == [(2, ""), (10, ""), (0, "a"), (0, "b")]


def test_supports_expiration_ignores_empty_slots():
    assert ba.supports_expiration([acct(1, "admin", expiration=None)])
    assert not ba.supports_expiration([acct(1, "admin")])
    assert not ba.supports_expiration([acct(1, "", expiration=None), acct(2, "admin")])


def test_create_body():
    expires = NOW + datetime.timedelta(hours=1)
    assert ba.create_body("bmt-a", "pw", "Operator") == {
        "UserName": "bmt-a",
        "Password": "pw",
        "RoleId": "Operator",
        "Enabled": True,
    }
    body = ba.create_body("bmt-a", "pw", "ReadOnly", expires=expires, with_expiration=True)
    assert body["AccountExpiration"] == "2026-05-01T13:00:00Z"
    assert ba.create_body("bmt-a", "pw", "ReadOnly", with_expiration=True)["AccountExpiration"] is None
    assert "AccountExpiration" not in ba.create_body("bmt-a", "pw", "ReadOnly", expires=expires)


def test_clear_slot_body_empties_and_disables():
    assert ba.clear_slot_body() == {"UserName": "", "Enabled": False, "RoleId": "None"}


def test_update_body_is_minimal():
    doc = acct(5, "bmt-a", expiration="2026-05-01T13:00:00+00:00")
    assert ba.update_body(doc, role="Operator", enabled=True) == {}
    assert ba.update_body(doc, role="ReadOnly") == {"RoleId": "ReadOnly"}
    assert ba.update_body(doc, enabled=False) == {"Enabled": False}
    same = NOW + datetime.timedelta(hours=1)
    assert ba.update_body(doc, expires=same, with_expiration=True, manage_expiry=True) == {}
    later = NOW + datetime.timedelta(hours=2)
    assert ba.update_body(doc, expires=later, with_expiration=True, manage_expiry=True) == {
        "AccountExpiration": "2026-05-01T14:00:00Z"
    }
    # Expiry is not touched unless asked, nor on BMCs without the property.
    assert ba.update_body(doc, expires=later, with_expiration=True) == {}
    assert ba.update_body(doc, expires=later, with_expiration=False, manage_expiry=True) == {}
    locked = dict(doc, Locked=True)
    assert ba.update_body(locked, enabled=True) == {"Locked": False}


# ------------------------------------------------------------------ ledger


def entry(name, ident, grantee="tenant-a", expires=None, **extra):
    out = {
        "username": name,
        "uri": ACCOUNTS + str(ident),
        "role": "Operator",
        "grantee": grantee,
        "created": "2026-05-01T11:00:00Z",
    }
    if expires:
        out["expires"] = expires
    out.update(extra)
    return out


def test_ledger_round_trip_is_canonical():
    entries = [entry("bmt-b", 3), entry("bmt-a", 2, slot=True, bmc_expiry=False)]
    text = ba.ledger_dump(entries)
    assert ba.ledger_load(text) == sorted(entries, key=lambda e: e["username"])
    assert ba.ledger_dump(list(reversed(entries))) == text
    assert ba.ledger_dump([]) is None


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "{",
        "{}",
        "[1, 2]",
        json.dumps([{"username": "root", "uri": "/x"}]),
        json.dumps([{"username": "bmt-a"}]),
    ],
)
def test_unreadable_or_foreign_ledgers_are_empty(text):
    assert ba.ledger_load(text) == []


def test_ledger_drops_unknown_fields():
    assert ba.ledger_load([dict(entry("bmt-a", 1), password="nope")]) == [entry("bmt-a", 1)]


def test_ledger_put_replaces_and_drop_removes():
    entries = ba.ledger_put([entry("bmt-a", 1)], entry("bmt-a", 7))
    assert entries == [entry("bmt-a", 7)]
    entries = ba.ledger_put(entries, entry("bmt-b", 8))
    assert [e["username"] for e in entries] == ["bmt-a", "bmt-b"]
    assert ba.ledger_drop(entries, "bmt-a") == [entry("bmt-b", 8)]
    assert ba.ledger_entry(entries, "bmt-b") == entry("bmt-b", 8)
    assert ba.ledger_entry(entries, "bmt-c") is None


def test_an_entry_designates_an_account_only_by_uri_and_name():
    assert ba.entry_matches(entry("bmt-a", 3), acct(3, "bmt-a"))
    assert ba.entry_matches(entry("bmt-a", 3), dict(acct(3, "bmt-a"), **{"@odata.id": ACCOUNTS + "3/"}))
    assert not ba.entry_matches(entry("bmt-a", 3), acct(4, "bmt-a"))
    assert not ba.entry_matches(entry("bmt-a", 3), acct(3, "bmt-b"))
    assert not ba.entry_matches(entry("bmt-a", 3), None)


def test_revocations_by_grantee():
    entries = [entry("bmt-a", 3), entry("bmt-b", 4, grantee="tenant-b"), entry("bmt-gone", 9)]
    docs = [acct(1, "admin", "Administrator"), acct(3, "bmt-a"), acct(4, "bmt-b")]
    remove, stale = ba.revocations(entries, docs, grantee="tenant-a")
    assert [(e["username"], d["Id"]) for e, d in remove] == [("bmt-a", "3")]
    assert [e["username"] for e in stale] == ["bmt-gone"]
    remove, stale = ba.revocations(entries, docs)
    assert sorted(e["username"] for e, unused in remove) == ["bmt-a", "bmt-b"]


def test_revocations_never_touch_a_replaced_account():
    """Someone deleted our account and made their own in the same slot: left alone."""
    entries = [entry("bmt-a", 3)]
    for doc in (acct(3, "ops-team"), acct(3, "bmt-other"), acct(3, "")):
        remove, stale = ba.revocations(entries, [doc])
        assert remove == []
        assert stale == entries


def test_revocations_only_expired():
    entries = [
        entry("bmt-old", 3, expires="2026-05-01T11:00:00Z"),
        entry("bmt-new", 4, expires="2026-05-02T00:00:00Z"),
        entry("bmt-bmcexp", 5),
        entry("bmt-never", 6),
    ]
    docs = [
        acct(3, "bmt-old"),
        acct(4, "bmt-new"),
        acct(5, "bmt-bmcexp", expiration="2026-05-01T11:30:00Z"),
        acct(6, "bmt-never", expiration=None),
    ]
    remove, stale = ba.revocations(entries, docs, only_expired=True, now=NOW)
    assert sorted(e["username"] for e, unused in remove) == ["bmt-bmcexp", "bmt-old"]
    assert stale == []


def test_collection_accounts():
    docs = [acct(1, "admin", "Administrator"), acct(2, "bmt-a"), acct(3, "bmt-manual"), acct(4, ""), acct(5, "ops")]
    assert [d["UserName"] for d, e in ba.collection_accounts(docs)] == ["bmt-a", "bmt-manual"]
    ledger = [entry("bmt-a", 2)]
    out = ba.collection_accounts(docs, ledger)
    assert [(d["UserName"], e["grantee"]) for d, e in out] == [("bmt-a", "tenant-a")]
    assert ba.collection_accounts(docs, []) == []


@given(
    st.lists(
        st.tuples(st.integers(1, 12), st.sampled_from(["", "admin", "ops", "bmt-a", "bmt-b", "bmt-c"])),
        max_size=12,
        unique_by=lambda t: t[0],
    ),
    st.lists(
        st.tuples(
            st.sampled_from(["bmt-a", "bmt-b", "bmt-c"]), st.integers(1, 12), st.sampled_from(["tenant-a", "tenant-b"])
        ),
        max_size=6,
        unique_by=lambda t: t[0],
    ),
    st.sampled_from([None, "tenant-a", "tenant-b"]),
    st.booleans(),
)
def test_property_never_revokes_an_account_the_collection_did_not_create(docs, ledger, grantee, only_expired):
    docs = [acct(i, name, expiration="2026-05-01T00:00:00Z") for i, name in docs]
    entries = [entry(name, ident, grantee=g, expires="2026-04-01T00:00:00Z") for name, ident, g in ledger]
    remove, stale = ba.revocations(entries, docs, grantee, only_expired, now=NOW)
    for e, doc in remove:
        assert ba.is_collection_username(doc["UserName"])
        assert ba.entry_matches(e, doc)
        assert grantee is None or e["grantee"] == grantee
    assert not set(e["username"] for e, unused in remove) & set(e["username"] for e in stale)


def test_account_view_never_has_a_password():
    doc = acct(3, "bmt-a", expiration="2026-05-01T13:00:00Z", Password=None)
    view = ba.account_view(doc, entry("bmt-a", 3), NOW)
    assert "password" not in json.dumps(view).lower()
    assert view == {
        "username": "bmt-a",
        "uri": ACCOUNTS + "3",
        "role": "Operator",
        "enabled": True,
        "locked": False,
        "expires": "2026-05-01T13:00:00Z",
        "expired": False,
        "expiry_enforced_by": "bmc",
        "slot": False,
        "grantee": "tenant-a",
        "created": "2026-05-01T11:00:00Z",
    }
    ledger_only = ba.account_view(acct(4, "bmt-b"), entry("bmt-b", 4, expires="2026-05-01T11:00:00Z", slot=True), NOW)
    assert ledger_only["expiry_enforced_by"] == "collection"
    assert ledger_only["expired"] is True
    assert ledger_only["slot"] is True
    assert ba.account_view(acct(5, "bmt-c"))["expiry_enforced_by"] is None


def test_ledger_rebase_keeps_concurrent_changes():
    before = [entry("bmt-a", 1), entry("bmt-b", 2)]
    after = [entry("bmt-a", 1, role="ReadOnly"), entry("bmt-c", 3)]  # changed a, dropped b, added c
    fresh = [entry("bmt-a", 1), entry("bmt-b", 2), entry("bmt-d", 4)]  # someone added d meanwhile
    out = ba.ledger_rebase(fresh, before, after)
    assert sorted(e["username"] for e in out) == ["bmt-a", "bmt-c", "bmt-d"]
    assert ba.ledger_entry(out, "bmt-a")["role"] == "ReadOnly"
    assert ba.ledger_rebase(fresh, before, before) == fresh
    assert ba.ledger_rebase([], [], after) == after
