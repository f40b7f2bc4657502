# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput, NotFound
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import connection as OC

CLOUDS = (
    "clouds:\n"
    "  tenant-a:\n"
    '    auth: {auth_url: "http://ks.example/v3", username: u, password: p, project_name: tenant-a}\n'
    "    region_name: R1\n"
)


@pytest.fixture
def clouds_yaml(tmp_path, monkeypatch):
    for variable in ("OS_CLOUD", "OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_CLIENT_SECURE_FILE"):
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / "clouds.yaml"
    path.write_text(CLOUDS)
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    return path


def test_a_named_cloud_is_found_through_os_client_config_file(clouds_yaml):
    region = OC._cloud_region("tenant-a", {"baremetal_api_version": OC.IRONIC_MICROVERSION})
    assert region.config["auth"]["auth_url"] == "http://ks.example/v3"
    assert region.config["auth"]["project_name"] == "tenant-a"
    assert region.region_name == "R1"
    assert region.get_api_version("baremetal") == OC.IRONIC_MICROVERSION


def test_a_cloud_missing_from_the_file_is_an_error(clouds_yaml):
    with pytest.raises(Exception) as info:
        OC._cloud_region("tenant-b", {})
    assert "tenant-b" in str(info.value)


def test_other_os_variables_are_not_read_again(clouds_yaml, monkeypatch):
    # The options already carry OS_AUTH_URL and friends (auth.py); the
    # connection must not let the environment override what they say.
    monkeypatch.setenv("OS_AUTH_URL", "http://elsewhere.example/v3")
    monkeypatch.setenv("OS_REGION_NAME", "R9")
    region = OC._cloud_region(None, {"auth": {"auth_url": "http://given.example/v3", "username": "u", "password": "p"}})
    assert region.config["auth"]["auth_url"] == "http://given.example/v3"
    assert region.region_name != "R9"


def test_no_credentials_at_all_is_one_clear_error(clouds_yaml):
    with pytest.raises(InvalidInput) as info:
        OC.openstack_connection({"cloud": None, "auth": None})
    assert "OS_CLOUD" in info.value.cause


def test_an_unreachable_cloud_is_named_with_its_endpoint(clouds_yaml, tmp_path, monkeypatch):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    path = tmp_path / "closed.yaml"
    path.write_text(
        'clouds:\n  tenant-a:\n    auth: {auth_url: "http://127.0.0.1:%d/v3", username: u, password: secret-pw,'
        " project_name: p, user_domain_name: Default, project_domain_name: Default}\n" % port
    )
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    with pytest.raises(Exception) as info:
        OC.openstack_connection({"cloud": "tenant-a", "auth": None, "api_timeout": 5})
    text = str(info.value)
    assert "OpenStack cloud tenant-a (http://127.0.0.1:%d/v3)" % port in text
    assert "secret-pw" not in text


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
