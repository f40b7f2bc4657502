# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_register: options of one backend given with the other fail with one message naming the option,
before any BMC is read or any client is built (so nothing changes)."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration
from ansible_collections.baremetal.tenancy.plugins.modules import host_register

HOSTS = [{"address": "redfish+http://127.0.0.1:9/redfish/v1/Systems/1", "username": "root", "password": "calvin-pw"}]


@pytest.fixture(autouse=True)
def no_io(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a client was built or a BMC read")

    monkeypatch.setattr(host_register, "kube_api_client", refuse)
    monkeypatch.setattr(host_register, "openstack_connection", refuse)
    monkeypatch.setattr(registration, "read_bmc", refuse)


def failure(args, capsys):
    with patch_module_args(dict({"hosts": HOSTS}, **args)):
        with pytest.raises(SystemExit) as exit_info:
            host_register.HostRegisterModule()()
    out = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 1 and out["failed"] is True and out.get("changed", False) is False
    assert "calvin-pw" not in json.dumps(out)
    return out["msg"]


@pytest.mark.parametrize(
    "args,message",
    [
        ({"backend": "ironic", "inspection": "redfish"}, "option inspection: is for backend metal3"),
        ({"backend": "ironic", "inspection": "agent"}, "option inspection: is for backend metal3"),
        (
            {"backend": "ironic", "host_claim_namespaces": {"matches": "t-.*"}},
            "option host_claim_namespaces: is for backend metal3",
        ),
        ({"backend": "ironic", "namespace": "metal3"}, "option namespace: is for backend metal3"),
        ({"backend": "metal3", "namespace": "m", "owner": "infra"}, "option owner: is for backend ironic"),
        (
            {"backend": "metal3", "namespace": "m", "interfaces": {"boot_interface": "pxe"}},
            "option interfaces: is for backend ironic",
        ),
        (
            {
                "backend": "metal3",
                "namespace": "m",
                "hosts": [dict(HOSTS[0], nics=[{"mac": "52:54:00:00:00:01", "switch_id": "s", "port_id": "p"}])],
            },
            "option hosts[].nics: is for backend ironic",
        ),
        ({"backend": "metal3", "namespace": "m", "inspection": "bios"}, "value of inspection must be one of"),
    ],
)
def test_an_option_of_the_other_backend_is_refused_before_any_io(args, message, capsys):
    assert message in failure(args, capsys)
