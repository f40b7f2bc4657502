# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""A Git checkout of a cluster operator's repository, through the ``git`` command.

The one place where the collection runs ``git``. Every command goes through
the ``run`` callable given to :class:`GitCheckout` (``AnsibleModule.run_command``
in a module), never a shell; no prompt is ever shown (``GIT_TERMINAL_PROMPT=0``),
the messages are read in the C locale and every pathspec is literal
(``GIT_LITERAL_PATHSPECS=1``: a file named ``:(top)x`` or ``*`` is that file,
never a pattern).

The guarantees :func:`prepare` gives before anything is written:

- the path is the top of a work tree, on a branch (not a detached HEAD);
- nothing is uncommitted or untracked: a change the operator has not
  committed is never swept into our commit, and a half-written run of ours is
  reported instead of built upon;
- with a remote, the branch is fetched first; a checkout with commits the
  remote does not have (ahead, or diverged) is refused, because pushing would
  publish someone else's unreviewed commits or fail. A checkout that is only
  behind is planned against the fetched commit and fast-forwarded by
  :func:`commit_and_push` (never in check mode).

Confinement: the repository's content is not trusted. Every path the module
reads, writes or removes must stay inside the checkout: no component on the
way to it, and not the file itself, may be a symbolic link or a submodule,
neither in the commit the change is planned against (:meth:`GitCheckout.read_files`,
check mode included) nor in the work tree (:meth:`GitCheckout.check_work_tree`);
such a path is one :class:`InvalidInput` and nothing is written. The writes
themselves never follow a link either (each directory is opened with
``O_NOFOLLOW`` relative to its parent, files are created with ``O_NOFOLLOW``),
so a link that appears after the checks fails the run instead of redirecting
it; and after ``git add`` exactly the planned paths must be staged.

Inputs git would misread are refused before anything runs
(:func:`input_problems`): a remote starting with ``-`` (an option to
``git fetch``/``git push``), a commit message that is empty once whitespace
is stripped (the commit uses ``--cleanup=whitespace``, so ``#`` lines are
kept, not stripped as comments), an author git would refuse.

Any failure after the checks (fast-forward, write, staging, commit, push,
including a refused push) puts the checkout back as it was before the run:
the branch at the commit it was at before any fast-forward, index and work
tree as in that commit, the files and directories the run created removed.
Only the remote-tracking branch keeps the fetched commit, as after a plain
``git fetch``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    InvalidInput,
    TenancyError,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops.tree_plan import Change

#: run(argv, environ_update) -> (rc, stdout, stderr), as AnsibleModule.run_command
Runner = Callable[..., tuple]

BASE_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C", "GIT_LITERAL_PATHSPECS": "1"}
DIRTY_SHOWN = 5
MODE_LINK, MODE_SUBMODULE, MODE_TREE = "120000", "160000", "040000"
#: what git strips from both ends of an author name or e-mail (ident.c, crud())
IDENT_CRUD = "".join(chr(c) for c in range(33)) + ".,:;<>\"\\'"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


def input_problems(message: str, remote: str | None, identity: tuple[str, str]) -> list[tuple[str, str]]:
    """The (option, cause) pairs git would misread or refuse; empty when all is well.  Pure."""
    problems = []
    if not isinstance(message, str) or not message.strip():
        problems.append(("commit_message", "must not be empty (or only whitespace)"))
    elif "\0" in message:
        problems.append(("commit_message", "must not contain a NUL character"))
    if remote:
        if remote.startswith("-"):
            problems.append(("remote", "%r starts with '-', which git would read as an option" % remote))
        elif any(char in remote for char in "\0\n\r"):
            problems.append(("remote", "%r contains a NUL or line break" % remote))
    for option, value in zip(("author_name", "author_email"), identity):
        if not isinstance(value, str) or not value.strip(IDENT_CRUD):
            problems.append((option, "%r is empty once git strips spaces and punctuation from its ends" % value))
        elif any(char in value for char in "<>\0\n\r"):
            problems.append((option, "%r contains <, >, a NUL or a line break, which git refuses" % value))
    return problems


def check_inputs(message: str, remote: str | None, identity: tuple[str, str]) -> None:
    """Raise one :class:`InvalidInput` naming the first bad option (see :func:`input_problems`)."""
    problems = input_problems(message, remote, identity)
    if problems:
        option, cause = problems[0]
        raise InvalidInput("option %s" % option, cause)


class GitCheckout:
    """The work tree at ``path``; ``identity`` sets author and committer (name, email)."""

    def __init__(self, path: str, run: Runner, identity: tuple[str, str] | None = None):
        self.path = os.path.abspath(path)
        self.obj = "Git checkout %s" % self.path
        self._run = run
        self.env = dict(BASE_ENV)
        #: the commit HEAD was at when :func:`prepare` looked (what a failure puts back)
        self.start: str | None = None
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

    def _entries(self, commit: str, args: Iterable[str], paths: list[str]) -> dict[str, str]:
        """path -> mode of ``git ls-tree <args> commit -- paths``."""
        listing = self.git("ls-tree", "-z", *args, commit, "--", *paths)[1]
        entries = {}
        for record in (r for r in listing.split("\0") if r):
            meta, _tab, path = record.partition("\t")
            entries[path] = meta.split(" ")[0]
        return entries

    def _refuse(self, path: str, what: str, where: str, target: str | None = None) -> InvalidInput:
        way = " (on the way to %r)" % target if target and target != path else ""
        return InvalidInput(
            self.obj,
            "%r is %s in %s%s; gitops_commit writes and removes only regular files in real directories of the "
            "checkout, so it refuses to go through it" % (path, what, where, way),
            dict(path=path),
        )

    def read_files(self, commit: str | None, directories: Iterable[str]) -> dict[str, str]:
        """Every file under ``directories`` in ``commit`` (none when the branch has no commit yet).

        Refuses (:class:`InvalidInput`) a directory, or a component on the way to it, that is a symbolic
        link, a submodule or a file in ``commit``, and a symbolic link or submodule anywhere under one.
        """
        if commit is None:
            return {}
        dirs = sorted(directories)
        if not dirs:
            return {}
        where = "commit %s" % commit[:12]
        entries = self._entries(commit, ("-r", "-t"), dirs)  # with -t: the trees on the way too
        # The first component of each directory that is not a tree of the commit: a link, a submodule,
        # a file, or nothing (the rest of the way is created).
        firsts = {}
        for directory in dirs:
            parts = directory.split("/")
            for index in range(len(parts)):
                prefix = "/".join(parts[: index + 1])
                if entries.get(prefix) != MODE_TREE:
                    firsts.setdefault(prefix, directory)
                    break
        found = self._entries(commit, (), sorted(firsts)) if firsts else {}
        for prefix, directory in sorted(firsts.items()):
            mode = found.get(prefix)
            if mode == MODE_LINK:
                raise self._refuse(prefix, "a symbolic link", where, directory)
            if mode == MODE_SUBMODULE:
                raise self._refuse(prefix, "a submodule", where, directory)
            if mode is not None:
                raise self._refuse(prefix, "a file, not a directory,", where, directory)
        files = {}
        for path, mode in sorted(entries.items()):
            if not any(path.startswith(d + "/") for d in dirs):
                continue
            if mode == MODE_LINK:
                raise self._refuse(path, "a symbolic link", where)
            if mode == MODE_SUBMODULE:
                raise self._refuse(path, "a submodule", where)
            if mode != MODE_TREE:
                files[path] = self.git("cat-file", "blob", "%s:%s" % (commit, path))[1]
        return files

    def check_work_tree(self, changes: Iterable[Change], strict: bool = False) -> None:
        """Refuse a symbolic link in the work tree on the way to, or at, a path of ``changes``.

        ``strict`` (the work tree is at the planned commit): also refuse a file to create that is
        already there (an ignored file it would overwrite) and a file to update or remove that is
        not a regular file.
        """
        for change in changes:
            parts = change.path.split("/")
            current = self.path
            for index, part in enumerate(parts):
                current = os.path.join(current, part)
                prefix = "/".join(parts[: index + 1])
                try:
                    mode = os.lstat(current).st_mode
                except FileNotFoundError:
                    break
                if stat.S_ISLNK(mode):
                    raise self._refuse(prefix, "a symbolic link", "the work tree", change.path)
                if index < len(parts) - 1 or not strict:
                    continue
                if change.before is None and not stat.S_ISDIR(mode):
                    raise InvalidInput(
                        self.obj,
                        "%r exists in the work tree but not in the commit it is planned against (an ignored "
                        "file?); remove it first" % change.path,
                        dict(path=change.path),
                    )
                if change.before is not None and not stat.S_ISREG(mode):
                    raise self._refuse(change.path, "not a regular file", "the work tree")

    # -- writing (never through a symbolic link) ------------------------------
    def _open_dirs(self, parts: list[str], created_dirs: list[str] | None) -> list[int]:
        """Descriptors of the top and of each directory of ``parts`` below it, each opened without following
        a link; missing ones are created when ``created_dirs`` is given (and recorded there)."""
        fds = [os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)]
        try:
            for index, part in enumerate(parts):
                prefix = "/".join(parts[: index + 1])
                try:
                    fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
                    continue
                except FileNotFoundError:
                    if created_dirs is None:
                        raise
                except OSError as error:
                    raise self._not_a_directory(prefix, fds[-1], part, error) from error
                os.mkdir(part, 0o777, dir_fd=fds[-1])
                created_dirs.append(prefix)
                fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
        except BaseException:
            _close(fds)
            raise
        return fds

    def _not_a_directory(self, prefix: str, dir_fd: int, name: str, error: OSError) -> TenancyError:
        try:
            mode = os.lstat(name, dir_fd=dir_fd).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode):
            return self._refuse(prefix, "a symbolic link", "the work tree")
        if error.errno in (errno.ENOTDIR, errno.ELOOP):
            return self._refuse(prefix, "not a directory", "the work tree")
        return BackendError(self.obj, "cannot open directory %r: %s" % (prefix, error.strerror))

    def _write_one(self, change: Change, created_files: list[str], created_dirs: list[str]) -> None:
        parts = change.path.split("/")
        fds = self._open_dirs(parts[:-1], created_dirs)
        name = parts[-1]
        try:
            try:
                mode = os.lstat(name, dir_fd=fds[-1]).st_mode
            except FileNotFoundError:
                mode = None
            if mode is not None and stat.S_ISLNK(mode):
                raise self._refuse(change.path, "a symbolic link", "the work tree")
            if change.after is None:
                if mode is None:
                    return
                if not stat.S_ISREG(mode):
                    raise self._refuse(change.path, "not a regular file", "the work tree")
                os.unlink(name, dir_fd=fds[-1])
                for index in range(len(parts) - 2, -1, -1):  # the directories it leaves empty
                    try:
                        os.rmdir(parts[index], dir_fd=fds[index])
                    except OSError:
                        break
                return
            if mode is not None and not stat.S_ISREG(mode):
                raise self._refuse(change.path, "not a regular file", "the work tree")
            flags = _FILE_FLAGS | (os.O_TRUNC if mode is not None else os.O_CREAT | os.O_EXCL)
            fd = os.open(name, flags, 0o666, dir_fd=fds[-1])
            if mode is None:
                created_files.append(change.path)
            with os.fdopen(fd, "wb") as handle:
                handle.write(change.after.encode("utf-8", "surrogateescape"))
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise self._refuse(change.path, "a symbolic link", "the work tree") from error
            raise BackendError(self.obj, "cannot write %r: %s" % (change.path, error.strerror)) from error
        finally:
            _close(fds)

    def write(self, changes: Iterable[Change], created_files: list[str], created_dirs: list[str]) -> None:
        """Apply ``changes`` to the work tree: removals first (the deepest first), then the writes.

        The files and directories created are appended to ``created_files`` and ``created_dirs``.
        """
        changes = list(changes)
        removals = sorted((c for c in changes if c.after is None), reverse=True)
        for change in removals + sorted(c for c in changes if c.after is not None):
            try:
                self._write_one(change, created_files, created_dirs)
            except OSError as error:  # opening the directories on the way
                raise BackendError(self.obj, "cannot write %r: %s" % (change.path, error.strerror)) from error

    def _remove_at(self, path: str, remove: Callable[[str, int], None]) -> None:
        """``remove(name, dir_fd)`` for the last part of ``path``, in its directory opened without following a link
        (best effort: a failure is ignored)."""
        parts = path.split("/")
        try:
            fds = self._open_dirs(parts[:-1], None)
        except (OSError, TenancyError):
            return
        try:
            remove(parts[-1], fds[-1])
        except OSError:
            pass
        finally:
            _close(fds)

    def remove_created(self, created_files: Iterable[str], created_dirs: Iterable[str]) -> None:
        """Remove the files and (then, when empty) the directories a failed run created."""
        for path in created_files:
            self._remove_at(path, _unlink_regular)
        for path in sorted(created_dirs, reverse=True):
            self._remove_at(path, lambda name, dir_fd: os.rmdir(name, dir_fd=dir_fd))

    def commit(self, paths: Iterable[str], message: str) -> str:
        """Stage exactly ``paths`` (written or removed files), check that nothing else is staged, commit."""
        paths = sorted(set(paths))
        self.git("add", "--all", "--force", "--", *paths)
        staged = sorted(
            p for p in self.git("diff", "--cached", "--no-renames", "--name-only", "-z")[1].split("\0") if p
        )
        if staged != paths:
            extra = [p for p in staged if p not in paths]
            missing = [p for p in paths if p not in staged]
            raise BackendError(
                self.obj,
                "git staged %s instead of the planned files (not planned: %s; planned but not staged: %s)"
                % ("other files" if extra else "fewer files", extra[:DIRTY_SHOWN], missing[:DIRTY_SHOWN]),
            )
        self.git("commit", "--quiet", "--no-verify", "--cleanup=whitespace", "-m", message)
        return self.out("rev-parse", "HEAD")

    def reset_hard(self, commit: str) -> None:
        self.git("reset", "--quiet", "--hard", commit)

    def restore(self, branch: str, created_files: Iterable[str], created_dirs: Iterable[str]) -> None:
        """Put the checkout back at :attr:`start` (see the file docstring)."""
        if self.start is not None:
            self.git("reset", "--quiet", "--hard", self.start)
        else:  # the branch had no commit: drop what we committed or staged
            if self.commit_of("HEAD") is not None:
                self.git("update-ref", "-d", "refs/heads/" + branch)
            self.git("read-tree", "--empty")
        self.remove_created(created_files, created_dirs)


def _unlink_regular(name: str, dir_fd: int) -> None:
    if stat.S_ISREG(os.lstat(name, dir_fd=dir_fd).st_mode):
        os.unlink(name, dir_fd=dir_fd)


def _close(fds: Iterable[int]) -> None:
    for fd in fds:
        os.close(fd)


def prepare(checkout: GitCheckout, remote: str | None, check_mode: bool) -> tuple[str, str | None]:
    """Check the checkout (see the file docstring); return (branch, the commit to plan against).

    Moves nothing: a checkout that is behind is fast-forwarded by :func:`commit_and_push`.
    ``check_mode`` is kept for the callers; the checks are the same in both modes.
    """
    del check_mode
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
    checkout.start = head
    if not remote:
        return branch, head
    if remote.startswith("-"):  # also refused as input; never handed to git as an option
        raise InvalidInput("option remote", "%r starts with '-', which git would read as an option" % remote)
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
    return branch, upstream


def commit_and_push(
    checkout: GitCheckout,
    changes: list[Change],
    message: str,
    remote: str | None,
    branch: str,
    base: str | None,
) -> str | None:
    """Fast-forward to ``base``, write ``changes``, commit them (nothing else is staged), push.

    Returns the new commit (``base`` when there is nothing to change). On any failure the checkout is
    put back as :func:`prepare` found it (:meth:`GitCheckout.restore`) and the error is raised.
    """
    created_files: list[str] = []
    created_dirs: list[str] = []
    try:
        if base is not None and base != checkout.start:
            checkout.git("merge", "--quiet", "--ff-only", base)
        if not changes:
            return base
        checkout.check_work_tree(changes, strict=True)
        checkout.write(changes, created_files, created_dirs)
        commit = checkout.commit([change.path for change in changes], message)
        if remote:
            rc, out, err = checkout.git("push", "--quiet", remote, "HEAD:refs/heads/%s" % branch, ok=range(256))
            if rc != 0:
                raise Conflict(
                    checkout.obj,
                    "push to %s/%s was refused, the local commit is undone; run again (%s)"
                    % (remote, branch, (err or out).strip()),
                )
        return commit
    except Exception as error:
        try:
            checkout.restore(branch, created_files, created_dirs)
        except (OSError, TenancyError) as second:
            cause = getattr(second, "cause", None) or str(second)
            raise BackendError(
                checkout.obj,
                "%s; putting the checkout back at %s failed too (%s): clean it up by hand"
                % (getattr(error, "cause", None) or error, checkout.start, cause),
            ) from error
        raise
