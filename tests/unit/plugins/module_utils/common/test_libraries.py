# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A missing optional library is reported once, through missing_required_lib, with the import traceback."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils._internal import _traceback
from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.testing import patch_module_args

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import libraries
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import Library, MissingLibrary


@pytest.fixture(autouse=True)
def tracebacks_enabled(monkeypatch):
    """As with ANSIBLE_DISPLAY_TRACEBACK=error: fail_json keeps the traceback only then."""
    monkeypatch.setattr(_traceback, "_is_traceback_enabled", lambda event: True)


ABSENT = Library("bmt-absent-lib", "bmt_absent_module_for_tests", "for the tests", "https://example.invalid/")


class NeedsAbsent(TenancyModule):
    argument_spec = dict(name=dict(type="str"))
    required_libraries = (ABSENT,)
    runs = 0

    def run(self):
        NeedsAbsent.runs += 1


class RaisesMissing(TenancyModule):
    argument_spec = dict(name=dict(type="str"))

    def run(self):
        libraries.require(ABSENT)


def run_module(capsys, cls, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            cls()()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_a_declared_missing_library_fails_before_run_with_the_standard_message(capsys):
    rc, out = run_module(capsys, NeedsAbsent, {"name": "a"})
    assert rc == 1 and NeedsAbsent.runs == 0
    assert out["msg"] == missing_required_lib(ABSENT.name, reason=ABSENT.reason, url=ABSENT.url)
    assert "bmt_absent_module_for_tests" in out["exception"]
    assert "ModuleNotFoundError" in out["exception"]


def test_a_library_missing_in_a_module_util_fails_the_same_way(capsys):
    rc, out = run_module(capsys, RaisesMissing, {"name": "a"})
    assert rc == 1
    assert out["msg"] == "python library bmt-absent-lib: " + libraries.missing_message(ABSENT)
    assert "Failed to import the required Python library (bmt-absent-lib)" in out["msg"]
    assert "bmt_absent_module_for_tests" in out["exception"]
    assert out["error_type"] == "MissingLibrary"


@pytest.mark.parametrize("backend, library", [("metal3", libraries.URLLIB3), ("ironic", libraries.OPENSTACKSDK)])
def test_the_backend_client_library_is_checked(capsys, monkeypatch, backend, library):
    monkeypatch.setitem(libraries._PROBED, library.module, "Traceback: no %s" % library.module)

    class Plain(TenancyModule):
        def run(self):
            pass

    rc, out = run_module(capsys, Plain, {"backend": backend})
    assert rc == 1
    assert "(%s)" % library.name in out["msg"]
    assert out["exception"] == "Traceback: no %s" % library.module


def test_the_import_is_tried_once(monkeypatch):
    calls = []
    real = libraries.importlib.import_module

    def counting(name):
        calls.append(name)
        return real(name)

    monkeypatch.setattr(libraries.importlib, "import_module", counting)
    monkeypatch.delitem(libraries._PROBED, "json", raising=False)
    json_lib = Library("json", "json", "")
    assert libraries.import_error(json_lib) is None
    assert libraries.import_error(json_lib) is None
    assert calls == ["json"]


def test_require_uses_the_module_utils_own_import_result():
    libraries.require(ABSENT, available=True)
    with pytest.raises(MissingLibrary) as err:
        libraries.require(libraries.SUSHY, "Traceback: sushy", available=False)
    assert isinstance(err.value, InvalidInput)
    assert err.value.details == {"exception": "Traceback: sushy"}
    assert "(sushy)" in err.value.cause


@pytest.mark.parametrize(
    "library",
    [
        libraries.SUSHY,
        libraries.KUBERNETES,
        libraries.OPENSTACKSDK,
        libraries.JMESPATH,
        libraries.RE2,
        libraries.URLLIB3,
        libraries.PYYAML,
    ],
)
def test_every_optional_library_names_what_to_install(library):
    message = libraries.missing_message(library)
    assert "(%s)" % library.name in message and library.reason in message
