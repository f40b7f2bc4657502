# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tenancy_posture's options (posture/options.py): good ones pass unchanged, each bad one is named with its value."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.posture.options import check_options

GOOD = {
    "flux_namespace": "flux-system",
    "flux_controllers": ["kustomize-controller", "helm-controller"],
    "tenant_label": "baremetal.tenancy/tenant",
    "service_account": None,
    "allowed_source_urls": ["https://git.example.com/t"],
    "tenant_source_urls": {"team-a": ["oci://ghcr.io/team-a"]},
    "required_policies": None,
    "managed_label": "app.kubernetes.io/managed-by=baremetal.tenancy",
    "fail_on_deviation": False,
}


def test_good_options_pass_unchanged():
    assert check_options(GOOD) == GOOD


@pytest.mark.parametrize(
    "option,value,words",
    [
        ("flux_namespace", "Flux_System", ("flux_namespace", "Flux_System")),
        ("tenant_label", "bad key!", ("tenant_label", "bad key!")),
        ("managed_label", "no-value", ("managed_label", "key=value")),
        ("managed_label", "k=bad value", ("managed_label", "bad value")),
        ("service_account", "Bad SA", ("service_account", "Bad SA")),
        ("allowed_source_urls", ["git.example.com"], ("allowed_source_urls", "not a URL")),
        ("allowed_source_urls", [" https://x"], ("allowed_source_urls",)),
        ("allowed_source_urls", [""], ("allowed_source_urls",)),
        ("tenant_source_urls", {"Bad": ["https://x"]}, ("tenant_source_urls", "Bad")),
        ("tenant_source_urls", {"ok": "https://x"}, ("tenant_source_urls[ok]",)),
    ],
)
def test_each_bad_option_is_named_with_its_value(option, value, words):
    with pytest.raises(InvalidInput) as raised:
        check_options(dict(GOOD, **{option: value}))
    for word in words:
        assert word in raised.value.message
