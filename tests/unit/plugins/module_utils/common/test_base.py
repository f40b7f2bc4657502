# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)


import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_timeout


class Sample(TenancyModule):
    argument_spec = dict(name=dict(type="str", required=True), mode=dict(type="str", default="ok"))

    def run(self):
        if self.params["mode"] == "invalid":
            raise InvalidInput("Thing %s" % self.params["name"], "is not valid")
        if self.params["mode"] == "library":
            raise ConnectionError("connection refused")
        before = {"name": None}
        after = {"name": self.params["name"]}
        self.changed(not self.check_mode)
        self.set_diff(before, after)
        self.result["backend"] = self.backend


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            Sample()()
    out = json.loads(capsys.readouterr().out)
    return exit_info.value.code, out


def test_success_with_diff(capsys):
    rc, out = run_module(capsys, {"name": "a", "_ansible_diff": True})
    assert rc == 0
    assert out["changed"] is True
    assert out["diff"] == {"before": {"name": None}, "after": {"name": "a"}}
    assert out["backend"] == "metal3"


def test_no_diff_unless_asked(capsys):
    _rc, out = run_module(capsys, {"name": "a"})
    assert "diff" not in out


def test_check_mode_is_seen(capsys):
    _rc, out = run_module(capsys, {"name": "a", "_ansible_check_mode": True})
    assert out["changed"] is False


def test_tenancy_error_is_one_clear_failure(capsys):
    rc, out = run_module(capsys, {"name": "a", "mode": "invalid"})
    assert rc == 1
    assert out["failed"] is True
    assert out["msg"] == "Thing a: is not valid"
    assert out["object"] == "Thing a"
    assert out["error_type"] == "InvalidInput"


def test_library_error_is_mapped(capsys):
    rc, out = run_module(capsys, {"name": "a", "mode": "library"})
    assert rc == 1
    assert out["msg"] == "module: connection refused"
    assert out["error_type"] == "BackendError"


def test_secrets_are_masked_in_output(capsys):
    _rc, out = run_module(capsys, {"name": "a", "api_key": "s3cr3t-token-value", "_ansible_diff": True})
    assert "s3cr3t-token-value" not in json.dumps(out)


def test_env_fallback_for_kubeconfig(capsys, monkeypatch):
    class Echo(Sample):
        def run(self):
            self.result["kubeconfig"] = self.params["kubeconfig"]
            self.result["cloud"] = self.params["cloud"]

    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", "/tmp/kc")
    monkeypatch.setenv("OS_CLOUD", "tenant-a")
    with patch_module_args({"name": "a"}):
        with pytest.raises(SystemExit):
            Echo()()
    out = json.loads(capsys.readouterr().out)
    assert out["kubeconfig"] == "/tmp/kc"
    assert out["cloud"] == "tenant-a"


@pytest.mark.parametrize("value", [0, 1, 600])
def test_timeout_ok(value):
    assert check_timeout(value) == value


def test_negative_timeout_is_refused():
    with pytest.raises(InvalidInput) as info:
        check_timeout(-1)
    assert "wait_timeout" in info.value.message
