# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_claim: spec.credentials is set when a claim is created and never changes after (added, changed, removed)."""

import itertools

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.tenant import (
    refuse_a_credentials_change,
    spec_changes,
)

BEFORE = (None, "hosts-kubeconfig")
#: the option: unset (None), "" (remove it), the same Secret, another one
OPTION = (None, "", "hosts-kubeconfig", "other-kubeconfig")


@pytest.mark.parametrize("before, option", list(itertools.product(BEFORE, OPTION)))
def test_an_existing_claims_credentials_change_is_refused_and_only_that(before, option):
    existing_spec = {"online": False, **({"credentials": before} if before else {})}
    changes = spec_changes({"credentials": option, "online": True}, existing_spec)
    after = changes.get("credentials", before) or None
    if after == before:
        refuse_a_credentials_change(existing_spec, changes, "web", "tenant-a")
        return
    with pytest.raises(InvalidInput) as err:
        refuse_a_credentials_change(existing_spec, changes, "web", "tenant-a")
    assert err.value.obj == "HostClaim tenant-a/web"
    assert "spec.credentials" in err.value.cause and "delete the claim and create it again" in err.value.cause


@pytest.mark.parametrize("option", OPTION)
def test_a_new_claim_takes_any_credentials(option):
    refuse_a_credentials_change(None, spec_changes({"credentials": option}, None), "web", "tenant-a")
