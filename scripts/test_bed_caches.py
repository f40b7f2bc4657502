#!/usr/bin/env python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test bed: work every Ansible process repeats on the same input, done once per run.

The integration suites start ``ansible-playbook`` about 840 times and their modules about 2,400 times; three
steps of these processes gave the same result every time:

- **The modules' compiled Python.** AnsiballZ runs a module from a zip of its source (the module,
  ``ansible.module_utils`` and the collections' ``module_utils`` it imports) that Python's ``zipimport`` compiles
  afresh at every import (Python 3.11 even compiles each source twice: once for the module spec's file name, once
  to run it); a zip of sources has no ``__pycache__``. Measured on an idle machine: the ``ping`` module's process
  0.25 s of CPU, 0.13 s with this cache; an Ironic ``host_claim_info`` 0.94 s, 0.75 s. ``zipimport``'s compile step
  keeps each code object under ``code-<bytecode magic>/``, keyed by the source's BLAKE2 digest and its path inside
  the zip; a later import of the same source loads that code object, its file name set to the path it is imported
  from (as a ``.pyc`` would).
- **The collections' routing metadata.** Every controller process parses ``ansible.builtin``'s routing
  (``ansible_builtin_runtime.yml``, 9,748 lines) and the ``meta/runtime.yml`` of each collection it loads from.
  ansible-core's ``_meta_yml_to_dict`` says it "may be monkeypatched to another implementation by some tools" to
  cache its output; here its result (plain dicts, lists and strings: it parses with ``BaseLoader``) is kept under
  ``runtime-yml/``, keyed by the YAML text's BLAKE2 digest.
- **The modules' payloads.** Each ``ansible-playbook`` run gathers the sources of each module it runs
  (``module_common.recursive_finder``: the module's imports followed through ``ansible.module_utils`` and the
  collections' ``module_utils``, every source parsed to find its own): 0.22 s of CPU for ``ping``, 0.40-0.47 s for
  the collection's modules, once per module per run. The list of sources it put in the zip is kept under
  ``ansiballz/``, keyed by the module's text, ansible-core's version and the existing directories where module_utils
  and collections are looked up (the harness's collection tree is a new directory in each pytest process, so an
  entry serves the session that made it); a later build reads each listed file again and uses the list only if every
  file still has the digest it had, else gathers afresh. A build with an AnsiballZ extension on (the debugger,
  coverage) is not cached.

Installed into the test venv and the modules' venv by ``make venv`` (``python scripts/test_bed_caches.py
--install``: a copy of this file as ``bmt_test_bed_caches.py`` in site-packages and a ``.pth`` line importing it at
start-up), it does nothing unless the environment variable ``BMT_TEST_BED_CACHE`` names a directory; the integration
harness sets it for the Ansible processes it starts (``tests/integration/harness/ansible.py``). What runs is the
same source and the same routing; only their compile, parse and gathering are skipped. Nothing of Ansible or of the
collection is changed on disk, and a process without the variable (a user's, the sanity and unit tests) is
untouched.
"""

from __future__ import annotations

import os
import sys

VARIABLE = "BMT_TEST_BED_CACHE"
MODULE = "bmt_test_bed_caches"
META_MODULE = "ansible.utils.collection_loader._collection_meta"
PAYLOAD_MODULE = "ansible.executor.module_common"


def _digest(*parts: bytes) -> str:
    import hashlib

    key = hashlib.blake2b(digest_size=20)
    for part in parts:
        key.update(part)
    return key.hexdigest()


def _load(path: str):
    """The marshalled value in ``path``, or ``None`` when it is missing or unreadable."""
    import marshal

    try:
        with open(path, "rb") as stored:
            return marshal.loads(stored.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def _store(path: str, value) -> None:
    """Write ``value`` marshalled to ``path`` atomically; a cache that cannot be written is skipped."""
    import marshal

    try:
        data = marshal.dumps(value)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = "%s.%d.tmp" % (path, os.getpid())
        with open(partial, "wb") as out:
            out.write(data)
        os.replace(partial, path)
    except (OSError, ValueError):
        pass


def cache_module_code(root: str) -> None:
    """Wrap ``zipimport._compile_source`` with the cache under ``root``."""
    import _imp
    import types
    import zipimport
    from importlib.util import MAGIC_NUMBER

    compile_source = zipimport._compile_source
    if getattr(compile_source, "_bmt_cached", False):
        return
    directory = os.path.join(root, "code-" + MAGIC_NUMBER.hex())
    seen = {}  # this process's, for zipimport's second compile of the same source

    def cached_compile(pathname: str, source: bytes):
        inner = pathname.rsplit(".zip" + os.sep, 1)[-1]
        name = _digest(source, inner.encode("utf-8", "surrogateescape"))
        code = seen.get(name)
        if code is None:
            path = os.path.join(directory, name)
            code = _load(path)
            if not isinstance(code, types.CodeType):
                code = seen[name] = compile_source(pathname, source)
                _store(path, code)
                return code
            seen[name] = code
        _imp._fix_co_filename(code, pathname)
        return code

    cached_compile._bmt_cached = True
    zipimport._compile_source = cached_compile


def cache_routing_metadata(meta_module, root: str) -> None:
    """Wrap ``_meta_yml_to_dict`` of ansible-core's collection loader with the cache under ``root``."""
    parse = meta_module._meta_yml_to_dict
    if getattr(parse, "_bmt_cached", False):
        return
    directory = os.path.join(root, "runtime-yml")

    def cached_parse(yaml_string_data, content_id):
        data = yaml_string_data.encode("utf-8") if isinstance(yaml_string_data, str) else bytes(yaml_string_data)
        path = os.path.join(directory, _digest(data))
        routing = _load(path)
        if isinstance(routing, dict):
            return routing
        routing = parse(yaml_string_data, content_id)
        _store(path, dict(routing))
        return routing

    cached_parse._bmt_cached = True
    meta_module._meta_yml_to_dict = cached_parse


class _AfterImport:
    """A one-shot meta path finder: lets ``name`` be imported as usual, then calls ``then(module)``."""

    def __init__(self, name: str, then) -> None:
        self.name = name
        self.then = then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module
        then = self.then

        def exec_then(module):
            exec_module(module)
            then(module)

        spec.loader.exec_module = exec_then
        return spec


def _payload_key(module_common, name, module_fqn, module_data) -> str:
    """What decides which sources ``recursive_finder`` puts in a payload: the module's name and text, ansible-core's
    version, the existing directories where module_utils and collections are looked up (the harness's collection
    tree is a new temporary directory in each pytest process, so an entry is only ever reused inside the session that
    made it)."""
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    # Only the directories that exist can hold a source: a playbook's own ``collections`` directory is on the
    # collection search path whether or not it exists, and the harness writes each playbook in a new directory.
    paths = [p for p in module_common.module_utils_loader._get_paths(subdirs=False) if os.path.isdir(p)]
    collections = [p for p in AnsibleCollectionConfig.collection_paths if os.path.isdir(p)]
    where = [module_common.__version__, name, module_fqn, *paths, "|", *collections, "|", *sys.path]
    data = module_data if isinstance(module_data, bytes) else module_data.encode("utf-8", "surrogateescape")
    return _digest(data, "\0".join(where).encode("utf-8", "surrogateescape"))


def _replay(entries, module_common, zf, date_time) -> bool:
    """Write the recorded ``entries`` into ``zf``; ``False`` (nothing written) when a source file changed."""
    sources = []
    for arcname, path, digest, inline in entries:
        data = inline
        if path:
            try:
                with open(path, "rb") as source:
                    data = source.read()
            except OSError:
                return False
            if _digest(data) != digest:
                return False
        sources.append((arcname, data))
    for arcname, data in sources:
        zf.writestr(module_common._make_zinfo(arcname, date_time, zf=zf), data)
    return True


class _Recorder:
    """Stands for the payload's ``ZipFile`` during ``recursive_finder``: passes each ``writestr`` on and notes it."""

    def __init__(self, zf) -> None:
        self._zf = zf
        self.written = []

    def writestr(self, zinfo, data, *args, **kwargs):
        self.written.append((zinfo.filename, data))
        return self._zf.writestr(zinfo, data, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._zf, name)


def _entries(written, origin_tag):
    """The recorded sources as ``(name in zip, file, digest, None)`` when they are a file's text as it is on disk,
    else ``(name in zip, None, None, bytes)`` (ansible-core's own package stubs, redirect shims)."""
    entries = []
    for arcname, written_data in written:
        path = getattr(origin_tag.get_tag(written_data), "path", None)
        # writestr's encoding of a str
        data = written_data.encode("utf-8") if isinstance(written_data, str) else bytes(written_data)
        if path:
            try:
                with open(path, "rb") as source:
                    if source.read() == data:
                        entries.append((arcname, path, _digest(data), None))
                        continue
            except OSError:
                pass
        entries.append((arcname, None, None, data))
    return entries


def cache_module_payloads(module_common, root: str) -> None:
    """Wrap ``recursive_finder`` of ansible-core's ``module_common`` with the cache under ``root``."""
    find = module_common.recursive_finder
    if getattr(find, "_bmt_cached", False):
        return
    directory = os.path.join(root, "ansiballz")
    metadata_v1 = module_common.ModuleMetadataV1

    def cached_find(name, module_fqn, module_data, zf, date_time, extension_manager):
        if extension_manager.extension_names:  # a debugger or coverage: built as ansible-core builds it
            return find(name, module_fqn, module_data, zf, date_time, extension_manager)
        path = os.path.join(directory, _payload_key(module_common, name, module_fqn, module_data))
        stored = _load(path)
        if isinstance(stored, tuple) and len(stored) == 2 and _replay(stored[1], module_common, zf, date_time):
            return metadata_v1(serialization_profile=stored[0])
        recorder = _Recorder(zf)
        metadata = find(name, module_fqn, module_data, recorder, date_time, extension_manager)
        if isinstance(metadata, metadata_v1):
            _store(path, (metadata.serialization_profile, _entries(recorder.written, module_common.Origin)))
        return metadata

    cached_find._bmt_cached = True
    module_common.recursive_finder = cached_find


def _after_import(name: str, then) -> None:
    """``then(module)`` once ``name`` is imported (now, if it already is)."""
    if name in sys.modules:
        then(sys.modules[name])
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


def install_hooks(root: str) -> None:
    cache_module_code(root)
    _after_import(META_MODULE, lambda module: cache_routing_metadata(module, root))
    _after_import(PAYLOAD_MODULE, lambda module: cache_module_payloads(module, root))


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
    install_hooks(os.environ[VARIABLE])
