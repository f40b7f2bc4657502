# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_register's runner (``redfish.registration.run_host_register``) on input it refuses before any I/O:
a BMC address whose scheme is no Redfish driver of baremetal-operator fails that host with one error naming the
host and the scheme, no BMC is read and the backend is never reached."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import BackendError
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration

SYS = "/redfish/v1/Systems/7a1b"


class Module:
    """What run_host_register uses of the module (common.base)."""

    def __init__(self, hosts, **params):
        self.params = dict(hosts=hosts, rules=None, bmc_timeout=5, workers=2, allow_partial=True)
        self.params.update(params)
        self.result = dict(changed=False)
        self.warnings = []

    def changed(self, value=True):
        self.result["changed"] = self.result["changed"] or bool(value)

    def set_diff(self, before, after):
        self.result["diff"] = dict(before=before, after=after)

    def warn(self, message):
        self.warnings.append(message)


def no_backend():
    raise AssertionError("the backend was reached")


def host(address, name=None):
    entry = dict(address=address, username="root", password="calvin-secret")
    if name:
        entry["name"] = name
    return entry


BAD = [
    ("redfish-virtualmedium+http://127.0.0.1:9" + SYS, "redfish-virtualmedium+http"),
    ("ipmi://127.0.0.1:9", "ipmi"),
    ("virtualmedia://127.0.0.1:9" + SYS, "virtualmedia"),
    ("ilo4-redfish://127.0.0.1:9" + SYS, "ilo4-redfish"),
]


@pytest.mark.parametrize("address,scheme", BAD)
def test_an_unknown_scheme_fails_its_host_before_any_io(address, scheme):
    mod = Module([host(address, "web-1")])
    registration.run_host_register(mod, no_backend)
    (failed,) = mod.result["failed_hosts"]
    assert failed["name"] == "web-1" and failed["index"] == 0 and failed["error_kind"] == "InvalidInput"
    assert failed["error"].startswith("BMC #0 (web-1): BMC address: scheme %r is not a Redfish scheme" % scheme)
    assert "redfish-virtualmedia" in failed["error"]
    assert mod.result["changed"] is False and mod.result["registered"] == []
    assert mod.result["hosts"][0]["status"] == "failed" and "uuid" not in mod.result["hosts"][0]
    assert mod.result["diff"] == dict(before={}, after={})
    assert mod.warnings == ["host_register: " + failed["error"]]
    assert "calvin-secret" not in repr(mod.result)


def test_each_bad_host_gets_its_own_error_and_the_run_fails_when_partial_is_refused():
    mod = Module([host(address) for address, _scheme in BAD], allow_partial=False)
    with pytest.raises(BackendError) as err:
        registration.run_host_register(mod, no_backend)
    assert [f["index"] for f in mod.result["failed_hosts"]] == list(range(len(BAD)))
    for failed, (_address, scheme) in zip(mod.result["failed_hosts"], BAD):
        assert failed["error"].startswith("BMC #%d: BMC address: scheme %r" % (failed["index"], scheme))
    assert "%d of %d BMC(s) failed" % (len(BAD), len(BAD)) in err.value.message
    assert mod.result["changed"] is False
