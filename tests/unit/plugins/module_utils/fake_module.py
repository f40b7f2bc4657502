# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the module_utils use of a module (``common.base``): params, check mode, the result, ``changed``, ``warn``
and ``set_diff``."""


class FakeModule:
    def __init__(self, check_mode=False, **params):
        self.params = params
        self.check_mode = check_mode
        self.result = {"changed": False}
        self.warnings = []

    def changed(self, value=True):
        self.result["changed"] = self.result["changed"] or bool(value)

    def warn(self, message):
        self.warnings.append(message)

    def set_diff(self, before, after):
        self.result["diff"] = {"before": before, "after": after}
