# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""common/writer.py and the backends' writers on it (metal3/writer.py KubeWrites, ironic/writes.py Writes): the one
way a backend's writes are simulated in check mode."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.writer import Writer
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.writer import KubeWrites


class Mod:
    def __init__(self, check_mode):
        self.check_mode = check_mode
        self.result = {"changed": False}

    def changed(self, value=True):
        self.result["changed"] = self.result["changed"] or bool(value)


class Recorder:
    """Stands in for a client: records each call, answers with what it was given."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name, *args))
            return {"answered": name}

        return call


def test_check_mode_records_returns_the_prediction_and_sends_nothing():
    mod, client = Mod(True), Recorder()
    writer = Writer(mod)
    assert writer.write("delete network n", client.delete, "/networks/1", predicted={"gone": True}) == {"gone": True}
    assert writer.change("end lease l-1") is False
    assert client.calls == [] and writer.would == ["delete network n", "end lease l-1"]
    assert mod.result["changed"] is True


def test_real_mode_sends_and_marks_changed_only_once_the_write_succeeded():
    mod, client = Mod(False), Recorder()
    writer = Writer(mod)
    assert writer.write("w", client.post, "/x", predicted="unused") == {"answered": "post"}
    assert client.calls == [("post", "/x")] and writer.would == [] and mod.result["changed"] is True

    def refused(*args):
        raise RuntimeError("409")

    mod = Mod(False)
    with pytest.raises(RuntimeError):
        Writer(mod).write("w", refused)
    assert mod.result["changed"] is False
    assert Writer(mod).change("step") is True and mod.result["changed"] is True


def test_a_writer_without_a_module_takes_check_mode_and_marks_nothing():
    writer = Writer(None, check_mode=True)
    assert writer.write("w", Recorder().post, predicted=1) == 1 and writer.would == ["w"]


@pytest.mark.parametrize("check_mode", [True, False])
def test_kube_writes_call_the_kube_client_or_predict(check_mode):
    mod, io = Mod(check_mode), Recorder()
    writer = KubeWrites(mod, io)
    body = {"metadata": {"name": "web"}, "spec": {}}
    created = writer.create("claim", "t", body)
    patched = writer.patch("claim", "t", "web", {"spec": {"online": True}}, predicted={"spec": {"online": True}})
    replaced = writer.replace("secret", "t", "s", {"data": {}})
    writer.delete("claim", "t", "web")
    assert mod.result["changed"] is True
    if check_mode:
        assert io.calls == []
        assert (created, patched, replaced) == (body, {"spec": {"online": True}}, {"data": {}})
        assert writer.would == [
            "create claim t/web",
            "patch claim t/web",
            "replace secret t/s",
            "delete claim t/web",
        ]
    else:
        assert [call[0] for call in io.calls] == ["create_claim", "patch_claim", "replace_secret", "delete_claim"]
        assert created == {"answered": "create_claim"} and writer.would == []


def test_the_ironic_writer_is_a_writer():
    mod, client = Mod(True), Recorder()
    writes = Writes(mod, client)
    assert isinstance(writes, Writer)
    assert writes.patch_node("n-1", [{"op": "add"}], "node-1", predicted={"uuid": "n-1"}) == {"uuid": "n-1"}
    assert writes.would == ["patch node node-1"] and client.calls == []
    writes = Writes(Mod(False), client)
    writes.patch_node("n-1", [{"op": "add"}], "node-1")
    assert client.calls == [("patch_node", "n-1", [{"op": "add"}], "node-1")]
