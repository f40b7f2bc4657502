"""The floor of a binder pass: the same writes per claim the pass made, issued raw (bench/bind.py's ``single_pass``).

A pass binds a claim with three writes (the host's ``consumerRef``, the claim's commit with its precondition, the
claim's status); on two cores the apiserver gives eight writers only 1.15-1.4x the throughput of one, so a pass is
measured against the same writes sent raw, with the same concurrency and preconditions, on the same apiserver in
the same run, and not against one raw write per claim.

How: the pass's client records every host and claim patch it sends (:func:`recording_io`). The patches are grouped
per bound claim in the order they were sent (:func:`claim_sequences`: a host patch belongs to the claim its
``consumerRef`` names). After the pass, each sequence is replayed on a copy of its claim (same namespace and spec,
created untimed) and one of the hosts the pass left free: the names mapped (:func:`map_names`), the precondition
set to the target's current ``resourceVersion`` (the one the previous write returned, as the binder does), by
``workers`` threads (the binder's ``workers``), one sequence per thread at a time (:func:`replay`). No planning,
listing or reading: only the writes. The copies and the hosts are given back afterwards, untimed.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

#: a copy's name: the claim's with this prefix instead of its first letter (``c00042`` -> ``f00042``)
COPY_PREFIX = "f"


def recording_io(base):
    """A subclass of the KubeIO class ``base`` that records every host and claim patch it sends, in order:
    ``records`` holds ``(sequence, kind, namespace, name, status, body)`` with ``kind`` ``host`` or ``claim`` and
    ``body`` the patch's JSON text;
    ``other_writes`` counts the writes it does not record (Secrets: none on the bench's world)."""

    class RecordingIO(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.records: list[tuple] = []
            self.other_writes = 0
            self._order = itertools.count()
            self._record_lock = threading.Lock()

        def _record(self, kind, namespace, name, status, patch):
            # the patch as JSON text, read back after the pass (claim_sequences): a deep copy here cost the timed
            # pass 6 % of its CPU (yappi, 1,000 hosts / 500 claims), json.dumps a quarter of that
            text = json.dumps(patch)
            with self._record_lock:
                self.records.append((next(self._order), kind, namespace, name, status, text))

        def patch_host(self, namespace, name, patch):
            result = super().patch_host(namespace, name, patch)
            self._record("host", namespace, name, False, patch)
            return result

        def patch_claim(self, namespace, name, patch, status=False):
            result = super().patch_claim(namespace, name, patch, status=status)
            self._record("claim", namespace, name, status, patch)
            return result

        def _count_other(self):
            with self._record_lock:
                self.other_writes += 1

        def create_secret(self, *args, **kwargs):
            self._count_other()
            return super().create_secret(*args, **kwargs)

        def patch_secret(self, *args, **kwargs):
            self._count_other()
            return super().patch_secret(*args, **kwargs)

        def delete_secret(self, *args, **kwargs):
            self._count_other()
            return super().delete_secret(*args, **kwargs)

    return RecordingIO


def claim_sequences(records: list[tuple]) -> dict[tuple[str, str], list[tuple]]:
    """The recorded writes of each claim the pass bound, in the order sent: ``{(namespace, name): [(kind, namespace,
    name, status, body), ...]}``. A host patch whose ``consumerRef`` names a claim is that claim's; claims without
    a host patch (left pending) are left out."""
    sequences: dict[tuple[str, str], list[tuple]] = {}
    bound = set()
    for _order, kind, namespace, name, status, text in sorted(records, key=lambda record: record[0]):
        body = json.loads(text)
        if kind == "host":
            ref = ((body or {}).get("spec") or {}).get("consumerRef") or {}
            if not ref.get("name"):
                continue  # a release: not part of a binding
            key = (ref.get("namespace"), ref["name"])
            bound.add(key)
        else:
            key = (namespace, name)
        sequences.setdefault(key, []).append((kind, namespace, name, status, body))
    return {key: ops for key, ops in sequences.items() if key in bound}


def copy_name(name: str) -> str:
    return COPY_PREFIX + name[1:]


def map_names(body: dict, names: dict[str, str]) -> dict:
    """``body`` with every whole-word occurrence of each key of ``names`` replaced by its value (in names, labels,
    annotations and the JSON records inside them)."""
    if not names:
        return copy.deepcopy(body)
    pattern = re.compile(r"\b(%s)\b" % "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True)))
    return json.loads(pattern.sub(lambda match: names[match.group(1)], json.dumps(body)))


def with_version(body: dict, resource_version: str | None) -> dict:
    """``body`` with its precondition (``metadata.resourceVersion``) set to ``resource_version`` when it had one."""
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and "resourceVersion" in metadata:
        body = dict(body, metadata=dict(metadata, resourceVersion=resource_version))
    return body


def plan_replay(sequences: dict, free_hosts: list[dict]) -> list[dict]:
    """One replay per sequence while free hosts last: the copy claim's key, its host, and the mapped writes."""
    plans = []
    for (namespace, name), host in zip(sorted(sequences), free_hosts):
        ops = sequences[(namespace, name)]
        original_hosts = {op_name for kind, _ns, op_name, _status, _body in ops if kind == "host"}
        names = {name: copy_name(name)}
        names.update((original, host["metadata"]["name"]) for original in original_hosts)
        plans.append(
            {
                "original": (namespace, name),
                "claim": (namespace, copy_name(name)),
                "host": (host["metadata"]["namespace"], host["metadata"]["name"]),
                "host_version": host["metadata"]["resourceVersion"],
                "writes": [(kind, status, map_names(body, names)) for kind, _ns, _name, status, body in ops],
            }
        )
    return plans


def server_cpu(pids: dict[str, int]) -> dict[str, float]:
    """The CPU seconds (user and system) each server process of ``pids`` (``{name: pid}``) has used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    used = {}
    for name, pid in pids.items():
        with open("/proc/%d/stat" % pid) as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        used[name] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14, 15 of stat(5))
    return used


class ServerClock:
    """The CPU seconds each server process of ``pids`` used while entered (:func:`server_cpu`): where the time of
    the API server, etcd and the controller manager went during a pass and during its floor, on the same cores."""

    def __init__(self, pids: dict[str, int]):
        self.pids = dict(pids)
        self.used: dict[str, float] = {}

    def __enter__(self):
        self._start = server_cpu(self.pids)
        return self

    def __exit__(self, *exc):
        end = server_cpu(self.pids)
        self.used = dict((name, round(end[name] - self._start[name], 2)) for name in self.pids)


def replay(io, plans: list[dict], claim_versions: dict, workers: int, pids: dict | None = None):
    """The writes of ``plans`` sent by ``workers`` threads, a plan per thread at a time, each with the precondition
    of its target's current version; the seconds they took, this process's CPU seconds meanwhile, and the servers'
    of ``pids`` (:class:`ServerClock`)."""

    def one(plan):
        versions = {"host": plan["host_version"], "claim": claim_versions[plan["claim"]]}
        for kind, status, planned in plan["writes"]:
            body = with_version(planned, versions[kind])
            if kind == "host":
                result = io.patch_host(plan["host"][0], plan["host"][1], body)
            else:
                result = io.patch_claim(plan["claim"][0], plan["claim"][1], body, status=status)
            versions[kind] = result["metadata"]["resourceVersion"]

    with ServerClock(pids or {}) as servers:
        started, cpu = time.monotonic(), time.process_time()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(one, plans))
        seconds, cpu = time.monotonic() - started, time.process_time() - cpu
    return seconds, cpu, servers.used


def measure_floor(io, sequences: dict, host_namespace: str, workers: int, pids: dict | None = None) -> dict:
    """Replay ``sequences`` on copies of their claims and the free hosts of ``host_namespace``; the floor's figures
    (``server_cpu_seconds``: the CPU of the server processes of ``pids`` during the replay).

    ``seconds`` is scaled to every sequence when fewer hosts than sequences were free (``replayed`` < ``bound``).
    The copies are deleted and the hosts freed again (untimed)."""
    free = [h for h in io.list_hosts([host_namespace]) if not h["spec"].get("consumerRef")]
    plans = plan_replay(sequences, free)
    if not plans:
        return {"seconds": 0.0, "cpu_seconds": 0.0, "bound": len(sequences), "replayed": 0, "writes": 0}

    def create_copy(plan):
        original = io.get_claim(*plan["original"])
        namespace, name = plan["claim"]
        body = {
            "apiVersion": original["apiVersion"],
            "kind": original["kind"],
            "metadata": {"name": name, "namespace": namespace},
            "spec": original["spec"],
        }
        return plan["claim"], io.create_claim(namespace, body)["metadata"]["resourceVersion"]

    def give_back(plan):
        io.patch_host(plan["host"][0], plan["host"][1], {"spec": {"consumerRef": None}})
        io.patch_claim(plan["claim"][0], plan["claim"][1], {"metadata": {"finalizers": None}})
        io.delete_claim(plan["claim"][0], plan["claim"][1])

    with ThreadPoolExecutor(workers) as pool:
        versions = dict(pool.map(create_copy, plans))
    seconds, cpu, servers = replay(io, plans, versions, workers, pids)
    writes = sum(len(plan["writes"]) for plan in plans)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(give_back, plans))
    return {
        "seconds": round(seconds * len(sequences) / len(plans), 3),
        "cpu_seconds": round(cpu * len(sequences) / len(plans), 3),
        "server_cpu_seconds": dict(
            (name, round(used * len(sequences) / len(plans), 2)) for name, used in servers.items()
        ),
        "bound": len(sequences),
        "replayed": len(plans),
        "writes": writes,
        "writes_per_claim": round(writes / len(plans), 3),
    }
