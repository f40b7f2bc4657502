# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What each module ships: the module_utils files ansible packs into its payload.

A module of one backend ships nothing of the other backend's package (``host_bind`` no ``ironic/``,
``host_lease`` no ``metal3/``), and ``redfish/`` imports neither.

Tenant modules (``host_claim``, ``host_claim_info``, ``host_release``) run
with a tenant's credentials on the tenant's machine: they must not carry the
binder, the code that reads and writes BMC accounts and BMC credential
Secrets, or the Redfish client.  The payload is computed by ansible-core's
own AnsiballZ dependency finder (``module_common.recursive_finder``), so the
list is the one ansible really sends, imports inside functions included.
"""

from __future__ import annotations

import datetime
import io
import pathlib
import zipfile

import pytest
from ansible.executor import module_common

try:
    from ansible._internal._ansiballz import _builder
except ImportError:  # pragma: no cover - ansible-core before 2.19
    _builder = None

COLLECTION = "ansible_collections.baremetal.tenancy"
ROOT = pathlib.Path(__file__).resolve().parents[3]
UTILS_PREFIX = "ansible_collections/baremetal/tenancy/plugins/module_utils/"

#: what each tenant module really uses (the test cannot pass by seeing nothing)
USED = {
    "host_claim": {
        "common/base.py",
        "common/auth.py",
        "common/errors.py",
        "metal3/claim/tenant.py",
        "metal3/client.py",
        "metal3/connection.py",
        "ironic/claims.py",
        "ironic/client.py",
        "ironic/model.py",
        "ironic/configdrive.py",
    },
    "host_claim_info": {
        "common/base.py",
        "common/errors.py",
        "metal3/claim/tenant.py",
        "metal3/client.py",
        "metal3/claim/view.py",
        "ironic/claims.py",
        "ironic/client.py",
    },
    "host_release": {
        "common/base.py",
        "common/errors.py",
        "metal3/claim/tenant.py",
        "metal3/client.py",
        "metal3/claim/view.py",
        "ironic/claims.py",
        "ironic/client.py",
    },
}

#: the binder and its pure parts: one reconcile pass, the binding algorithm,
#: the claim<->host sync and BMC-data detection (which read BMC credentials to withhold them), the
#: sharing policy
BINDER = (
    "metal3/binder/",
    "metal3/binder/planner.py",
    "metal3/claim/identity.py",
    "metal3/claim/downward.py",
    "metal3/claim/upward.py",
    "metal3/claim/metadata_import.py",
    "metal3/claim/bmc_data.py",
    "metal3/share/sharing_policy.py",
)
#: BMC accounts (rules, ledgers, the runner that reads BMC credential Secrets)
#: and every Redfish file (sushy I/O, classification, registration)
BMC_AND_REDFISH = ("redfish/", "metal3/bmc_ledger.py", "ironic/bmc_ledger.py")
FORBIDDEN = BINDER + BMC_AND_REDFISH


def payload(module):
    """The module_utils files (relative to ``plugins/module_utils/``) in the AnsiballZ payload of ``module``."""
    data = (ROOT / "plugins" / "modules" / (module + ".py")).read_bytes()
    extra = () if _builder is None else (_builder.ExtensionManager(),)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        module_common.recursive_finder(
            module,
            "%s.plugins.modules.%s" % (COLLECTION, module),
            data,
            zf,
            datetime.datetime.now(datetime.timezone.utc),
            *extra,
        )
        names = zf.namelist()
    return sorted(
        name[len(UTILS_PREFIX) :]
        for name in names
        if name.startswith(UTILS_PREFIX) and not name.endswith("__init__.py")
    )


def forbidden_in(files):
    return [name for name in files if name.startswith(FORBIDDEN)]


@pytest.mark.parametrize("module", sorted(USED))
def test_tenant_module_ships_what_it_uses(module):
    shipped = set(payload(module))
    assert USED[module] <= shipped, "missing from the payload of %s: %s" % (module, sorted(USED[module] - shipped))


@pytest.mark.parametrize("module", sorted(USED))
def test_tenant_module_ships_no_binder_bmc_account_or_redfish_code(module):
    shipped = payload(module)
    assert not forbidden_in(shipped), "%s ships %s (whole payload: %s)" % (module, forbidden_in(shipped), shipped)


def test_the_forbidden_list_catches_what_an_owner_module_ships():
    """``host_bind`` ships the binder and BMC-account code: the rule must see it."""
    shipped = payload("host_bind")
    assert "metal3/binder/run.py" in shipped or any(name.startswith("metal3/binder/") for name in shipped)
    assert "redfish/accounts.py" in forbidden_in(shipped)


#: modules of one backend (no ``backend`` option): the other backend's package must not travel with them
ONE_BACKEND = {
    "host_bind": "metal3",
    "host_bind_worker": "metal3",
    "tenant_check": None,  # neither backend
    "host_lease": "ironic",
    "host_offer": "ironic",
    "host_offer_claim": "ironic",
    "host_offer_info": "ironic",
    "host_offer_expire": "ironic",
    "tenant_network": "ironic",
    "tenancy_posture": "metal3",
    "gitops_commit": None,  # neither backend
}
BACKENDS = ("metal3/", "ironic/")


def test_every_module_without_a_backend_option_is_classified():
    """A new single-backend module must say which backend it is, or the next test would not look at it."""
    modules = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
    takes_backend = {
        m for m in modules if "baremetal.tenancy.backend" in (ROOT / "plugins" / "modules" / (m + ".py")).read_text()
    }
    assert sorted(set(modules) - takes_backend) == sorted(ONE_BACKEND)


@pytest.mark.parametrize("module", sorted(ONE_BACKEND))
def test_a_one_backend_module_ships_nothing_of_the_other_backend(module):
    shipped = payload(module)
    mine = ONE_BACKEND[module]
    others = tuple(b for b in BACKENDS if mine is None or not b.startswith(mine))
    foreign = [name for name in shipped if name.startswith(others)]
    assert not foreign, "%s (%s) ships %s" % (module, mine or "no backend", foreign)
    if mine is not None:  # the test sees the payload: the module's own backend travels with it
        assert any(name.startswith(mine + "/") for name in shipped), shipped


def test_the_bmc_account_ledgers_live_with_their_backends():
    """redfish/ is shared by both backends: it imports neither (each ledger is kept by its backend's package)."""
    for path in sorted((ROOT / "plugins" / "module_utils" / "redfish").glob("*.py")):
        text = path.read_text()
        for backend in ("metal3", "ironic"):
            assert "module_utils.%s" % backend not in text, "%s imports %s" % (path.name, backend)
    assert "redfish/accounts.py" in payload("host_lease") and "ironic/bmc_ledger.py" in payload("host_lease")
    assert "metal3/bmc_ledger.py" in payload("host_bind")
