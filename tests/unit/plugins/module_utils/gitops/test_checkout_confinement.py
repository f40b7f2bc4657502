# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the repository's content and the task's input may not make the checkout code do, on real Git repositories.

- no write or removal through a symbolic link or a submodule (committed, fetched, or only in the work tree; in
  check mode too), wherever the link points (outside the checkout or inside it);
- file names are literal to git (pathspec magic), and a remote is never an option to git;
- a failure at any step (write, add, staging check, commit, push, after a fast-forward or on an empty branch)
  leaves HEAD, the branch heads, the index, ``git status`` and every file exactly as they were.
"""

import os
import shutil
import stat

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    InvalidInput,
    TenancyError,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops import checkout as co
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops.tree_plan import desired_files, plan
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.gitops.git_cli import IDENTITY, git, run

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")

OUTSIDE_TEXT = "the controller's own file\n"


def commit_all(top, message="operator"):
    git("-C", str(top), "add", "--all")
    git("-C", str(top), "commit", "--quiet", "-m", message)


def hook(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


class World:
    """A bare remote, two clones, and a directory outside them with a file nobody may touch."""

    def __init__(self, tmp_path):
        self.remote = tmp_path / "remote.git"
        git("init", "--quiet", "--bare", "--initial-branch=main", str(self.remote))
        self.first = tmp_path / "first"
        git("clone", "--quiet", str(self.remote), str(self.first))
        (self.first / "README").write_text("operator's file\n")
        (self.first / "other").mkdir()
        (self.first / "other" / "keep.yaml").write_text("keep: true\n")
        commit_all(self.first, "init")
        self.push(self.first)
        self.second = tmp_path / "second"
        git("clone", "--quiet", str(self.remote), str(self.second))
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        (self.outside / "ns.yaml").write_text(OUTSIDE_TEXT)
        (self.outside / "passwd").write_text(OUTSIDE_TEXT)

    @staticmethod
    def push(top):
        git("-C", str(top), "push", "--quiet", "origin", "HEAD:refs/heads/main")

    def outside_state(self):
        return sorted((p.name, p.read_text()) for p in self.outside.iterdir())


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def tree_state(top):
    """Every entry under ``top`` but .git: (path, kind, content or link target)."""
    entries = []
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not (root == str(top) and d == ".git"))
        for name in sorted(dirs + files):
            path = os.path.join(root, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                entries.append((path, "link", os.readlink(path)))
            elif stat.S_ISDIR(mode):
                entries.append((path, "dir", ""))
            else:
                with open(path, "rb") as handle:
                    entries.append((path, "file", handle.read()))
    return entries


def state(top):
    """HEAD, branch heads, index, ``git status`` (ignored files included) and the files."""
    return dict(
        head=git("-C", str(top), "rev-parse", "HEAD"),
        refs=git("-C", str(top), "for-each-ref", "refs/heads"),
        index=git("-C", str(top), "ls-files", "--stage"),
        status=git("-C", str(top), "status", "--porcelain", "--ignored", "--untracked-files=all"),
        tree=tree_state(top),
    )


def apply(path, directories, check_mode=False, remote="origin", message="msg", runner=run):
    """What gitops_commit's run() does, step by step."""
    checkout = co.GitCheckout(str(path), runner, IDENTITY)
    co.check_inputs(message, remote, IDENTITY)
    wanted = desired_files(directories)
    branch, base = co.prepare(checkout, remote, check_mode)
    changes = plan(checkout.read_files(base, wanted), wanted)
    checkout.check_work_tree(changes)
    if check_mode:
        return changes, None
    return changes, co.commit_and_push(checkout, changes, message, remote, branch, base)


def refused(world, top, directories, check_mode=False, error=InvalidInput, **kwargs):
    """Run, expect one ``error``; assert the checkout, the remote and the outside directory are unchanged."""
    before, remote_before, outside_before = (
        state(top),
        git("--git-dir", str(world.remote), "rev-parse", "main"),
        (world.outside_state()),
    )
    with pytest.raises(error) as info:
        apply(top, directories, check_mode=check_mode, **kwargs)
    assert state(top) == before
    assert git("--git-dir", str(world.remote), "rev-parse", "main") == remote_before
    assert world.outside_state() == outside_before
    return info.value


# -- symbolic links and submodules in the repository ---------------------------------------------------------
@pytest.mark.parametrize("check_mode", [False, True])
def test_a_committed_directory_link_to_outside_is_refused(world, check_mode):
    os.symlink(str(world.outside), str(world.first / "tenants"))
    commit_all(world.first)
    world.push(world.first)
    error = refused(world, world.first, {"tenants/a": {"ns.yaml": "pwned\n"}}, check_mode)
    assert error.obj == "Git checkout %s" % world.first
    assert "'tenants' is a symbolic link in commit" in error.cause
    assert "(on the way to 'tenants/a')" in error.cause


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_directory_link_inside_the_checkout_is_refused_too(world, check_mode):
    (world.first / "tenants").mkdir()
    os.symlink("../other", str(world.first / "tenants" / "a"))
    commit_all(world.first)
    world.push(world.first)
    error = refused(world, world.first, {"tenants/a": {"keep.yaml": "changed\n"}}, check_mode)
    assert "'tenants/a' is a symbolic link in commit" in error.cause
    assert (world.first / "other" / "keep.yaml").read_text() == "keep: true\n"


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_committed_file_link_as_the_target_is_refused(world, check_mode):
    (world.first / "tenants" / "a").mkdir(parents=True)
    os.symlink(str(world.outside / "ns.yaml"), str(world.first / "tenants" / "a" / "ns.yaml"))
    commit_all(world.first)
    world.push(world.first)
    error = refused(world, world.first, {"tenants/a": {"ns.yaml": "pwned\n"}}, check_mode)
    assert "'tenants/a/ns.yaml' is a symbolic link in commit" in error.cause


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_file_link_under_a_directory_to_remove_is_refused(world, check_mode):
    (world.first / "tenants" / "old").mkdir(parents=True)
    (world.first / "tenants" / "old" / "ns.yaml").write_text("old\n")
    os.symlink(str(world.outside / "passwd"), str(world.first / "tenants" / "old" / "passwd"))
    commit_all(world.first)
    world.push(world.first)
    error = refused(world, world.first, {"tenants/old": None}, check_mode)
    assert "'tenants/old/passwd' is a symbolic link in commit" in error.cause
    assert os.readlink(str(world.first / "tenants" / "old" / "passwd")) == str(world.outside / "passwd")


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_link_only_in_the_fetched_commit_is_refused_and_nothing_moves(world, check_mode):
    os.symlink(str(world.outside), str(world.second / "tenants"))
    commit_all(world.second)
    world.push(world.second)
    # first is behind: its work tree has no link yet, the commit it would be fast-forwarded to has one
    error = refused(world, world.first, {"tenants/a": {"ns.yaml": "pwned\n"}}, check_mode)
    assert "'tenants' is a symbolic link in commit" in error.cause
    assert not os.path.lexists(str(world.first / "tenants"))


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_link_only_in_the_work_tree_is_refused(world, check_mode):
    # an ignored link: the checkout is clean, the commit has no link
    (world.first / ".gitignore").write_text("/tenants/b\n")
    (world.first / "tenants").mkdir()
    (world.first / "tenants" / "keep").write_text("k\n")
    commit_all(world.first)
    world.push(world.first)
    os.symlink(str(world.outside), str(world.first / "tenants" / "b"))
    error = refused(world, world.first, {"tenants/b": {"ns.yaml": "pwned\n"}}, check_mode)
    assert "'tenants/b' is a symbolic link in the work tree (on the way to 'tenants/b/ns.yaml')" in error.cause


@pytest.mark.parametrize("directory", ["tenants/sub", "tenants"])
def test_a_submodule_is_refused(world, directory):
    commit = git("-C", str(world.first), "rev-parse", "HEAD")
    git("-C", str(world.first), "update-index", "--add", "--cacheinfo", "160000,%s,tenants/sub" % commit)
    git("-C", str(world.first), "commit", "--quiet", "-m", "gitlink")
    world.push(world.first)
    (world.first / "tenants" / "sub").mkdir(parents=True)  # as an uninitialised submodule
    wanted = {directory: {"sub/x.yaml" if directory == "tenants" else "x.yaml": "x\n"}}
    error = refused(world, world.first, wanted)
    assert "'tenants/sub' is a submodule in commit" in error.cause


def test_a_file_where_a_directory_is_wanted_is_refused(world):
    (world.first / "tenants").write_text("a file\n")
    commit_all(world.first)
    world.push(world.first)
    error = refused(world, world.first, {"tenants/a": {"ns.yaml": "x\n"}})
    assert "'tenants' is a file, not a directory, in commit" in error.cause


@pytest.mark.parametrize("where", ["directory", "file"])
def test_the_writes_themselves_never_follow_a_link(world, where):
    """A link that appears after the checks (a race) fails the write instead of redirecting it."""
    checkout = co.GitCheckout(str(world.first), run, IDENTITY)
    (world.first / "tenants").mkdir()
    if where == "directory":
        os.symlink(str(world.outside), str(world.first / "tenants" / "a"))
    else:
        (world.first / "tenants" / "a").mkdir()
        os.symlink(str(world.outside / "ns.yaml"), str(world.first / "tenants" / "a" / "ns.yaml"))
    for change in (
        plan({}, desired_files({"tenants/a": {"ns.yaml": "pwned\n"}}))[0],
        plan({"tenants/a/ns.yaml": "x"}, desired_files({"tenants/a": None}))[0],
    ):
        created_files, created_dirs = [], []
        with pytest.raises(InvalidInput, match="is a symbolic link in the work tree"):
            checkout.write([change], created_files, created_dirs)
        assert (created_files, created_dirs) == ([], [])
    assert world.outside_state() == [("ns.yaml", OUTSIDE_TEXT), ("passwd", OUTSIDE_TEXT)]


def test_an_ignored_file_in_the_way_is_refused_not_overwritten(world):
    (world.first / ".gitignore").write_text("*.local\n")
    commit_all(world.first)
    world.push(world.first)
    (world.first / "tenants" / "a").mkdir(parents=True)
    (world.first / "tenants" / "a" / "ns.local").write_text("operator's notes\n")
    error = refused(world, world.first, {"tenants/a": {"ns.local": "x\n"}})
    assert "'tenants/a/ns.local' exists in the work tree but not in the commit" in error.cause


# -- what git is asked to do ----------------------------------------------------------------------------------
def test_file_names_are_never_pathspec_magic(world):
    files = {":(top)README": "magic\n", "*": "star\n", ":!x": "not\n", "[a]": "class\n"}
    apply(world.first, {"t": files, "ta": {"keep.yaml": "k\n"}})
    listed = git("--git-dir", str(world.remote), "ls-tree", "-r", "--name-only", "main").split("\n")
    assert sorted(listed) == sorted(["README", "other/keep.yaml", "ta/keep.yaml"] + ["t/" + n for n in files])
    assert (world.first / "README").read_text() == "operator's file\n"
    # a directory named t* removes that directory only
    apply(world.first, {"t*": {"x": "1\n"}})
    changes = apply(world.first, {"t*": None})[0]
    assert [c.path for c in changes] == ["t*/x"]
    listed = git("--git-dir", str(world.remote), "ls-tree", "-r", "--name-only", "main").split("\n")
    assert "ta/keep.yaml" in listed and "t/*" in listed
    assert git("-C", str(world.first), "status", "--porcelain") == ""


@pytest.mark.parametrize("remote", ["--upload-pack=touch {pwned}", "-oProxyCommand=touch {pwned}", "-v"])
def test_a_remote_starting_with_a_dash_is_refused(world, tmp_path, remote):
    pwned = tmp_path / "pwned"
    remote = remote.format(pwned=pwned)
    error = refused(world, world.first, {"tenants/a": {"ns.yaml": "x\n"}}, remote=remote)
    assert error.message == "option remote: %r starts with '-', which git would read as an option" % remote
    # prepare refuses it too, whoever calls it
    with pytest.raises(InvalidInput, match="option remote"):
        co.prepare(co.GitCheckout(str(world.first), run, IDENTITY), remote, False)
    assert not pwned.exists()


@pytest.mark.parametrize(
    ("message", "remote", "identity", "expected"),
    [
        ("", "origin", IDENTITY, "option commit_message: must not be empty (or only whitespace)"),
        (" \n\t\n", "origin", IDENTITY, "option commit_message: must not be empty (or only whitespace)"),
        ("a\0b", "origin", IDENTITY, "option commit_message: must not contain a NUL character"),
        ("m", "origin\nx", IDENTITY, "option remote: 'origin\\nx' contains a NUL or line break"),
        ("m", "o", ("", "a@b"), "option author_name: '' is empty once git strips spaces and punctuation"),
        ("m", "o", ("...", "a@b"), "option author_name: '...' is empty once git strips spaces and punctuation"),
        ("m", "o", ("a <b>", "a@b"), "option author_name: 'a <b>' contains <, >, a NUL or a line break"),
        ("m", "o", ("a", "a@b>\nx"), "option author_email: 'a@b>\\nx' contains <, >, a NUL or a line break"),
        ("m", "o", ("a", " "), "option author_email: ' ' is empty once git strips"),
    ],
)
def test_inputs_git_would_misread_are_refused(message, remote, identity, expected):
    with pytest.raises(InvalidInput) as info:
        co.check_inputs(message, remote, identity)
    assert info.value.message.startswith(expected)


def test_good_inputs_pass():
    assert co.input_problems("tenants: onboard a", "origin", IDENTITY) == []
    assert co.input_problems("# only a comment", None, ("Jane Doe", "jane@example.com")) == []


def test_a_message_of_comment_lines_is_kept_as_given(world):
    commit = apply(world.first, {"tenants/a": {"ns.yaml": "x\n"}}, message="# tenants: onboard a\n\n")[1]
    assert git("-C", str(world.first), "log", "-1", "--format=%B", commit) == "# tenants: onboard a"


# -- a failure at any step puts the checkout back ----------------------------------------------------------
def failing_at(step):
    """A runner that runs git for real, then reports a failure of ``step`` ("add": after staging; "stage":
    stages another file as well, which the staging check must catch)."""

    def runner(argv, environ_update=None):
        rc, out, err = run(argv, environ_update)
        if "add" in argv[3:4]:
            if step == "add":
                return 128, out, "fatal: injected failure after staging"
            if step == "stage":
                top = argv[2]
                with open(os.path.join(top, "README"), "a", encoding="utf-8") as handle:
                    handle.write("swept in\n")
                run(["git", "-C", top, "add", "README"], environ_update)
        return rc, out, err

    return runner


def setup_step(world, step, behind=False):
    """A checkout with tenants/a (ns.yaml, old.yaml) committed, and ``step`` made to fail for real where it can;
    ``behind``: the remote moved on, so the run fast-forwards first (and a failure must undo that too)."""
    (world.first / "tenants" / "a").mkdir(parents=True)
    (world.first / "tenants" / "a" / "ns.yaml").write_text("a\n")
    (world.first / "tenants" / "a" / "old.yaml").write_text("old\n")
    (world.first / ".gitignore").write_text("*.local\n")
    commit_all(world.first)
    world.push(world.first)
    if behind:
        git("-C", str(world.second), "pull", "--quiet", "origin", "main")
        (world.second / "tenants" / "c").mkdir(parents=True)
        (world.second / "tenants" / "c" / "c.yaml").write_text("c\n")
        commit_all(world.second)
        world.push(world.second)
    if step == "write":  # a directory (holding an ignored file) where the last file is to be written
        (world.first / "tenants" / "z" / "zz.yaml").mkdir(parents=True)
        (world.first / "tenants" / "z" / "zz.yaml" / "notes.local").write_text("n\n")
    if step == "commit":  # --no-verify does not skip this hook
        hook(world.first / ".git" / "hooks" / "prepare-commit-msg", "exit 1")
    if step == "push":
        hook(world.remote / "hooks" / "pre-receive", "echo refused by policy >&2; exit 1")


WANTED = {
    "tenants/a": {"ns.yaml": "changed\n", "new.yaml": "new\n"},  # update, create; old.yaml removed
    "tenants/b/deep/er": {"x.yaml": "x\n"},  # new directories
    "tenants/z": {"zz.yaml": "z\n"},
}


@pytest.mark.parametrize("behind", [False, True], ids=["up-to-date", "fast-forwarded"])
@pytest.mark.parametrize("step", ["write", "add", "stage", "commit", "push"])
def test_a_failure_at_any_step_leaves_the_checkout_as_it_was(world, step, behind):
    setup_step(world, step, behind)
    error = {"write": InvalidInput, "add": BackendError, "stage": BackendError, "commit": BackendError}
    runner = failing_at(step) if step in ("add", "stage") else run
    before = state(world.first)
    with pytest.raises(error.get(step, Conflict)) as info:
        apply(world.first, WANTED, runner=runner)
    assert state(world.first) == before
    assert world.outside_state() == [("ns.yaml", OUTSIDE_TEXT), ("passwd", OUTSIDE_TEXT)]
    if step == "stage":
        assert "not planned: ['README']" in info.value.cause
    if step == "write":
        assert "'tenants/z/zz.yaml' is not a regular file in the work tree" in info.value.cause


def test_a_failed_first_commit_on_an_empty_branch_leaves_it_empty(tmp_path):
    top = tmp_path / "empty"
    git("init", "--quiet", "--initial-branch=main", str(top))
    hook(top / ".git" / "hooks" / "prepare-commit-msg", "exit 1")
    before = tree_state(top), git("-C", str(top), "status", "--porcelain", "--ignored", "--untracked-files=all")
    with pytest.raises(TenancyError, match="git commit"):
        apply(top, {"tenants/a": {"ns.yaml": "x\n"}}, remote=None)
    after = tree_state(top), git("-C", str(top), "status", "--porcelain", "--ignored", "--untracked-files=all")
    assert after == before
    assert git("-C", str(top), "ls-files") == ""
    assert run(["git", "-C", str(top), "rev-parse", "--verify", "--quiet", "HEAD"])[0] != 0
    (top / ".git" / "hooks" / "prepare-commit-msg").unlink()
    assert apply(top, {"tenants/a": {"ns.yaml": "x\n"}}, remote=None)[1]  # and the next run works


def test_after_a_failure_the_next_run_succeeds(world):
    setup_step(world, "push")
    with pytest.raises(Conflict, match="refused by policy"):
        apply(world.first, WANTED)
    (world.remote / "hooks" / "pre-receive").unlink()
    changes, commit = apply(world.first, WANTED)
    assert git("--git-dir", str(world.remote), "rev-parse", "main") == commit
    assert [(c.path, c.action) for c in changes] == [
        ("tenants/a/new.yaml", "create"),
        ("tenants/a/ns.yaml", "update"),
        ("tenants/a/old.yaml", "remove"),
        ("tenants/b/deep/er/x.yaml", "create"),
        ("tenants/z/zz.yaml", "create"),
    ]


def test_ignored_wanted_files_are_committed_and_a_file_may_replace_a_directory(world):
    (world.first / ".gitignore").write_text("*.yaml\n")
    commit_all(world.first)
    world.push(world.first)
    apply(world.first, {"t": {"x/y.yaml": "1\n"}})
    changes, commit = apply(world.first, {"t": {"x": "now a file\n"}})
    assert [(c.path, c.action) for c in changes] == [("t/x", "create"), ("t/x/y.yaml", "remove")]
    listed = git("--git-dir", str(world.remote), "ls-tree", "-r", "--name-only", commit, "--", "t").split("\n")
    assert listed == ["t/x"]
    assert (world.first / "t" / "x").read_text() == "now a file\n"
    assert git("-C", str(world.first), "status", "--porcelain", "--untracked-files=all") == ""
