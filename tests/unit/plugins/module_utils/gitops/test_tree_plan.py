# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops import tree_plan as tp


def refused(directories):
    with pytest.raises(InvalidInput) as info:
        tp.desired_files(directories)
    return info.value.message


def test_a_directory_holds_exactly_its_files_afterwards():
    current = {"t/a/x.yaml": "old", "t/a/gone.yaml": "g", "t/b/keep.yaml": "k", "other/file": "o"}
    wanted = tp.desired_files({"t/a": {"x.yaml": "new", "y.yaml": "y"}})
    changes = tp.plan(current, wanted)
    assert [(c.path, c.action) for c in changes] == [
        ("t/a/gone.yaml", "remove"),
        ("t/a/x.yaml", "update"),
        ("t/a/y.yaml", "create"),
    ]


def test_a_null_directory_is_removed_and_nothing_outside_is_touched():
    current = {"t/a/x.yaml": "x", "t/a/sub/y.yaml": "y", "t/ab/z.yaml": "z"}
    changes = tp.plan(current, tp.desired_files({"t/a": None}))
    assert [(c.path, c.action) for c in changes] == [("t/a/sub/y.yaml", "remove"), ("t/a/x.yaml", "remove")]


def test_same_content_plans_nothing():
    current = {"t/a/x.yaml": "x"}
    assert tp.plan(current, tp.desired_files({"t/a/": {"x.yaml": "x"}, "t/b": None})) == []


@pytest.mark.parametrize(
    ("directories", "cause"),
    [
        ({"../up": {}}, "may not contain empty, . or .. parts"),
        ({"/abs": {}}, "must be a relative path"),
        ({"a/.git/hooks": {}}, "may not be inside .git"),
        ({"a/.GIT/hooks": {}}, "may not be inside .git"),
        ({"a": {"b/.Git/config": "x"}}, "may not be inside .git"),
        ({"a": {"x/../../y": "t"}}, "may not contain empty, . or .. parts"),
        ({"a": {"x": 1}}, "the content must be text"),
        ({"a": "text"}, "must map file names to their text, or be null"),
        ({"a": {}, "a/b": None}, "lies inside directory 'a'"),
        ({"a": {"x": "1", "x/y": "2"}}, "is also a directory holding 'a/x/y'"),
        ({"": {}}, "must be a non-empty relative path"),
    ],
)
def test_bad_paths_are_refused_with_the_path_named(directories, cause):
    message = refused(directories)
    assert cause in message


def test_diff_entries_use_dev_null_for_a_missing_side():
    changes = [tp.Change("a/x", None, "new"), tp.Change("a/y", "old", None)]
    assert tp.diff_entries(changes) == [
        dict(before_header="/dev/null", after_header="a/x", before="", after="new"),
        dict(before_header="a/y", after_header="/dev/null", before="old", after=""),
    ]
    assert tp.summary(changes) == [dict(path="a/x", action="create"), dict(path="a/y", action="remove")]


names = st.sampled_from(["a", "b", "c"])
texts = st.sampled_from(["1", "2", "3"])


@given(
    current=st.dictionaries(st.tuples(names, names).map("/".join), texts),
    wanted=st.dictionaries(names, st.one_of(st.none(), st.dictionaries(names, texts))),
)
def test_applying_the_plan_gives_the_wanted_directories_and_keeps_the_rest(current, wanted):
    desired = tp.desired_files(wanted)
    after = dict(current)
    for change in tp.plan(current, desired):
        if change.after is None:
            del after[change.path]
        else:
            after[change.path] = change.after
    for directory, files in desired.items():
        inside = {p: t for p, t in after.items() if p.startswith(directory + "/")}
        assert inside == (files or {})

    def outside(files):
        return {p: t for p, t in files.items() if p.split("/")[0] not in desired}

    assert outside(after) == outside(current)
    assert tp.plan(after, desired) == []
