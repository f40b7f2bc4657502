# -*- coding: utf-8 -*-
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The metal3 side of host_claim, host_claim_info and host_release.

Each entry point takes the running module (a TenancyModule): it reads
``mod.params``, honours ``mod.check_mode``, reports with ``mod.changed()``
and ``mod.set_diff()``, and fills ``mod.result``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.baremetal.tenancy.plugins.module_utils.errors import InvalidInput


def run_host_claim(mod):
    raise InvalidInput("backend metal3", "host_claim is not implemented yet")


def claim_info(mod):
    raise InvalidInput("backend metal3", "host_claim_info is not implemented yet")


def run_host_release(mod):
    raise InvalidInput("backend metal3", "host_release is not implemented yet")
