# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The real ``git`` for the checkout tests: an identity, no user or system configuration, and the runner."""

import os
import subprocess

IDENTITY = ("tester", "tester@example.invalid")
ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": IDENTITY[0],
    "GIT_AUTHOR_EMAIL": IDENTITY[1],
    "GIT_COMMITTER_NAME": IDENTITY[0],
    "GIT_COMMITTER_EMAIL": IDENTITY[1],
}


def run(argv, environ_update=None):
    """As ``AnsibleModule.run_command``: (rc, stdout, stderr)."""
    env = {**os.environ, **ENV, **(environ_update or {})}
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    return result.returncode, result.stdout, result.stderr


def git(*args):
    rc, out, err = run(["git", *args])
    assert rc == 0, err
    return out.strip()
