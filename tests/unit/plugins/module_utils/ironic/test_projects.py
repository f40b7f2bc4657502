# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Keystone project references (ironic/projects.py) with a stand-in identity service."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput, NotFound
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import projects as OC


class _Identity:
    def __init__(self, found):
        self.found = found
        self.asked = []

    def find_project(self, name, ignore_missing=True):
        self.asked.append(name)
        if isinstance(self.found, Exception):
            raise self.found
        return self.found


class _Conn:
    def __init__(self, found, own=None):
        self.identity = _Identity(found)
        self.current_project_id = own


class _Project:
    id = "c" * 32


class _Forbidden(Exception):
    status_code = 403


def test_resolve_project_ids_and_names_in_keystone():
    conn = _Conn(_Project())
    assert OC.resolve_project(conn, "tenant-c") == ("c" * 32, OC.PROJECT_VERIFIED)
    assert OC.resolve_project(conn, "c" * 32) == ("c" * 32, OC.PROJECT_VERIFIED)
    assert conn.identity.asked == ["tenant-c", "c" * 32]  # IDs are looked up too
    assert OC.resolve_project(conn, None) == (None, None)


def test_resolve_project_unknown_is_an_error_naming_it():
    conn = _Conn(None)
    with pytest.raises(NotFound) as info:
        OC.resolve_project(conn, "a" * 32)
    assert info.value.message == "project %s: does not exist in Keystone" % ("a" * 32)
    with pytest.raises(NotFound):
        OC.resolve_project(conn, "tenant-x")
    assert OC.resolve_project(conn, "a" * 32, must_exist=False) == ("a" * 32, OC.PROJECT_UNKNOWN)


def test_resolve_project_forbidden_says_how_to_skip():
    conn = _Conn(_Forbidden("You are not authorized to perform the requested action"))
    with pytest.raises(InvalidInput) as info:
        OC.resolve_project(conn, "a" * 32)
    assert info.value.obj == "project %s" % ("a" * 32) and "verify_projects=false" in info.value.cause


def test_resolve_project_unverified_ids_only_and_own_project():
    conn = _Conn(_Forbidden("no"), own="d" * 32)
    assert OC.resolve_project(conn, "a" * 32, verify=False) == ("a" * 32, OC.PROJECT_SKIPPED)
    with pytest.raises(InvalidInput) as info:
        OC.resolve_project(conn, "tenant-x", verify=False)
    assert "give the project ID" in info.value.cause
    assert OC.resolve_project(conn, "d" * 32) == ("d" * 32, OC.PROJECT_VERIFIED)
    assert conn.identity.asked == []
    with pytest.raises(InvalidInput):
        OC.resolve_project(conn, "  ")


class _Access:
    project_id = "p" * 32
    project_name = "tenant-a"


class _Auth:
    def __init__(self, fail=False):
        self.fail = fail

    def get_access(self, session):
        if self.fail:
            raise RuntimeError("system scope")
        return _Access()


class _Session:
    def __init__(self, fail=False):
        self.auth = _Auth(fail)


class _TokenConn:
    def __init__(self, fail=False):
        self.session = _Session(fail)


def test_token_project_names_the_caller_s_project_or_none():
    assert OC.token_project(_TokenConn()) == ("p" * 32, "tenant-a")
    assert OC.token_project(_TokenConn()).project_name == "tenant-a"
    assert OC.token_project(_TokenConn(fail=True)) == (None, None)
