# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
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
    assert "Keystone at http://127.0.0.1:%d/v3" % port in text and text.endswith(
        "cannot be reached: [Errno 111] Connection refused"
    ), text
    assert info.value.details == {"service_unreachable": True}
    assert "secret-pw" not in text
