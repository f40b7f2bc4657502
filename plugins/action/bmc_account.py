# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of bmc_account: hide the task's output when it carries a password.

A module cannot mark its own result as ``no_log`` (ansible-core strips
``_ansible_*`` keys from module returns), an action plugin can: the result
registered by the task keeps the password (returned once), while every
callback, at any verbosity, only shows that the output was hidden.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp: str | None = None, task_vars: dict | None = None) -> dict:
        result = super().run(tmp, task_vars)
        del tmp
        result.update(self._execute_module(module_args=self._task.args, task_vars=task_vars))
        if result.get("password"):
            result["_ansible_no_log"] = True
        return result
