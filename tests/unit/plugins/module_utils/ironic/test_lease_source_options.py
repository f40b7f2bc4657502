# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Ironic lease source's options (ironic/lease_source_options.py): the modules' OpenStack auth with its
environment fallbacks, and the source's own options checked once."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.lease_source_options import source_options


def test_defaults_and_environment_fallbacks():
    options = source_options({}, environ={"OS_CLOUD": "infra", "OS_VERIFY": "false", "OS_REGION_NAME": "r1"})
    assert options["auth"] == {"cloud": "infra", "validate_certs": False, "region_name": "r1"}
    assert (options["interval"], options["lead_time"], options["warn_ahead"], options["retry"]) == (5, 30, 3600, 60)
    assert options["nodes"] is None and options["resource_class"] is None


def test_os_auth_variables_make_the_auth_dict_and_options_win_over_the_environment():
    environ = {"OS_AUTH_URL": "http://127.0.0.1:5000/v3", "OS_USERNAME": "owner", "OS_PASSWORD": "pw", "OS_CLOUD": "x"}
    options = source_options({"cloud": "admin", "interval": "1.5", "eda_ruleset": "r"}, environ=environ)
    assert options["auth"]["cloud"] == "admin"
    assert options["auth"]["auth"] == {"auth_url": "http://127.0.0.1:5000/v3", "username": "owner", "password": "pw"}
    assert options["interval"] == 1.5


@pytest.mark.parametrize(
    "args, words",
    [
        ({"interval": 0}, "option interval"),
        ({"interval": 10, "lead_time": 5}, "option lead_time"),
        ({"lead_time": 60, "warn_ahead": 30}, "option warn_ahead"),
        ({"lead_time": "soon"}, "option lead_time"),
        ({"lead_tme": 5}, "unknown option(s) lead_tme"),
    ],
)
def test_bad_options_are_named(args, words):
    with pytest.raises(InvalidInput) as info:
        source_options(args, environ={})
    assert words in str(info.value)
