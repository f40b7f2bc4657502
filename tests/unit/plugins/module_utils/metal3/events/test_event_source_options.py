# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The event source's options (metal3/events/options.py): the modules' auth options and env fallbacks."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events.options import source_options


def test_defaults_and_no_credentials_in_an_empty_environment():
    options = source_options({}, environ={})
    assert options["auth"] == {}
    assert (options["debounce"], options["max_delay"], options["wait_for_pass"]) == (0.1, 1.0, True)
    assert options["namespaces"] is None
    assert (options["resync"], options["relay_poll"]) == (600.0, 30.0)


def test_auth_options_fall_back_to_the_k8s_auth_variables():
    environ = {
        "K8S_AUTH_HOST": "https://127.0.0.1:6443",
        "K8S_AUTH_API_KEY": "token-x",
        "K8S_AUTH_VERIFY_SSL": "no",
        "K8S_AUTH_SSL_CA_CERT": "/ca.pem",
    }
    options = source_options({}, environ=environ)
    assert options["auth"] == {
        "host": "https://127.0.0.1:6443",
        "api_key": "token-x",
        "validate_certs": False,
        "ca_cert": "/ca.pem",
    }
    # an option given wins over the environment; aliases are the modules'
    options = source_options({"host": "https://other", "verify_ssl": True}, environ=environ)
    assert (options["auth"]["host"], options["auth"]["validate_certs"]) == ("https://other", True)


def test_rulebook_values_are_converted():
    options = source_options({"namespaces": "a, b", "debounce": "0.5", "max_delay": 2, "object_events": "false"}, {})
    assert (options["namespaces"], options["debounce"], options["max_delay"], options["object_events"]) == (
        ["a", "b"],
        0.5,
        2.0,
        False,
    )


@pytest.mark.parametrize(
    "args, named",
    [
        ({"namespace": ["a"]}, "unknown option(s) namespace"),
        ({"namespaces": ["Not_A_Namespace"]}, "option namespaces"),
        ({"debounce": "soon"}, "option debounce"),
        ({"debounce": -1}, "option debounce"),
        ({"debounce": 2, "max_delay": 1}, "option max_delay"),
        ({"relay_poll": -5}, "option relay_poll"),
        ({"wait_for_pass": "perhaps"}, "option wait_for_pass"),
        ({"host_namespaces": {"a": 1}}, "option host_namespaces"),
    ],
)
def test_a_bad_option_is_one_error_naming_it(args, named):
    with pytest.raises(InvalidInput) as error:
        source_options(args, environ={})
    assert named in str(error.value)


def test_an_api_key_never_appears_in_an_error():
    with pytest.raises(InvalidInput) as error:
        source_options({"api_key": "sekret-token", "bogus": 1}, environ={})
    assert "sekret-token" not in str(error.value)


def test_a_worker_needs_the_done_file_handshake():
    options = source_options({"worker": "true"}, environ={})
    assert options["worker"] is True and options["worker_timeout"] == 60
    with pytest.raises(InvalidInput) as info:
        source_options({"worker": True, "wait_for_pass": False}, environ={})
    assert info.value.obj == "event source option worker"
