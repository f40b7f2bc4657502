"""The test bed's caches (scripts/test_bed_caches.py). Compiled module code: a module imported from a zip, as AnsiballZ
runs it, is compiled once and then loaded; a changed source is compiled again; tracebacks name the zip it is imported
from. Routing metadata: ansible-core's _meta_yml_to_dict parses a runtime.yml once, a changed one again, and returns
what it would have returned. Nothing happens without BMT_TEST_BED_CACHE. Each case runs a fresh interpreter, as an
Ansible process does."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test_bed_caches.py"

# Counts Python's own compiles of zipped sources, runs the hook as the .pth line does at start-up, then imports
# ``pkg.mod`` from the zip given and prints what the import produced: the module's value, the file its code names and
# how many sources were compiled.
PROBE = """
import json, runpy, sys, zipimport
compiled = []
inner = zipimport._compile_source
def counting(pathname, source):
    compiled.append(pathname)
    return inner(pathname, source)
zipimport._compile_source = counting
%(start_up)s
sys.path.insert(0, sys.argv[1])
from pkg import mod
try:
    mod.fail()
except RuntimeError as exc:
    frame = exc.__traceback__.tb_next.tb_frame
    where = frame.f_code.co_filename
print(json.dumps({"value": mod.VALUE, "file": mod.__file__, "code_file": where, "compiled": len(compiled)}))
"""


def write_zip(path: Path, value: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("pkg/__init__.py", "")
        zf.writestr("pkg/mod.py", "VALUE = %r\n\ndef fail():\n    raise RuntimeError(VALUE)\n" % value)
    return path


def run_probe(code: str, argument: Path, cache: Path | None) -> dict:
    """Run ``code`` in a fresh interpreter, where ``%(start_up)s`` runs this tree's hook as the ``.pth`` line does at
    start-up, with ``BMT_TEST_BED_CACHE`` set to ``cache`` (unset for ``None``); its JSON output. The variable is set
    only then, so a copy installed in this interpreter's site-packages (make venv's) stays inert and the file under
    test is the tree's."""
    env = {k: v for k, v in os.environ.items() if k != "BMT_TEST_BED_CACHE"}
    start_up = "import os, runpy\n"
    if cache is not None:
        start_up += "os.environ[%r] = %r\n" % ("BMT_TEST_BED_CACHE", str(cache))
    start_up += "runpy.run_path(%r, run_name=%r)" % (str(SCRIPT), "bmt_test_bed_caches")
    out = subprocess.run(
        [sys.executable, "-c", code % {"start_up": start_up}, str(argument)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(out.stdout)


def probe(zip_path: Path, cache: Path | None) -> dict:
    return run_probe(PROBE, zip_path, cache)


def cached_files(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file())


def test_second_import_loads_the_cached_code(tmp_path):
    cache = tmp_path / "cache"
    first = probe(write_zip(tmp_path / "a.zip", "one"), cache)
    assert first["value"] == "one"
    assert first["compiled"] == 2  # pkg/__init__.py and pkg/mod.py, once each (zipimport alone compiles each twice)
    assert len(cached_files(cache)) == 2
    second = probe(write_zip(tmp_path / "b.zip", "one"), cache)
    assert second["value"] == "one"
    assert second["compiled"] == 0


def test_code_loaded_from_the_cache_names_the_zip_it_is_imported_from(tmp_path):
    cache = tmp_path / "cache"
    probe(write_zip(tmp_path / "first.zip", "same"), cache)
    later = probe(write_zip(tmp_path / "later.zip", "same"), cache)
    expected = str(tmp_path / "later.zip" / "pkg" / "mod.py")
    assert later["compiled"] == 0
    assert later["file"] == expected
    assert later["code_file"] == expected  # the traceback points at the zip of this run, not the first one


def test_a_changed_source_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    probe(write_zip(tmp_path / "v1.zip", "one"), cache)
    changed = probe(write_zip(tmp_path / "v2.zip", "two"), cache)
    assert changed["value"] == "two"
    assert changed["compiled"] == 1  # pkg/mod.py; the empty pkg/__init__.py is unchanged
    assert len(cached_files(cache)) == 3


def test_without_the_variable_nothing_is_cached(tmp_path):
    plain = probe(write_zip(tmp_path / "a.zip", "one"), None)
    again = probe(write_zip(tmp_path / "a.zip", "one"), None)
    assert plain["compiled"] == again["compiled"] >= 2  # Python 3.11's zipimport compiles each source twice
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zip"]


@pytest.mark.parametrize(
    "content", [b"not marshal data", marshal.dumps("a string, not code")], ids=["garbage", "not-code"]
)
def test_an_unreadable_cache_entry_is_compiled_and_replaced(tmp_path, content):
    cache = tmp_path / "cache"
    probe(write_zip(tmp_path / "a.zip", "one"), cache)
    for entry in cached_files(cache):
        entry.write_bytes(content)
    result = probe(write_zip(tmp_path / "b.zip", "one"), cache)
    assert result["value"] == "one"
    assert result["compiled"] == 2
    assert probe(write_zip(tmp_path / "c.zip", "one"), cache)["compiled"] == 0


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache directory would be")
    result = probe(write_zip(tmp_path / "a.zip", "one"), blocker / "cache")
    assert result["value"] == "one"
    assert result["compiled"] == 2  # each source compiled once, kept for the process
    assert probe(write_zip(tmp_path / "b.zip", "one"), blocker / "cache")["compiled"] == 2


def test_install_writes_the_module_and_the_pth_line(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import runpy; ns = runpy.run_path(%r, run_name='x'); ns['install'](%r)" % (str(SCRIPT), str(tmp_path)),
        ],
        check=True,
        timeout=60,
    )
    assert (tmp_path / "bmt_test_bed_caches.pth").read_text() == "import bmt_test_bed_caches\n"
    assert (tmp_path / "bmt_test_bed_caches.py").read_text() == SCRIPT.read_text()


@pytest.mark.parametrize("argv", [[], ["--other"]])
def test_the_script_says_how_to_use_it(argv):
    out = subprocess.run([sys.executable, str(SCRIPT), *argv], check=False, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "usage:" in out.stderr


# --------------------------------------------------------------------------- routing metadata

# Runs the hook as at start-up, imports ansible-core's collection loader (whose _collection_finder takes
# _meta_yml_to_dict from _collection_meta when it is imported) and parses the runtime.yml given twice, counting the
# YAML parses underneath.
META_PROBE = """
import json, runpy, sys
import yaml
parses = []
real_load = yaml.load
def counting_load(stream, Loader):
    parses.append(1)
    return real_load(stream, Loader)
yaml.load = counting_load
%(start_up)s
from ansible.utils.collection_loader import _collection_finder
text = open(sys.argv[1], encoding="utf-8").read()
first = _collection_finder._meta_yml_to_dict(text, ("ns.coll", "runtime.yml"))
second = _collection_finder._meta_yml_to_dict(text.encode(), ("ns.coll", "runtime.yml"))
print(json.dumps({"first": first, "second": second, "parses": len(parses)}))
"""

RUNTIME = """requires_ansible: '>=2.16'
plugin_routing:
  modules:
    old_name:
      redirect: ns.coll.new_name
      deprecation: {removal_version: 2.0.0, warning_text: use new_name}
action_groups:
  group: [new_name, other]
"""


def meta_probe(path: Path, cache: Path | None) -> dict:
    return run_probe(META_PROBE, path, cache)


def test_routing_metadata_is_parsed_once_and_read_back_the_same(tmp_path):
    import yaml

    runtime = tmp_path / "runtime.yml"
    runtime.write_text(RUNTIME)
    expected = yaml.load(RUNTIME, Loader=yaml.BaseLoader)
    cache = tmp_path / "cache"
    first = meta_probe(runtime, cache)
    assert first["first"] == first["second"] == expected
    assert first["parses"] == 1  # the second call, with the same text as bytes, read the cache
    later = meta_probe(runtime, cache)
    assert later["first"] == later["second"] == expected
    assert later["parses"] == 0


def test_changed_routing_metadata_is_parsed_again(tmp_path):
    runtime = tmp_path / "runtime.yml"
    runtime.write_text(RUNTIME)
    cache = tmp_path / "cache"
    meta_probe(runtime, cache)
    runtime.write_text(RUNTIME.replace("ns.coll.new_name", "ns.coll.newer_name"))
    changed = meta_probe(runtime, cache)
    assert changed["parses"] == 1
    assert changed["first"]["plugin_routing"]["modules"]["old_name"]["redirect"] == "ns.coll.newer_name"


def test_routing_metadata_without_the_variable_is_parsed_each_time(tmp_path):
    runtime = tmp_path / "runtime.yml"
    runtime.write_text(RUNTIME)
    assert meta_probe(runtime, None)["parses"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runtime.yml"]


# --------------------------------------------------------------------------- module payloads

# Runs the hook as at start-up, installs a collection finder over the collections root given, and has
# ansible-core's module_common gather the module_utils of ns.coll's module ``probe`` into a payload zip, counting the
# sources it parses to find their imports; prints each file of the zip with its text. ``extension`` makes the build
# one with an AnsiballZ extension (the debugger or coverage) on.
PAYLOAD_PROBE = """
import datetime, json, sys, zipfile, io
%(start_up)s
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()
from ansible.utils.collection_loader import AnsibleCollectionConfig
AnsibleCollectionConfig.playbook_paths = ["%(playbook_dir)s"]  # as ansible-playbook sets it
from ansible.executor import module_common
from ansible._internal._ansiballz import _builder
parsed = []
parse = module_common._compile_module_ast
def counting(name, source):
    parsed.append(name)
    return parse(name, source)
module_common._compile_module_ast = counting
path = sys.argv[1] + "/ansible_collections/ns/coll/plugins/modules/probe.py"
data = open(path, "rb").read()
manager = _builder.ExtensionManager.create(task_vars={})
if "%(extension)s" == "yes":
    manager._extension_names = ("coverage",)
out = io.BytesIO()
with zipfile.ZipFile(out, "w") as zf:
    metadata = module_common.recursive_finder(
        "probe", "ansible_collections.ns.coll.plugins.modules.probe", data, zf,
        datetime.datetime.now(datetime.timezone.utc), manager,
    )
files = {i.filename: zipfile.ZipFile(out).read(i.filename).decode() for i in zipfile.ZipFile(out).infolist()}
print(json.dumps({"files": files, "parsed": len(parsed), "profile": metadata.serialization_profile}))
"""


def write_collection(root: Path, helper: str = "VALUE = 1\n") -> Path:
    """A collection ns.coll whose module ``probe`` imports module_utils ``util``, which imports ``helper``."""
    base = root / "ansible_collections" / "ns" / "coll"
    utils = base / "plugins" / "module_utils"
    utils.mkdir(parents=True, exist_ok=True)
    (base / "plugins" / "modules").mkdir(exist_ok=True)
    prefix = "ansible_collections.ns.coll.plugins.module_utils"
    (base / "plugins" / "modules" / "probe.py").write_text(
        "from ansible.module_utils.basic import AnsibleModule\nfrom %s.util import run\n" % prefix
    )
    (utils / "util.py").write_text("from %s import helper\n\ndef run():\n    return helper.VALUE\n" % prefix)
    (utils / "helper.py").write_text(helper)
    return root


def payload_probe(root: Path, cache: Path | None, extension: bool = False, playbook_dir: Path | None = None) -> dict:
    """The probe's output; ``playbook_dir``: the directory of the playbook whose (absent) ``collections``
    directory ansible-playbook puts on the collection search path."""
    code = PAYLOAD_PROBE.replace("%(extension)s", "yes" if extension else "no")
    code = code.replace("%(playbook_dir)s", str(playbook_dir or root.parent / "playbook"))
    return run_probe(code, root, cache)


COLLECTION_FILES = "ansible_collections/ns/coll/plugins/module_utils/"


def test_a_payload_is_gathered_once_and_read_back_the_same(tmp_path):
    root = write_collection(tmp_path / "collections")
    plain = payload_probe(root, None)
    assert plain["parsed"] > 2  # the module's two module_utils and ansible-core's own
    assert COLLECTION_FILES + "helper.py" in plain["files"]
    cache = tmp_path / "cache"
    first = payload_probe(root, cache)
    assert first["parsed"] == plain["parsed"]
    later = payload_probe(root, cache)
    assert later["parsed"] == 0
    assert later["files"] == first["files"] == plain["files"]
    assert later["profile"] == plain["profile"]


def test_a_payload_is_read_back_for_a_playbook_in_another_directory(tmp_path):
    root = write_collection(tmp_path / "collections")
    cache = tmp_path / "cache"
    assert payload_probe(root, cache, playbook_dir=tmp_path / "run-1")["parsed"] > 0
    assert payload_probe(root, cache, playbook_dir=tmp_path / "run-2")["parsed"] == 0
    # a playbook's own collections directory, when it exists, is looked up first: another key
    (tmp_path / "run-3" / "collections").mkdir(parents=True)
    assert payload_probe(root, cache, playbook_dir=tmp_path / "run-3")["parsed"] > 0


def test_a_changed_module_util_is_gathered_again(tmp_path):
    root = write_collection(tmp_path / "collections")
    cache = tmp_path / "cache"
    payload_probe(root, cache)
    prefix = "ansible_collections.ns.coll.plugins.module_utils"
    write_collection(root, helper="from %s import extra\nVALUE = extra.VALUE\n" % prefix)
    (root / COLLECTION_FILES / "extra.py").write_text("VALUE = 2\n")
    changed = payload_probe(root, cache)
    assert changed["parsed"] > 0
    assert changed["files"][COLLECTION_FILES + "extra.py"] == "VALUE = 2\n"  # the new import followed
    assert changed["files"][COLLECTION_FILES + "helper.py"].endswith("VALUE = extra.VALUE\n")
    assert payload_probe(root, cache)["parsed"] == 0


def test_a_payload_with_an_extension_or_without_the_variable_is_not_cached(tmp_path):
    root = write_collection(tmp_path / "collections")
    assert payload_probe(root, None)["parsed"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["collections"]
    cache = tmp_path / "cache"
    with_extension = payload_probe(root, cache, extension=True)
    assert with_extension["parsed"] > 0
    assert not (cache / "ansiballz").exists()
