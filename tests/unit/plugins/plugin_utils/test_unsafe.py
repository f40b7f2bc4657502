# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import pytest
from ansible.template import Templar, is_trusted_as_template, trust_as_template

from ansible_collections.baremetal.tenancy.plugins.plugin_utils.unsafe import HAS_DATA_TAGGING, make_unsafe

TEMPLATE = "{{ lookup('ansible.builtin.env', 'HOME') }}"


def strings(value):
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key, *strings(item)]]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return [value] if isinstance(value, str) else []


def trusted_record():
    return {
        "name": trust_as_template("web"),
        "annotations": {trust_as_template("k"): trust_as_template(TEMPLATE)},
        "addresses": [{"type": "InternalIP", "address": trust_as_template("192.0.2.1")}],
        "ready": True,
        "online": None,
        "count": 3,
    }


def test_this_core_has_data_tagging():
    assert HAS_DATA_TAGGING  # requires_ansible >= 2.19


@pytest.mark.parametrize("data_tagging", [True, False])
def test_make_unsafe_removes_trust_everywhere_and_keeps_values(data_tagging):
    record = trusted_record()
    assert any(is_trusted_as_template(s) for s in strings(record))
    unsafe = make_unsafe(record, data_tagging)
    assert unsafe == record
    assert not any(is_trusted_as_template(s) for s in strings(unsafe))
    # the input is left as it was
    assert is_trusted_as_template(record["name"]) and is_trusted_as_template(record["addresses"][0]["address"])
    assert all(is_trusted_as_template(k) and is_trusted_as_template(v) for k, v in record["annotations"].items())


def test_an_unsafe_value_is_never_templated():
    unsafe = make_unsafe([TEMPLATE])[0]
    assert Templar(variables={"x": unsafe}).template(trust_as_template("{{ x }}")) == TEMPLATE
    assert Templar().template(unsafe) == TEMPLATE
