# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import cleaning


def test_only_nodes_that_say_false_are_never_cleaned():
    nodes = [
        {"uuid": "u-1", "name": "n-1", "automated_clean": False},
        {"uuid": "u-2", "name": "n-2", "automated_clean": True},
        {"uuid": "u-3", "name": "n-3", "automated_clean": None},  # the conductor decides: the API cannot tell
        {"uuid": "u-4", "name": "n-4"},
        {"uuid": "u-5", "name": None, "automated_clean": False},
        {"uuid": "u-1", "name": "n-1", "automated_clean": False},  # named twice
    ]
    assert cleaning.never_cleaned(nodes) == ["n-1", "u-5"]


def test_false_like_values_are_not_taken_for_false():
    nodes = [{"name": "a", "automated_clean": 0}, {"name": "b", "automated_clean": ""}, "not a node", None]
    assert cleaning.never_cleaned(nodes) == []
    assert cleaning.never_cleaned(None) == []


def test_the_warning_names_every_node_and_what_is_at_stake():
    assert cleaning.cleaning_off_warning([]) is None
    one = cleaning.cleaning_off_warning(["n-4"], "leased to a tenant")
    assert one.startswith("automated cleaning is off (automated_clean: false) on node n-4, leased to a tenant:")
    assert "its disks" in one and "next tenant" in one and "automated_cleaning: true" in one
    two = cleaning.cleaning_off_warning(["n-1", "n-4"])
    assert "on nodes n-1, n-4, handed to tenants" in two and "their disks" in two


@given(
    st.lists(
        st.fixed_dictionaries(
            {"name": st.text(min_size=1, max_size=8), "automated_clean": st.sampled_from([True, False, None])}
        )
    )
)
def test_every_node_that_is_never_cleaned_is_named_and_no_other(nodes):
    named = cleaning.never_cleaned(nodes)
    assert set(named) == {n["name"] for n in nodes if n["automated_clean"] is False}
    warning = cleaning.cleaning_off_warning(named)
    assert (warning is None) == (not named)
