# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)


import pytest
from ansible.module_utils.errors import AnsibleFallbackNotFound

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import auth

SECRET_WORDS = ("password", "token", "secret", "api_key", "auth")


def _all_specs():
    return auth.auth_spec(auth.BACKENDS)


def test_every_auth_option_has_env_fallback():
    for name, spec in _all_specs().items():
        assert "fallback" in spec, "%s has no environment fallback" % name


@pytest.mark.parametrize("name", ["api_key", "auth"])
def test_secret_options_are_no_log(name):
    assert _all_specs()[name]["no_log"] is True


def test_no_option_that_looks_secret_is_logged():
    for name, spec in _all_specs().items():
        if any(word in name for word in SECRET_WORDS) and name not in ("auth_type",):
            assert spec.get("no_log") is True, name


def test_backend_selection():
    assert "kubeconfig" in auth.auth_spec(("metal3",))
    assert "cloud" not in auth.auth_spec(("metal3",))
    assert "cloud" in auth.auth_spec(("ironic",))
    assert "kubeconfig" not in auth.auth_spec(("ironic",))
    assert "validate_certs" in auth.auth_spec(("ironic",))


def test_auth_spec_returns_copies():
    spec = auth.auth_spec()
    spec["host"]["default"] = "x"
    assert "default" not in auth.auth_spec()["host"]


def test_openstack_auth_from_env():
    env = {
        "OS_AUTH_URL": "http://127.0.0.1:5000/v3",
        "OS_USERNAME": "u",
        "OS_PASSWORD": "p",
        "OS_PROJECT_NAME": "tenant-a",
        "OS_USER_DOMAIN_NAME": "Default",
        "OS_UNRELATED": "x",
        "OS_TOKEN": "",
    }
    assert auth.openstack_auth_from_env(env) == {
        "auth_url": "http://127.0.0.1:5000/v3",
        "username": "u",
        "password": "p",
        "project_name": "tenant-a",
        "user_domain_name": "Default",
    }


def test_openstack_auth_from_env_empty_is_not_found():
    with pytest.raises(AnsibleFallbackNotFound):
        auth.openstack_auth_from_env({"HOME": "/root"})
