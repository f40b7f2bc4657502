#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: gitops_commit
short_description: Make directories of a Git checkout hold exactly the given files, commit and push
version_added: 0.1.0
description:
  - "Owns whole directories of a Git checkout (a cluster operator's GitOps repository): afterwards each directory of
    O(directories) holds exactly the files given for it, and a directory given as V(null) is gone. Nothing outside
    these directories is read, written or staged. When anything changed, it makes one commit and pushes it."
  - "Before anything is written: O(path) must be the top of a Git work tree, on a branch, with nothing uncommitted
    or untracked; with a O(remote), the branch is fetched, a checkout that is only behind is fast-forwarded, and a
    checkout with commits the remote does not have (ahead or diverged) is refused. Each refusal is one error naming
    the checkout and the cause, and changes nothing."
  - "The repository's content is not trusted: every path the module reads, writes or removes must stay inside the
    checkout. A symbolic link or a submodule on the way to a directory of O(directories) (or to one of its files), as
    the directory itself, or anywhere under it, in the commit the change is planned against (the fetched one, check
    mode included) or in the work tree, is refused with one error naming the checkout and the path, and nothing is
    written. The files are written and removed without following links (a link that appears during the run fails it
    instead of redirecting it), file names are literal to git (a name with C(*) or starting with C(:) is never a
    pattern), and exactly the planned files must be staged."
  - "Refused as bad input before anything runs: an empty O(commit_message) (or only whitespace; the commit keeps the
    message as given apart from leading and trailing blank lines and trailing spaces, so lines starting with C(#) are
    kept, not stripped as comments), one with a NUL character; a O(remote) starting with C(-) (git would read it as an
    option), or with a NUL or line break; an O(author_name) or O(author_email) that is empty once git strips spaces
    and punctuation from its ends, or that holds C(<), C(>), a NUL or a line break."
  - "Any failure after the checks (the fast-forward, a write, C(git add), the commit or the push, a refused push
    included) puts the checkout back as it was before the task: the branch at the commit it was at before any
    fast-forward, the index and the work tree as in that commit, and the files and directories the task created
    removed. Only the remote-tracking branch keeps the fetched commit, as after a plain C(git fetch), so a new run
    starts from a clean checkout."
  - Files are compared with the commit the checkout is planned against, so a second run with the same input
    changes nothing.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
attributes:
  check_mode:
    support: full
    details:
      - Fetches (with a O(remote)) but neither moves the branch, writes, commits nor pushes; the result says what
        would change. The checks for links and submodules are the same as in a normal run.
  diff_mode:
    support: full
    details:
      - One diff per file that changes, against the commit the change would be made on.
options:
  path:
    description: The top directory of the Git work tree.
    type: path
    required: true
  directories:
    description:
      - Directories relative to O(path) (with C(/) as separator, no C(..), not under C(.git)), each mapped to the
        files it must hold (C({relative file name&colon; text})), or to V(null) to remove the directory.
      - No directory may lie inside another one of the same call.
    type: dict
    required: true
  commit_message:
    description: The commit message.
    type: str
    required: true
  remote:
    description:
      - The remote to fetch from and push to; the branch checked out is pushed to the branch of the same name.
      - V(null) (or an empty string) commits locally only, without fetching.
      - A value starting with C(-) is refused.
    type: str
    default: origin
  author_name:
    description: Author and committer name of the commit.
    type: str
    default: baremetal.tenancy
  author_email:
    description: Author and committer e-mail of the commit.
    type: str
    default: baremetal-tenancy@localhost
requirements:
  - the C(git) command on the host the module runs on
"""

EXAMPLES = r"""
- name: Put a tenant's directory into the cluster repository and remove an old one
  baremetal.tenancy.gitops_commit:
    path: /srv/fleet-infra
    directories:
      tenants/team-a:
        namespace.yaml: "{{ lookup('ansible.builtin.file', 'team-a-namespace.yaml') }}"
      tenants/team-old: null
    commit_message: "tenants: onboard team-a, offboard team-old"
"""

RETURN = r"""
commit:
  description: The commit made, or the commit the checkout was already at when nothing changed (null on an empty branch).
  returned: success, not in check mode
  type: str
  sample: 3f1c2a9e5d0b7c4e1f2a3b4c5d6e7f8091a2b3c4
base:
  description: The commit the change was planned against (the remote's branch head after the fetch, with a remote).
  returned: success
  type: str
  sample: 1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d
branch:
  description: The branch committed to.
  returned: success
  type: str
  sample: main
files:
  description: The files changed (or that would change in check mode), each with its path and V(create), V(update) or V(remove).
  returned: success
  type: list
  elements: dict
  sample: [{path: tenants/team-a/namespace.yaml, action: create}]
pushed:
  description: Whether a commit was pushed to O(remote).
  returned: success
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import TenancyError
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops.checkout import (
    GitCheckout,
    check_inputs,
    commit_and_push,
    prepare,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops.tree_plan import (
    desired_files,
    diff_entries,
    plan,
    summary,
)


def run(module):
    params = module.params
    remote = params["remote"] or None
    identity = (params["author_name"], params["author_email"])
    check_inputs(params["commit_message"], remote, identity)
    wanted = desired_files(params["directories"])
    checkout = GitCheckout(params["path"], module.run_command, identity)
    branch, base = prepare(checkout, remote, module.check_mode)
    changes = plan(checkout.read_files(base, wanted), wanted)
    checkout.check_work_tree(changes)
    result = dict(changed=bool(changes), base=base, branch=branch, files=summary(changes), pushed=False)
    if module._diff:  # pylint: disable=protected-access
        result["diff"] = diff_entries(changes)
    if module.check_mode:
        return result
    result["commit"] = commit_and_push(checkout, changes, params["commit_message"], remote, branch, base)
    result["pushed"] = bool(remote and changes)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            directories=dict(type="dict", required=True),
            commit_message=dict(type="str", required=True),
            remote=dict(type="str", default="origin"),
            author_name=dict(type="str", default="baremetal.tenancy"),
            author_email=dict(type="str", default="baremetal-tenancy@localhost"),
        ),
        supports_check_mode=True,
    )
    try:
        result = run(module)
    except TenancyError as error:
        module.fail_json(msg=error.message, object=error.obj, cause=error.cause, **error.details)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
