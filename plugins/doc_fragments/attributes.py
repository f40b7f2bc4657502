# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


class ModuleDocFragment:
    """The ``attributes`` every module documents, written once.

    A module extends ``baremetal.tenancy.attributes`` (check_mode and
    diff_mode), ``baremetal.tenancy.attributes.platform`` (where it runs) and,
    for a module that only reads, ``baremetal.tenancy.attributes.info_module``;
    its own ``attributes:`` then only gives ``support`` and ``details``.
    """

    # Standard documentation fragment
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check mode), when in diff mode.
"""

    PLATFORM = r"""
options: {}
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
    details:
      - The module talks to the control plane's API (and to BMCs) from the host it runs on, usually C(localhost);
        it needs the Python libraries listed in the requirements there, not on the bare-metal hosts.
"""

    # Should be used together with the standard fragment
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
"""
