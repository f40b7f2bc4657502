# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Argument handling of host_offer, host_offer_info and host_offer_claim: bad options fail with one clear message
before any client is built, so nothing can change."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_offers
from ansible_collections.baremetal.tenancy.plugins.modules import host_offer, host_offer_claim, host_offer_info


@pytest.fixture(autouse=True)
def no_client(monkeypatch):
    """Any attempt to reach OpenStack fails the test."""

    def refuse(params):
        raise AssertionError("an OpenStack client was built")

    monkeypatch.setattr(esi_leap_offers, "_connect", refuse)


def failure(module_class, args, capsys):
    with patch_module_args(dict(args, cloud="infra")):
        with pytest.raises(SystemExit) as exit_info:
            module_class()()
    out = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 1 and out["failed"] is True and out.get("changed", False) is False
    return out["msg"]


@pytest.mark.parametrize(
    "module_class, args, message",
    [
        (host_offer.HostOfferModule, {}, "one of the following is required: nodes, resource_class"),
        (
            host_offer.HostOfferModule,
            {"nodes": ["n1"], "start": "2026-05-02T00:00:00Z", "end": "2026-05-01T00:00:00Z"},
            "option end: must be after start (2026-05-02T00:00:00Z), got 2026-05-01T00:00:00Z",
        ),
        (host_offer.HostOfferModule, {"nodes": ["n1"], "end": "soon"}, "option end: must be an ISO 8601"),
        (host_offer.HostOfferModule, {"nodes": ["n1"], "state": "gone"}, "value of state must be one of"),
        (
            host_offer_claim.HostOfferClaimModule,
            {"offer": "o", "lease": "l"},
            "parameters are mutually exclusive: lease|offer",
        ),
        (
            host_offer_claim.HostOfferClaimModule,
            {"offer": "o", "wait": True, "wait_timeout": -1},
            "option wait_timeout: must be zero or more seconds, got -1",
        ),
        (
            host_offer_claim.HostOfferClaimModule,
            {"offer": "o", "start": "2026-05-01", "end": "2026-05-01"},
            "option end: must be after start",
        ),
        (host_offer_info.HostOfferInfoModule, {"available": "maybe"}, "available"),
    ],
)
def test_bad_options_fail_before_any_request(module_class, args, message, capsys):
    assert message in failure(module_class, args, capsys)
