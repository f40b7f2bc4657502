#!/usr/bin/env python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test bed: the Python of Ansible's modules compiled once per run, not once per task.

AnsiballZ runs a module from a zip of its source (the module, ``ansible.module_utils`` and the collections'
``module_utils`` it imports) that Python's ``zipimport`` compiles afresh at every import: a zip of sources has no
``__pycache__``. In this test bed, where the same modules run thousands of times, that compile was about a third of
each module process's CPU (Python 3.11's ``zipimport`` even compiles each source twice, once for the module spec's
file name and once to run it).

Installed into the test venv by ``make venv`` (``python scripts/module_code_cache.py --install``: a copy of this file
as ``bmt_module_code_cache.py`` in site-packages and a ``.pth`` line importing it), it does nothing unless the
environment variable ``BMT_MODULE_CODE_CACHE`` names a directory; the integration harness sets it for the
``ansible-playbook`` runs it starts (``tests/integration/harness/ansible.py``). Then ``zipimport``'s compile step keeps
each code object there, keyed by the interpreter's bytecode magic number, the source's BLAKE2 digest and its path
inside the zip, and a later import of the same source loads that code object, its file name set to the path it is
imported from (as a ``.pyc`` would). What runs is the same source; only its compile is skipped. Nothing of Ansible or of
the collection is changed, and a run without the variable (a user's, the sanity and unit tests) is untouched.
"""

from __future__ import annotations

import os
import sys

VARIABLE = "BMT_MODULE_CODE_CACHE"
MODULE = "bmt_module_code_cache"


def install_hook(root: str) -> None:
    """Wrap ``zipimport._compile_source`` with the cache under ``root``."""
    import _imp
    import hashlib
    import marshal
    import zipimport
    from importlib.util import MAGIC_NUMBER

    compile_source = zipimport._compile_source
    if getattr(compile_source, "_bmt_cached", False):
        return
    directory = os.path.join(root, MAGIC_NUMBER.hex())

    seen = {}  # this process's: zipimport compiles a module twice per import (for its spec's file name, then to run)

    def cached_compile(pathname: str, source: bytes):
        key = hashlib.blake2b(source, digest_size=20)
        key.update(pathname.rsplit(".zip" + os.sep, 1)[-1].encode("utf-8", "surrogateescape"))
        name = key.hexdigest()
        code = seen.get(name)
        if code is None:
            path = os.path.join(directory, name)
            try:
                with open(path, "rb") as cached:
                    code = marshal.loads(cached.read())
            except (OSError, EOFError, ValueError, TypeError):
                code = seen[name] = compile_source(pathname, source)
                try:
                    os.makedirs(directory, exist_ok=True)
                    partial = "%s.%d.tmp" % (path, os.getpid())
                    with open(partial, "wb") as out:
                        out.write(marshal.dumps(code))
                    os.replace(partial, path)
                except OSError:
                    pass
                return code
            seen[name] = code
        _imp._fix_co_filename(code, pathname)
        return code

    cached_compile._bmt_cached = True
    zipimport._compile_source = cached_compile


def install(site_packages: str) -> None:
    """Copy this file into ``site_packages`` and add the ``.pth`` line that imports it at start-up."""
    with open(__file__, encoding="utf-8") as source:
        text = source.read()
    with open(os.path.join(site_packages, MODULE + ".py"), "w", encoding="utf-8") as copy:
        copy.write(text)
    with open(os.path.join(site_packages, MODULE + ".pth"), "w", encoding="utf-8") as pth:
        pth.write("import %s\n" % MODULE)


if __name__ == "__main__":
    if sys.argv[1:] != ["--install"]:
        sys.exit("usage: %s --install  (into the site-packages of the Python that runs it)" % sys.argv[0])
    import sysconfig

    install(sysconfig.get_paths()["purelib"])
elif os.environ.get(VARIABLE):
    install_hook(os.environ[VARIABLE])
