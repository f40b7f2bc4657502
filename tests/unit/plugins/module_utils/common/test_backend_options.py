# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An option meant for the other backend is one clear error on both (common/backend_options.py)."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.backend_options import (
    INSTEAD,
    ONLY_FOR,
    foreign_options,
    refuse_foreign_options,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput


@pytest.mark.parametrize("backend, other", [("metal3", "ironic"), ("ironic", "metal3")])
def test_every_option_of_the_other_backend_is_refused_by_name(backend, other):
    for option in ONLY_FOR[other]:
        with pytest.raises(InvalidInput) as info:
            refuse_foreign_options({option: "x", "name": "web-0"}, backend, ONLY_FOR, INSTEAD)
        assert info.value.obj == "option %s" % option
        assert info.value.cause.startswith("is for backend %s; with backend %s use " % (other, backend))


@pytest.mark.parametrize("backend", ["metal3", "ironic"])
def test_own_and_empty_options_pass(backend):
    refuse_foreign_options({option: "x" for option in ONLY_FOR[backend]}, backend, ONLY_FOR, INSTEAD)
    other = "ironic" if backend == "metal3" else "metal3"
    refuse_foreign_options({option: None for option in ONLY_FOR[other]}, backend, ONLY_FOR, INSTEAD)
    assert foreign_options({"traits": [], "host_selector": {}}, backend, ONLY_FOR) == []


def test_the_advice_names_the_matching_option():
    with pytest.raises(InvalidInput) as info:
        refuse_foreign_options({"user_data_secret": "s"}, "ironic", ONLY_FOR, INSTEAD)
    assert "user_data, network_data and meta_data" in info.value.cause
    with pytest.raises(InvalidInput) as info:
        refuse_foreign_options({"user_data": "#cloud-config"}, "metal3", ONLY_FOR, INSTEAD)
    assert "user_data_secret" in info.value.cause


def test_a_table_of_a_module_without_advice_names_the_backend_only():
    table = {"metal3": ("namespace", "namespaces"), "ironic": ("owner", "hosts[].nics")}
    with pytest.raises(InvalidInput) as info:
        refuse_foreign_options({"namespace": "tenant-a"}, "ironic", table)
    assert str(info.value) == "option namespace: is for backend metal3"
    with pytest.raises(InvalidInput) as info:
        refuse_foreign_options({"hosts": [{"address": "a"}, {"nics": [{"mac": "m"}]}]}, "metal3", table)
    assert str(info.value) == "option hosts[].nics: is for backend ironic"
    refuse_foreign_options({"hosts": [{"nics": []}, {"nics": None}], "namespace": ""}, "metal3", table)
    refuse_foreign_options({"hosts": [{"nics": []}], "namespaces": None}, "ironic", table)


def test_advice_by_option_or_for_any_other():
    table = {"metal3": ("namespace", "node_reuse"), "ironic": ()}
    instead = {"ironic": {"namespace": "project credentials"}}
    with pytest.raises(InvalidInput) as info:
        refuse_foreign_options({"namespace": "t"}, "ironic", table, instead)
    assert str(info.value) == "option namespace: is for backend metal3; with backend ironic use project credentials"
    with pytest.raises(InvalidInput) as info:
        refuse_foreign_options({"node_reuse": "keep"}, "ironic", table, instead)
    assert str(info.value) == "option node_reuse: is for backend metal3"
