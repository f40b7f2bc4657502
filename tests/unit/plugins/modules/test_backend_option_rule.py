# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every module that takes ``backend`` refuses an option meant for the other backend the same way
(common/backend_options.py through TenancyModule), before ``run`` reads or writes anything."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.modules import (
    bmc_account,
    host_claim,
    host_claim_info,
    host_register,
    host_release,
    host_share,
)

HOSTS = [{"address": "redfish+http://127.0.0.1:9/redfish/v1/Systems/1", "username": "root", "password": "pw"}]
MODULES = {
    "bmc_account": bmc_account.BmcAccountModule,
    "host_claim": host_claim.HostClaimModule,
    "host_claim_info": host_claim_info.HostClaimInfoModule,
    "host_register": host_register.HostRegisterModule,
    "host_release": host_release.HostReleaseModule,
    "host_share": host_share.HostShareModule,
}
CASES = [
    (
        "bmc_account",
        {"backend": "ironic", "host_name": "n1", "namespace": "metal3"},
        "option namespace: is for backend metal3",
    ),
    (
        "host_claim",
        {"backend": "ironic", "name": "web", "namespace": "t"},
        "option namespace: is for backend metal3; with backend ironic use ",
    ),
    (
        "host_claim",
        {"name": "web", "namespace": "t", "traits": ["CUSTOM_X"]},
        "option traits: is for backend ironic; with backend metal3 use ",
    ),
    (
        "host_claim_info",
        {"backend": "ironic", "namespace": "t"},
        "option namespace: is for backend metal3; with backend ironic use credentials",
    ),
    (
        "host_claim_info",
        {"backend": "ironic", "namespaces": ["t"]},
        "option namespaces: is for backend metal3; with backend ironic use credentials",
    ),
    (
        "host_release",
        {"backend": "ironic", "name": "web", "namespace": "t"},
        "option namespace: is for backend metal3; with backend ironic use credentials",
    ),
    (
        "host_release",
        {"backend": "ironic", "name": "web", "node_reuse": "keep"},
        "option node_reuse: is for backend metal3",
    ),
    (
        "host_register",
        {"backend": "ironic", "hosts": HOSTS, "inspection": "agent"},
        "option inspection: is for backend metal3",
    ),
    (
        "host_register",
        {"backend": "metal3", "hosts": HOSTS, "namespace": "m", "owner": "p"},
        "option owner: is for backend ironic",
    ),
    (
        "host_share",
        {"backend": "ironic", "hosts": [], "namespace_share": {"all_tenants": True}},
        "option namespace_share: is for backend metal3",
    ),
]


@pytest.fixture(autouse=True)
def no_run(monkeypatch):
    def refuse(self):
        raise AssertionError("run() was reached")

    for module_class in MODULES.values():
        monkeypatch.setattr(module_class, "run", refuse)


@pytest.mark.parametrize("name, args, message", CASES)
def test_an_option_of_the_other_backend_is_one_error_before_run(name, args, message, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            MODULES[name]()()
    out = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 1 and out["failed"] is True and out["changed"] is False
    assert out["msg"].startswith(message), out["msg"]
    assert out["error_type"] == "InvalidInput"


def test_every_module_with_a_backend_option_has_a_table():
    """A module that takes ``backend`` declares which options belong to one backend only."""
    for module_class in MODULES.values():
        assert len(module_class.backends) > 1
        assert set(module_class.backend_options) == {"metal3", "ironic"}
        for options in module_class.backend_options.values():
            for option in options:
                assert option.split("[]")[0] in module_class.argument_spec, option
    assert TenancyModule.backend_options == {}
