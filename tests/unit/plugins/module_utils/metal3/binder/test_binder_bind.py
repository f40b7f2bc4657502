# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Binding under races (binder/bind.py): a host taken meanwhile, a lost commit undone, a pending claim's condition."""

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    BINDING_LABEL,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder import pass_state as pass_state_module
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.bind import Bind
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.outcome import Outcome
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.status import ClaimStatuses
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.writer import Writer
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmo_upward import (
    host_status_annotation as real_annotation,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.metadata_import import (
    host_offer as real_offer,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import (
    INFRA,
    binder,
    bound,
    credentialed_world,
    pass_state,
    world,
)


def test_host_taken_meanwhile_moves_on_to_the_next_candidate():
    fake = world(hosts=3)
    b = binder(fake, binder_id="b1")
    first = {}

    def first_host_patch(method, path, body):
        if method == "PATCH" and "/baremetalhosts/" in path and not first:
            first["path"] = path
            return True
        return False

    # the host the plan chose is taken by someone else just before our write
    fake.hooks.append(
        (
            first_host_patch,
            lambda f: f.write(
                "baremetalhosts",
                INFRA,
                first["path"].rsplit("/", 1)[1],
                {
                    "spec": {
                        "consumerRef": {
                            "apiVersion": "metal3.io/v1alpha1",
                            "kind": "HostClaim",
                            "namespace": "tenant-b",
                            "name": "x",
                        }
                    }
                },
            ),
        )
    )
    report = b.run()
    (action,) = report["claims"]
    assert action["action"] == "bound"
    assert first["path"].rsplit("/", 1)[1] != action["host"]
    assert report["requests"]["conflicts"] >= 1


def test_losing_the_commit_race_undoes_the_host():
    fake = world(hosts=3)
    chosen = binder(fake, binder_id="b1", check_mode=True).run()["claims"][0]["host"]
    winner = sorted(set(["h0", "h1", "h2"]) - set([chosen]))[0]

    def other_binder_commits(f):
        # another binder bound the claim to another host and committed first
        f.write(
            "baremetalhosts",
            INFRA,
            winner,
            {
                "spec": {
                    "consumerRef": {
                        "apiVersion": "metal3.io/v1alpha1",
                        "kind": "HostClaim",
                        "namespace": "tenant-a",
                        "name": "c0",
                        "uid": f.get("hostclaims", "tenant-a", "c0")["metadata"]["uid"],
                    }
                }
            },
        )
        f.write("hostclaims", "tenant-a", "c0", {"metadata": {"labels": {BINDING_LABEL: winner}}})

    def commit(method, path, body):
        return method == "PATCH" and path.endswith("/hostclaims/c0") and BINDING_LABEL in str(body)

    fake.hooks.append((commit, other_binder_commits))
    report = binder(fake, binder_id="b1").run()
    (action,) = report["claims"]
    assert action["action"] == "lost" and action["host"] == chosen
    assert bound(fake) == {"c0": winner}  # our consumerRef was taken back
    assert fake.get("hostclaims", "tenant-a", "c0")["metadata"]["labels"][BINDING_LABEL] == winner
    assert "consumerRef" not in fake.get("baremetalhosts", INFRA, chosen)["spec"]
    # the next pass simply adopts the winner's binding
    assert binder(fake, binder_id="b1").run()["claims"][0]["host"] == winner


def test_a_pending_claim_gets_a_condition_and_no_forged_label():
    fake = world(hosts=1, claims=2)
    fake.write("hostclaims", "tenant-a", "c1", {"metadata": {"labels": {BINDING_LABEL: "h0"}}})
    report = binder(fake).run()
    actions = dict((a["name"], a) for a in report["claims"])
    assert sorted(a["action"] for a in actions.values()) == ["bound", "pending"]
    pending = next(a for a in actions.values() if a["action"] == "pending")
    assert pending["reason"] == "NoAvailableHost"
    claim = fake.get("hostclaims", "tenant-a", pending["name"])
    assert BINDING_LABEL not in (claim["metadata"].get("labels") or {})
    condition = next(c for c in claim["status"]["conditions"] if c["type"] == "AssociateBMH")
    assert condition["reason"] == "NoAvailableHost" and condition["status"] == "False"


def _operator_writes_before_the_downward_patch(fake, write):
    """Before the binder's first host PATCH carrying the claim's image, somebody else writes the host."""

    def downward(method, path, body):
        return method == "PATCH" and "/baremetalhosts/" in path and "image" in str(body)

    fake.hooks.append((downward, lambda f: write(f, bound(f)["c0"])))


def _one_host_and_a_claim_with_an_image():
    """One host, and tenant-a's claim c0 asking for a live ISO powered on (what the downward patch carries)."""
    fake = world(hosts=1)
    fake.write(
        "hostclaims",
        "tenant-a",
        "c0",
        {"spec": {"online": True, "image": {"url": "http://i/x.iso", "format": "live-iso"}}},
    )
    return fake


def test_a_status_write_by_the_operator_does_not_defer_the_claim_to_the_next_pass():
    fake = _one_host_and_a_claim_with_an_image()
    # the operator reacts to the new consumerRef with a status write: our patch's resourceVersion is stale
    _operator_writes_before_the_downward_patch(
        fake, lambda f, host: f.write("baremetalhosts", INFRA, host, {"status": {"lastUpdated": "now"}})
    )
    report = binder(fake).run()
    (action,) = report["claims"]
    assert action["action"] == "bound" and action["message"] == "bound to host h0"
    host = fake.get("baremetalhosts", INFRA, "h0")
    assert host["spec"]["image"]["url"] == "http://i/x.iso" and host["spec"]["online"] is True
    assert host["status"]["lastUpdated"] == "now"  # the operator's write is kept
    assert report["requests"]["conflicts"] == 1


def test_a_host_taken_back_meanwhile_gets_nothing_of_the_claim():
    fake = _one_host_and_a_claim_with_an_image()
    other = {"apiVersion": "metal3.io/v1alpha1", "kind": "HostClaim", "namespace": "tenant-b", "name": "x"}
    _operator_writes_before_the_downward_patch(
        fake, lambda f, host: f.write("baremetalhosts", INFRA, host, {"spec": {"consumerRef": other}})
    )
    (action,) = binder(fake).run()["claims"]
    assert action["message"] == "the host changed while updating it; retried on the next pass"
    host = fake.get("baremetalhosts", INFRA, "h0")
    assert "image" not in host["spec"] and host["spec"]["online"] is False


def test_the_bind_step_alone_binds_the_host_it_is_told_to_on_what_the_pass_read():
    """No binder around it: a pass state, a writer and the bind step, given one plan action."""
    fake = world(hosts=3)
    state = pass_state(fake)
    (claim,) = state.read(sweep=False, watch=False)
    writer = Writer(state.io)
    step = Bind(state, writer, state.io, ClaimStatuses(state, "2026-01-01T00:00:00Z"))
    outcome = Outcome("tenant-a", "c0")
    step.apply_action({"action": "bind", "host": {"namespace": INFRA, "name": "h2"}}, claim, outcome)
    assert (outcome.action, outcome.host, outcome.host_namespace) == ("bound", "h2", INFRA)
    assert bound(fake) == {"c0": "h2"} and writer.changed and outcome.writes >= 2
    assert fake.get("hostclaims", "tenant-a", "c0")["metadata"]["labels"][BINDING_LABEL] == "h2"
    assert state.reserve(state.host_index[(INFRA, "h2")]) is False  # the step reserved it in the pass state


def test_a_hosts_offer_is_computed_once_per_host_object(monkeypatch):
    """A bind's commit and its sync import from the same host: the BMC-data scan runs once; a write's answer (a new
    object) is scanned again."""
    fake = credentialed_world({"owner": "opsadmin", "rack": "r1"})
    state = pass_state(fake)
    state.read(sweep=False, watch=False)
    calls = []
    monkeypatch.setattr(pass_state_module, "host_offer", lambda *args: calls.append(args) or real_offer(*args))
    host = state.host_index[(INFRA, "h0")]
    first = state.host_offer(host)
    assert state.host_offer(host) is not None and len(calls) == 1
    assert first[0]["labels"] == {"kind": "m", "rack": "r1"}
    assert [item["key"] for item in first[0]["withheld"]] == ["owner"]  # repeats the BMC user
    changed = dict(host, metadata=dict(host["metadata"], labels={"rack": "r2"}))
    assert state.host_offer(changed)[0]["labels"] == {"rack": "r2"} and len(calls) == 2


def test_a_hosts_status_annotation_is_computed_once_per_host_object(monkeypatch):
    """On baremetal-operator's dialect a bind writes the host's addresses at its commit and checks them at its sync:
    computed once from the same host object, again from a new one; the BMC's address is never among them."""
    fake = credentialed_world({})
    host = fake.get("baremetalhosts", INFRA, "h0")
    nics = [{"name": "eth0", "mac": "52:54:00:00:00:01", "ip": "192.0.2.10"}, {"name": "bmc", "ip": "10.1.1.1"}]
    host["status"]["hardware"] = {"nics": nics}
    state = pass_state(fake)
    state.read(sweep=False, watch=False)
    calls = []
    monkeypatch.setattr(
        pass_state_module,
        "host_status_annotation",
        lambda *args: calls.append(args) or real_annotation(*args),
    )
    host = state.host_index[(INFRA, "h0")]
    first = state.host_status_annotation(host)
    assert state.host_status_annotation(host) == first and len(calls) == 1
    assert "192.0.2.10" in first and "10.1.1.1" not in first and "opsadmin" not in first
    changed = dict(host, status=dict(host["status"], hardware={"nics": [dict(nics[0], ip="192.0.2.11")]}))
    assert "192.0.2.11" in state.host_status_annotation(changed) and len(calls) == 2


def test_a_pass_follows_hosts_and_claims_only_once_it_meets_another_writer(monkeypatch):
    """The watches are early news in contention: opened at the pass's first conflict, once; never in check mode."""
    for watch, expected in ((True, 1), (False, 0)):
        state = pass_state(world(hosts=2))
        started = []
        monkeypatch.setattr(state, "start_watches", lambda started=started: started.append(True))
        state.read(sweep=False, watch=watch)
        assert started == []
        state.count_conflict()
        state.count_conflict()
        assert len(started) == expected and state.io.conflicts == 2


def test_a_conflict_of_the_bind_step_starts_the_watches(monkeypatch):
    """A host taken meanwhile (the commit's 409) is the first conflict: from then on the pass follows the cluster."""
    fake = world(hosts=3)
    state = pass_state(fake)
    (claim,) = state.read(sweep=False, watch=True)
    started = []
    monkeypatch.setattr(state, "start_watches", lambda: started.append(True))
    fake.write("baremetalhosts", INFRA, "h2", {"metadata": {"labels": {"moved": "yes"}}})  # h2's version changes
    step = Bind(state, Writer(state.io), state.io, ClaimStatuses(state, "2026-01-01T00:00:00Z"))
    outcome = Outcome("tenant-a", "c0")
    step.apply_action({"action": "bind", "host": {"namespace": INFRA, "name": "h2"}}, claim, outcome)
    assert outcome.action == "bound" and started == [True] and state.io.conflicts == 1
