"""gitops_commit on an operator's repository whose content is not trusted, run as a user runs it.

Each test runs ``ansible-playbook`` with a ``baremetal.tenancy.gitops_commit`` task on a checkout of a bare
repository (the remote) on this machine; no other service. What anyone who can push to that repository can do must
not reach outside the checkout, and a task that fails must leave the checkout as it was, so the next run works:

- a committed symbolic link to a directory outside the checkout, arriving with the fetched commit: the task fails
  once, in check mode and in a real run, naming the checkout and the link; the checkout (HEAD, branches, index,
  ``git status``, every file), the remote and the outside file are unchanged;
- a push the remote refuses (a pre-receive hook): the task fails, the checkout is as before the task (not even the
  fast-forward stays), and the next run, once the remote accepts, commits and pushes;
- a commit message of ``#`` lines only (which git's default cleanup turned into an empty message) is committed as
  given; an empty one is refused before anything is written.

Not marked: no services, so it runs in the plain session.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from fixtures_faults import has_traceback
from harness.ansible import localhost_play, run_playbook

OUTSIDE_TEXT = "the controller's own file\n"
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(*argv: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=operator", "-c", "user.email=operator@localhost", *argv],
        cwd=cwd,
        env=dict(os.environ, **GIT_ENV),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def commit_all(top: Path, message: str) -> None:
    git("add", "--all", cwd=top)
    git("commit", "--quiet", "-m", message, cwd=top)
    git("push", "--quiet", "origin", "HEAD:refs/heads/main", cwd=top)


class Repo:
    """A bare remote, the operator's checkout (``checkout``), a second clone someone else pushes from (``other``)
    and a directory outside both holding a file."""

    def __init__(self, tmp: Path):
        self.remote = tmp / "fleet.git"
        git("init", "--quiet", "--bare", "--initial-branch=main", str(self.remote))
        self.checkout = tmp / "fleet"
        git("clone", "--quiet", str(self.remote), str(self.checkout))
        (self.checkout / "tenants" / "team-a").mkdir(parents=True)
        (self.checkout / "tenants" / "team-a" / "namespace.yaml").write_text("kind: Namespace\n")
        commit_all(self.checkout, "start")
        self.other = tmp / "other"
        git("clone", "--quiet", str(self.remote), str(self.other))
        self.outside = tmp / "controller-etc"
        self.outside.mkdir()
        (self.outside / "namespace.yaml").write_text(OUTSIDE_TEXT)

    def state(self) -> dict:
        """HEAD, branch heads, index, ``git status`` with ignored files, every file; the remote's head; the
        outside directory."""
        files = []
        for root, dirs, names in os.walk(self.checkout):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in sorted(dirs + names):
                path = Path(root, name)
                mode = path.lstat().st_mode
                kind = "link" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else "file"
                files.append((str(path), kind, path.read_text() if kind == "file" else ""))
        return dict(
            head=git("rev-parse", "HEAD", cwd=self.checkout),
            branches=git("for-each-ref", "refs/heads", cwd=self.checkout),
            index=git("ls-files", "--stage", cwd=self.checkout),
            status=git("status", "--porcelain", "--ignored", "--untracked-files=all", cwd=self.checkout),
            files=files,
            remote=git("--git-dir", str(self.remote), "rev-parse", "main"),
            outside=sorted((p.name, p.read_text()) for p in self.outside.iterdir()),
        )


@pytest.fixture
def repo(tmp_path) -> Repo:
    return Repo(tmp_path)


def commit_task(repo: Repo, directories: dict, message: str = "tenants: onboard team-b") -> dict:
    return {
        "name": "commit",
        "baremetal.tenancy.gitops_commit": {
            "path": str(repo.checkout),
            "directories": directories,
            "commit_message": message,
        },
    }


def run(repo: Repo, workdir: Path, task: dict, check: bool = False):
    return run_playbook(localhost_play([task]), dict(os.environ, **GIT_ENV), workdir, check=check, diff=True)


def failed_once(run_result) -> str:
    """The one failed task's message (no traceback anywhere)."""
    assert not run_result.ok, run_result.explain()
    failures = run_result.failures()
    assert len(failures) == 1, failures
    result = run_result.result("commit")
    assert result.get("changed") in (None, False), result
    assert not has_traceback(run_result.stdout + run_result.stderr, str(result)), run_result.explain()
    return result["msg"]


@pytest.mark.parametrize("check", [True, False], ids=["check-mode", "run"])
def test_a_link_to_outside_arriving_with_the_fetch_is_refused_and_nothing_changes(repo, tmp_path, check):
    # someone who can push links tenants/team-b to a directory of the machine that runs the playbook
    (repo.other / "tenants" / "team-b").symlink_to(repo.outside, target_is_directory=True)
    commit_all(repo.other, "innocent-looking change")
    before = repo.state()
    task = commit_task(repo, {"tenants/team-b": {"namespace.yaml": "kind: Namespace\nmetadata: {name: pwned}\n"}})
    message = failed_once(run(repo, tmp_path / "play", task, check=check))
    assert message.startswith("Git checkout %s: 'tenants/team-b' is a symbolic link in commit " % repo.checkout)
    assert "refuses to go through it" in message
    assert repo.state() == before
    assert (repo.outside / "namespace.yaml").read_text() == OUTSIDE_TEXT


def test_a_refused_push_leaves_the_checkout_as_it_was_and_the_next_run_works(repo, tmp_path):
    (repo.other / "tenants" / "team-c").mkdir(parents=True)
    (repo.other / "tenants" / "team-c" / "namespace.yaml").write_text("kind: Namespace\n")
    commit_all(repo.other, "team-c")  # the checkout is behind: the task fast-forwards it first
    hook = repo.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'refused by the review policy' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = repo.state()
    task = commit_task(repo, {"tenants/team-b/deep": {"namespace.yaml": "kind: Namespace\n"}, "tenants/team-a": None})
    message = failed_once(run(repo, tmp_path / "refused", task))
    assert "push to origin/main was refused, the local commit is undone; run again" in message
    assert "refused by the review policy" in message
    assert repo.state() == before
    hook.unlink()
    again = run(repo, tmp_path / "again", task)
    assert again.ok, again.explain()
    result = again.result("commit")
    assert result["changed"] and result["pushed"]
    assert git("--git-dir", str(repo.remote), "rev-parse", "main") == result["commit"]
    listed = git("ls-tree", "-r", "--name-only", "main", cwd=repo.remote).split("\n")
    assert listed == ["tenants/team-b/deep/namespace.yaml", "tenants/team-c/namespace.yaml"]


def test_a_message_of_comment_lines_is_kept_and_an_empty_one_refused(repo, tmp_path):
    before = repo.state()
    empty = commit_task(repo, {"tenants/team-b": {"namespace.yaml": "kind: Namespace\n"}}, message="  \n")
    message = failed_once(run(repo, tmp_path / "empty", empty))
    assert message == "option commit_message: must not be empty (or only whitespace)"
    assert repo.state() == before
    comments = commit_task(repo, {"tenants/team-b": {"namespace.yaml": "kind: Namespace\n"}}, message="# team-b\n")
    done = run(repo, tmp_path / "comments", comments)
    assert done.ok, done.explain()
    assert git("log", "-1", "--format=%B", "main", cwd=repo.remote) == "# team-b"
