# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The checkout rules on real Git repositories (a bare "remote" and clones of it, in a temporary directory)."""

import shutil

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops import checkout as co
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops.tree_plan import desired_files, plan
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.gitops.git_cli import IDENTITY, git, run

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


class Repos:
    def __init__(self, remote, first, second):
        self.remote, self.first, self.second = remote, first, second


@pytest.fixture
def repos(tmp_path):
    remote = tmp_path / "remote.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(remote))
    first = tmp_path / "first"
    git("clone", "--quiet", str(remote), str(first))
    (first / "README").write_text("operator's file\n")
    git("-C", str(first), "add", "README")
    git("-C", str(first), "commit", "--quiet", "-m", "init")
    git("-C", str(first), "push", "--quiet", "origin", "HEAD:refs/heads/main")
    second = tmp_path / "second"
    git("clone", "--quiet", str(remote), str(second))
    return Repos(remote, first, second)


def apply(path, directories, check_mode=False, remote="origin"):
    checkout = co.GitCheckout(str(path), run, IDENTITY)
    branch, base = co.prepare(checkout, remote, check_mode)
    wanted = desired_files(directories)
    changes = plan(checkout.read_files(base, wanted), wanted)
    checkout.check_work_tree(changes)
    if check_mode:
        return changes, None
    commit = co.commit_and_push(checkout, changes, "msg", remote, branch, base)  # also fast-forwards
    return changes, commit if changes else None


def test_commit_is_pushed_and_a_second_run_changes_nothing(repos):
    remote, first, second = repos.remote, repos.first, repos.second
    changes, commit = apply(first, {"tenants/a": {"ns.yaml": "kind: Namespace\n"}})
    assert [c.action for c in changes] == ["create"]
    assert git("--git-dir", str(remote), "rev-parse", "main") == commit
    assert apply(first, {"tenants/a": {"ns.yaml": "kind: Namespace\n"}}) == ([], None)
    # another clone that is only behind is fast-forwarded, then finds nothing to do
    assert apply(second, {"tenants/a": {"ns.yaml": "kind: Namespace\n"}}) == ([], None)
    assert git("-C", str(second), "rev-parse", "HEAD") == commit


def test_removing_a_directory_leaves_the_rest_of_the_repository(repos):
    remote, first = repos.remote, repos.first
    apply(first, {"tenants/a": {"ns.yaml": "a"}, "tenants/b": {"ns.yaml": "b"}})
    changes = apply(first, {"tenants/a": None})[0]
    assert [(c.path, c.action) for c in changes] == [("tenants/a/ns.yaml", "remove")]
    assert not (first / "tenants" / "a").exists()
    files = git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "main").split()
    assert files == ["README", "tenants/b/ns.yaml"]


def test_check_mode_moves_nothing_even_when_behind(repos):
    first, second = repos.first, repos.second
    apply(first, {"tenants/a": {"ns.yaml": "a"}})
    before = git("-C", str(second), "rev-parse", "HEAD")
    changes = apply(second, {"tenants/a": {"ns.yaml": "changed"}}, check_mode=True)[0]
    assert [(c.path, c.before, c.after) for c in changes] == [("tenants/a/ns.yaml", "a", "changed")]
    assert git("-C", str(second), "rev-parse", "HEAD") == before
    assert not (second / "tenants").exists()


def test_a_dirty_checkout_is_refused_and_left_as_it_was(repos):
    first = repos.first
    (first / "README").write_text("edited by hand\n")
    (first / "new.txt").write_text("untracked\n")
    with pytest.raises(Conflict) as info:
        apply(first, {"tenants/a": {"ns.yaml": "a"}})
    assert "uncommitted or untracked changes (README, new.txt)" in info.value.message
    assert not (first / "tenants").exists()
    assert (first / "README").read_text() == "edited by hand\n"


@pytest.mark.parametrize("remote_moves", [False, True])
def test_local_commits_not_on_the_remote_are_refused(repos, remote_moves):
    first, second = repos.first, repos.second
    if remote_moves:
        apply(second, {"tenants/b": {"ns.yaml": "b"}})
    (first / "local.txt").write_text("x\n")
    git("-C", str(first), "add", "local.txt")
    git("-C", str(first), "commit", "--quiet", "-m", "local")
    with pytest.raises(Conflict) as info:
        apply(first, {"tenants/a": {"ns.yaml": "a"}})
    expected = "diverged from origin/main" if remote_moves else "is ahead of origin/main"
    assert expected in info.value.message


def test_detached_head_and_a_subdirectory_are_refused(repos, tmp_path):
    first = repos.first
    (first / "sub").mkdir()
    with pytest.raises(InvalidInput, match="not the top directory"):
        apply(first / "sub", {"x": None})
    with pytest.raises(InvalidInput, match="not a Git work tree"):
        apply(tmp_path, {"x": None})
    git("-C", str(first), "checkout", "--quiet", "--detach")
    with pytest.raises(InvalidInput, match="HEAD is detached"):
        apply(first, {"x": None})


def test_a_refused_push_undoes_the_local_commit(repos):
    remote, first, second = repos.remote, repos.first, repos.second
    checkout = co.GitCheckout(str(first), run, IDENTITY)
    branch, base = co.prepare(checkout, "origin", False)
    apply(second, {"tenants/b": {"ns.yaml": "b"}})  # someone pushes in between
    wanted = desired_files({"tenants/a": {"ns.yaml": "a"}})
    changes = plan(checkout.read_files(base, wanted), wanted)
    with pytest.raises(Conflict, match="push to origin/main was refused"):
        co.commit_and_push(checkout, changes, "msg", "origin", branch, base)
    assert git("-C", str(first), "rev-parse", "HEAD") == base
    assert git("-C", str(first), "status", "--porcelain") == ""
    changes, commit = apply(first, {"tenants/a": {"ns.yaml": "a"}})  # the next run succeeds
    assert git("--git-dir", str(remote), "rev-parse", "main") == commit
