# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An error about a field of an object built from options names the option (common/option_errors.py)."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    InvalidInput,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.option_errors import (
    name_the_option,
    naming_options,
    option_of,
)

OPTIONS = {
    "userData": "user_data_secret",
    "hostSelector": "host_selector",
    "hostSelector.inNamespace": "in_namespace",
    "nodeReuse": "node_reuse",
}


@pytest.mark.parametrize(
    "cause, option",
    [
        ("spec.userData: Secret name 'Bad_Secret' must ...", "user_data_secret"),
        ("spec.hostSelector.matchExpressions[0]: unknown operator 'Like'", "host_selector"),
        ("spec.hostSelector.inNamespace: 'X' must ...", "in_namespace"),
        ("spec.nodeReuse: 'Bad Reuse' must ...", "node_reuse"),
        ("spec.kind: unknown", None),
        ("spec: image and customDeploy are alternatives", None),
        ("option namespace: bad", None),
        ("", None),
        (None, None),
        (42, None),
    ],
)
def test_the_option_is_the_one_filling_the_most_specific_field(cause, option):
    assert option_of(cause, OPTIONS) == option


def test_the_option_comes_first_and_nothing_else_changes():
    error = InvalidInput("HostClaim t/web", "spec.userData: Secret 'x' was not found", {"status": 400})
    named = name_the_option(error, OPTIONS)
    assert named.message == "HostClaim t/web: option user_data_secret: spec.userData: Secret 'x' was not found"
    assert named.obj == "HostClaim t/web" and named.details == {"status": 400}
    assert isinstance(named, InvalidInput)


def test_an_error_without_a_field_or_about_an_unmapped_field_is_kept():
    error = InvalidInput("HostClaim t/web", "spec.kind: unknown kind")
    assert name_the_option(error, OPTIONS) is error
    plain = InvalidInput("HostClaim t/web", "is being deleted")
    assert name_the_option(plain, OPTIONS) is plain


def test_the_context_manager_renames_invalid_input_only():
    with pytest.raises(InvalidInput) as info, naming_options(OPTIONS):
        raise InvalidInput("HostClaim t/web", "spec.nodeReuse: 'Bad Reuse' must be a label")
    assert info.value.message == "HostClaim t/web: option node_reuse: spec.nodeReuse: 'Bad Reuse' must be a label"
    with pytest.raises(Conflict) as info, naming_options(OPTIONS):
        raise Conflict("HostClaim t/web", "spec.nodeReuse: changed")
    assert info.value.message == "HostClaim t/web: spec.nodeReuse: changed"
    with naming_options(OPTIONS):
        pass
