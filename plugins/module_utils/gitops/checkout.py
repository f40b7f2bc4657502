# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""A Git checkout of a cluster operator's repository, through the ``git`` command.

The one place where the collection runs ``git``. Every command goes through
the ``run`` callable given to :class:`GitCheckout` (``AnsibleModule.run_command``
in a module), never a shell; no prompt is ever shown (``GIT_TERMINAL_PROMPT=0``)
and the messages are read in the C locale.

The guarantees :func:`prepare` gives before anything is written:

- the path is the top of a work tree, on a branch (not a detached HEAD);
- nothing is uncommitted or untracked: a change the operator has not
  committed is never swept into our commit, and a half-written run of ours is
  reported instead of built upon;
- with a remote, the branch is fetched first; a checkout that is only behind
  is fast-forwarded (not in check mode: there the plan is made against the
  fetched commit and nothing moves); a checkout with commits the remote does
  not have (ahead, or diverged) is refused, because pushing would publish
  someone else's unreviewed commits or fail.

A push that is refused (someone pushed in between) undoes our local commit
(``reset --hard`` to the commit we started from, which was clean), so the
next run starts again from a clean, fetchable checkout.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    InvalidInput,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops.tree_plan import Change

#: run(argv, environ_update) -> (rc, stdout, stderr), as AnsibleModule.run_command
Runner = Callable[..., tuple]

BASE_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C"}
DIRTY_SHOWN = 5


class GitCheckout:
    """The work tree at ``path``; ``identity`` sets author and committer (name, email)."""

    def __init__(self, path: str, run: Runner, identity: tuple[str, str] | None = None):
        self.path = os.path.abspath(path)
        self.obj = "Git checkout %s" % self.path
        self._run = run
        self.env = dict(BASE_ENV)
        if identity:
            name, email = identity
            self.env.update(
                GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email
            )

    def git(self, *args: str, ok: Iterable[int] = (0,)) -> tuple[int, str, str]:
        rc, out, err = self._run(["git", "-C", self.path, *args], environ_update=self.env)
        if rc not in tuple(ok):
            raise BackendError(self.obj, "git %s failed (%s): %s" % (" ".join(args), rc, (err or out).strip()))
        return rc, out, err

    def out(self, *args: str) -> str:
        return self.git(*args)[1].strip()

    # -- reading -------------------------------------------------------------
    def toplevel(self) -> str:
        rc, out, err = self.git("rev-parse", "--show-toplevel", ok=range(256))
        if rc != 0:
            raise InvalidInput(self.obj, "is not a Git work tree (%s)" % (err or out).strip())
        return os.path.realpath(out.strip())

    def branch(self) -> str:
        rc, out, _err = self.git("symbolic-ref", "--quiet", "--short", "HEAD", ok=(0, 1))
        if rc != 0:
            raise InvalidInput(self.obj, "HEAD is detached; check out the branch to commit to")
        return out.strip()

    def dirty(self) -> list[str]:
        out = self.git("status", "--porcelain", "--untracked-files=all")[1]  # not stripped: " M path"
        return [line[3:] for line in out.splitlines() if line.strip()]

    def commit_of(self, ref: str) -> str | None:
        rc, out, _err = self.git("rev-parse", "--verify", "--quiet", ref + "^{commit}", ok=(0, 1))
        return out.strip() if rc == 0 else None

    def counts(self, ref: str) -> tuple[int, int]:
        """(commits only here, commits only in ``ref``)."""
        ahead, behind = self.out("rev-list", "--left-right", "--count", "HEAD..." + ref).split()
        return int(ahead), int(behind)

    def read_files(self, commit: str | None, directories: Iterable[str]) -> dict[str, str]:
        """Every file under ``directories`` in ``commit`` (none when the branch has no commit yet)."""
        if commit is None:
            return {}
        dirs = list(directories)
        if not dirs:
            return {}
        listing = self.out("ls-tree", "-r", "-z", "--name-only", commit, "--", *dirs)
        files = {}
        for path in (p for p in listing.split("\0") if p):
            files[path] = self.git("cat-file", "blob", "%s:%s" % (commit, path))[1]
        return files

    # -- writing -------------------------------------------------------------
    def write(self, changes: Iterable[Change]) -> None:
        for change in changes:
            target = os.path.join(self.path, *change.path.split("/"))
            if change.after is None:
                if os.path.lexists(target):
                    os.unlink(target)
                _remove_empty_parents(os.path.dirname(target), self.path)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="") as handle:
                handle.write(change.after)

    def commit(self, paths: Iterable[str], message: str) -> str:
        """Stage exactly ``paths`` (written or removed files) and commit them."""
        self.git("add", "--all", "--", *paths)
        self.git("commit", "--quiet", "--no-verify", "-m", message)
        return self.out("rev-parse", "HEAD")

    def reset_hard(self, commit: str) -> None:
        self.git("reset", "--quiet", "--hard", commit)


def _remove_empty_parents(directory: str, top: str) -> None:
    while os.path.abspath(directory) != os.path.abspath(top) and os.path.isdir(directory):
        if os.listdir(directory):
            return
        os.rmdir(directory)
        directory = os.path.dirname(directory)


def prepare(checkout: GitCheckout, remote: str | None, check_mode: bool) -> tuple[str, str | None]:
    """Check the checkout (see the file docstring); return (branch, the commit to plan against)."""
    if checkout.toplevel() != os.path.realpath(checkout.path):
        raise InvalidInput(checkout.obj, "is not the top directory of its Git work tree")
    branch = checkout.branch()
    dirty = checkout.dirty()
    if dirty:
        shown = ", ".join(dirty[:DIRTY_SHOWN]) + (
            " and %d more" % (len(dirty) - DIRTY_SHOWN) if len(dirty) > DIRTY_SHOWN else ""
        )
        raise Conflict(
            checkout.obj,
            "has uncommitted or untracked changes (%s); commit, stash or remove them first" % shown,
            dict(dirty=dirty),
        )
    head = checkout.commit_of("HEAD")
    if not remote:
        return branch, head
    checkout.git("fetch", "--quiet", remote, "+refs/heads/%s:refs/remotes/%s/%s" % (branch, remote, branch))
    tracking = "refs/remotes/%s/%s" % (remote, branch)
    upstream = checkout.commit_of(tracking)
    if upstream is None:
        raise InvalidInput(checkout.obj, "remote %s has no branch %s; push it once first" % (remote, branch))
    if head is None:
        raise InvalidInput(checkout.obj, "branch %s has no commit yet; pull %s/%s first" % (branch, remote, branch))
    ahead, behind = checkout.counts(tracking)
    if ahead:
        state = "diverged from" if behind else "is ahead of"
        raise Conflict(
            checkout.obj,
            "branch %s %s %s/%s (%d local commit(s) not on the remote, %d remote commit(s) not here); "
            "push or reset it first" % (branch, state, remote, branch, ahead, behind),
            dict(ahead=ahead, behind=behind),
        )
    if behind and not check_mode:
        checkout.git("merge", "--quiet", "--ff-only", tracking)
    return branch, upstream


def commit_and_push(
    checkout: GitCheckout,
    changes: list[Change],
    message: str,
    remote: str | None,
    branch: str,
    base: str | None,
) -> str:
    """Write ``changes``, commit them (nothing else is staged), push; return the new commit."""
    checkout.write(changes)
    commit = checkout.commit([change.path for change in changes], message)
    if remote:
        rc, out, err = checkout.git("push", "--quiet", remote, "HEAD:refs/heads/%s" % branch, ok=range(256))
        if rc != 0:
            if base:
                checkout.reset_hard(base)
            raise Conflict(
                checkout.obj,
                "push to %s/%s was refused, the local commit is undone; run again (%s)"
                % (remote, branch, (err or out).strip()),
            )
    return commit
