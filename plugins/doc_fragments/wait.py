# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  wait:
    description:
      - Whether to wait until the object reaches the state the module documents.
    type: bool
    default: false
  wait_timeout:
    description:
      - How long to wait, in seconds, when O(wait=true). Zero or more.
    type: int
    default: 600
"""
