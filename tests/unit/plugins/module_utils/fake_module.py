# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the module_utils use of a module (``common.base``): check mode, the result, ``changed`` and ``warn``."""


class FakeModule:
    def __init__(self, check_mode=False):
        self.check_mode = check_mode
        self.result = {"changed": False}
        self.warnings = []

    def changed(self, value=True):
        self.result["changed"] = self.result["changed"] or bool(value)

    def warn(self, message):
        self.warnings.append(message)
