"""Benchmark: the ``claimed_hosts`` inventory plugin against what a tenant does without it.

Run standalone: ``.venv/bin/python bench/inventory.py`` (not part of ``make test``;
``--claims 1000,5000,20000`` (alias ``--sizes``), ``--ironic-nodes`` and ``--skip`` change what runs). It starts its
own services through the test harness (etcd + kube-apiserver with RBAC;
Keystone + Ironic + sushy-tools), seeds data, measures side by side in the
same run and prints ONE JSON line (progress goes to stderr).

Figures, per data set (wall-clock seconds, medians; the machine's load
average at start and end is reported because other work on a shared
machine slows every figure):

- ``plugin_cli_s``: ``ansible-inventory -i <src> --list --output FILE`` (process
  start, plugin, Ansible's own processing and JSON output), median of 3;
- ``plugin_parse_s``: the plugin inside Ansible's inventory manager in a warm
  process (``InventoryManager(sources=[src])``: credentials, list requests,
  decoding, building hosts), median of 5; ``ansible_inventory_api_s`` is the
  part of it spent inside Ansible's inventory API (``add_host``,
  ``add_group``, ``add_child``, and ``set_variable``, where ansible-core 2.19
  visits and origin-tags every value a plugin sets), and ``plugin_own_s`` the
  rest: what the plugin itself costs;
- ``plugin_source_s``: the part of that parse spent in the source itself
  (``InventoryManager.parse_source``: the plugin's ``parse``), without what
  the inventory manager does after every source for every host and group
  (``reconcile_inventory``, and ``get_vars_from_inventory_sources``, which
  runs the vars plugins once per host: linear, the same for any inventory
  plugin); ``plugin_source_own_s`` is it minus ``ansible_inventory_api_s``:
  the plugin's own work in the narrow sense (``plugin_own_s`` keeps the
  manager's part, as before);
- ``--before GIT_REF``: the in-process figures of the plugin at that commit
  too (``before_*``; ``git archive`` into a second collections root), run
  right after the current code's, each followed by raw list samples
  (``raw_list_samples_s``; ``raw_list_s`` is their median), so both sides
  see the same load; ``--lean``: only the in-process figures (3 runs a
  side), one ``ansible-inventory --list`` (its peak memory) and the cached
  run, for a 20,000-claim run on a loaded machine (the baseline alone takes
  7-15 min there, hours at load 30);
- ``raw_list_s``: the same list requests alone (same page size, body read and
  JSON-decoded, warm connection), median of 5;
- ``baseline_s``: what a tenant does today, one ``ansible-playbook`` run:
  ``kubernetes.core.k8s_info`` (or ``openstack.cloud.baremetal_node_info``)
  then ``ansible.builtin.add_host`` in a loop, and a play on the group;
- ``plugin_cli_every_variable_s``: the same ``ansible-inventory --list`` with
  ``host_variables`` listing every host variable the plugin can set (the
  default set leaves out the ones few playbooks need), median of 3;
- ``plugin_playbook_s``: ``ansible-playbook -i <src>`` running the baseline's
  final play (no JSON dump): the like-for-like comparison with the baseline,
  median of 3;
- ``first_requests`` / ``cached_requests``: API requests of a first run and of a
  second run with the cache enabled (counted by a proxy in front of the
  APIs; the second must be 0), ``cached_cli_s`` the second run's time;
- ``plugin_cli_max_rss_mib`` (and ``..._every_variable_...``, ``cached_...``):
  the peak resident set size of the ``ansible-inventory`` process, the
  largest of its runs (``ru_maxrss`` of ``os.wait4`` on that one process);
  goal: under 1 GiB at 20,000 claims;
- ``baseline_runs``: the baseline is run once per size (it takes minutes, and
  grows faster than linearly: see below); ``plugin_cli_ms_per_claim`` and
  ``baseline_ms_per_claim`` show how each grows with the size;
- ratios: ``baseline_over_plugin`` (``ansible-inventory --list`` against the
  baseline playbook; goal >= 15 at 20,000), ``baseline_over_plugin_playbook``
  (playbook against playbook), ``plugin_parse_over_raw`` and ``plugin_own_over_raw`` (goal <= 1.3),
  ``plugin_cli_over_raw``; ``metal3_goals`` checks issue 20's goals against the largest size.

metal3: bound HostClaims (status as the binder writes it) in one tenant
namespace, read as that tenant, at 1,000, 5,000 and 20,000 claims (cumulative:
each size adds claims to the previous).

Where ansible-core 2.19's inventory cost grows with the host count (cProfile
of ``ansible-inventory --list`` at 5,000 and 20,000 hosts on the same records,
and each inventory call timed per 2,000 hosts in one process as the inventory
grows), and what the plugin does about it:

- ``InventoryData.reconcile_inventory`` walks every host and group (O(n)).
  ``InventoryManager.add_dynamic_host``, which runs for every host that
  ``ansible.builtin.add_host`` adds in a playbook, calls it after each new
  host: O(n^2) for the baseline (in-process, 156 us per host at 1,000 hosts,
  300 at 2,000, 838 at 4,000, 2,198 at 8,000 - the ``reconcile_inventory``
  loop is 90 % of it). An inventory plugin adds every host inside its one
  ``parse``, and the inventory manager reconciles once after all sources
  (0.09 s at 20,000 hosts): the plugin is on the linear side by construction.
- ``Group.add_child_group`` visits every host of the child group (ancestors),
  ``Host.add_group``/``populate_ancestors`` check membership in a list (O(g)
  per group of a host), ``Group.remove_host`` removes from a list (O(n)):
  the plugin makes no group-to-group edge (its default groups are flat; the
  edges to ``all`` are made once, by that one reconcile), puts a host in at
  most 4 groups and never removes one. It creates each default group once and
  joins each host to its groups with one ``add_child`` apiece.
- ``add_host``/``add_child``/``add_group`` reset the cached ``groups`` dict; reading
  ``groups`` between additions would rebuild it each time (O(n^2)). The plugin
  reads nothing between additions, and runs ``Constructable``'s templating
  (host variables only, never ``groups``) only when ``compose``, ``groups`` or
  ``keyed_groups`` is set.
- ``set_variable`` through ``_InventoryDataWrapper`` visits every value
  (``AnsibleVariableVisitor``: copies every dict and list, tags every value with
  its ``Origin``): linear in the number of values, flat per host from 2,000 to
  20,000 hosts (0.17-0.34 ms per host, load noise), about a fifth of the CPU
  of ``--list`` at 20,000. The plugin sets only the default ``host_variables``
  (one ``set_variable`` per variable: the names users see are unchanged).
  Handing the visitor strings already tagged with the source's ``Origin``
  (repeated values: namespace, backend, condition statuses, image fields)
  would save about 12 % of that time, but needs ansible-core's private
  ``Origin`` type: not done.
- ``ansible-inventory --list`` output: ``VariableManager.get_vars`` per host
  (the vars plugins' loader globs the plugin directories 7 times per host,
  ``clean_facts`` lists connection plugins per host) and ``json.dumps`` with
  ``indent=4`` (the pure-Python encoder): linear, about two thirds of the CPU of
  ``--list`` at 20,000, a fixed cost per host and per value.
- The call counts are exactly proportional to the host count (cProfile); the
  CPU per host of a whole ``--list`` grows mildly with the size (0.97 ms at
  1,000, 0.98 at 5,000, 1.05 at 10,000, 1.12 at 20,000, synthetic records, no
  API), with or without the cyclic garbage collector: the larger heap, not
  an algorithm.

ironic: 1,000 claimed, deployed fake-hardware nodes of one project, read with
that project's credentials. A few nodes are created through the API (enrol,
manage, provide, allocation by the tenant, deploy); the rest are cloned
inside this bench-only Ironic's sqlite database (node, port, traits and
allocation rows copied with new UUIDs, names, MACs and addresses), because
taking 1,000 nodes through their lifecycle one by one takes too long here and
sqlite rejects parallel lifecycles. Every read measured goes through Ironic's
API with Keystone tokens and policy; the bench checks that the API lists all
of them. The clones carry the claim's name that host_claim writes on a node it
deploys (``instance_info.baremetal_tenancy_claim``); the templates, deployed
without host_claim, carry none, so the plugin reads their allocations (two
GETs). ``raw_list_s`` is the plugin's requests alone (the project's claimed
nodes, and those two allocations); ``raw_allocation_route_s`` the requests it
made before (the project's allocation list, for which Ironic looks each
allocation's node up, and the node list); ``same_records_as_allocation_route``
compares, in process, the plugin's records with the records joined from every
allocation (ports included).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from fixtures_inventory import (
    ALL_HOST_VARIABLES,
    CountingProxy,
    _deploy,
    _wait_allocation,
    ironic_clouds_via,
    kube_proxy,
    kubeconfig_via,
    seed_claims,
    write_source,
)
from harness import kube
from harness import openstack as openstack_harness
from harness.ansible import VENV_BIN, ansible_env, run_playbook

NAMESPACE = "bench-a"
PAGE_SIZE = 500
READER_ROLE = "bench-hostclaims-reader"

# Runs the plugin inside Ansible's inventory manager, warm, and prints the parse times as JSON.
# Runs the plugin inside Ansible's inventory manager, warm, and prints JSON: the parse times, and the part of
# each spent inside Ansible's inventory API (add_host, add_group, add_child, and set_variable with the value
# visit and origin tagging that ansible-core 2.19 applies to every value a plugin sets).
IN_PROCESS = r"""
import gc, json, sys, time
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader()
from ansible.inventory import manager as inventory_manager
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
spent = [0.0]
def timed(function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start
    return wrapper
inventory_manager._InventoryDataWrapper.set_variable = timed(inventory_manager._InventoryDataWrapper.set_variable)
for name in ('add_host', 'add_group', 'add_child'):
    setattr(InventoryData, name, timed(getattr(InventoryData, name)))
# The source alone (the plugin's parse), without what the inventory manager does after every source
# (reconcile_inventory, and vars plugins' host_group_vars for each host and group).
in_source = [0.0]
parse_source = inventory_manager.InventoryManager.parse_source
def timed_source(*args, **kwargs):
    start = time.perf_counter()
    try:
        return parse_source(*args, **kwargs)
    finally:
        in_source[0] += time.perf_counter() - start
inventory_manager.InventoryManager.parse_source = timed_source
source, repeat, expected = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
times, api, sources = [], [], []
for attempt in range(repeat + 1):
    gc.collect()
    spent[0] = in_source[0] = 0.0
    start = time.perf_counter()
    manager = inventory_manager.InventoryManager(loader=DataLoader(), sources=[source])
    elapsed = time.perf_counter() - start
    count = len(manager.hosts)
    assert count == expected, (count, expected)
    del manager
    if attempt:  # the first run warms imports
        times.append(elapsed)
        api.append(spent[0])
        sources.append(in_source[0])
print(json.dumps({"parse": times, "ansible_api": api, "source": sources}))
"""


def median(values):
    return round(statistics.median(values), 3)


def timed(fn, repeat):
    times = []
    for _dummy in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return median(times)


# --------------------------------------------------------------------------- metal3


def install_hostclaims(api) -> None:
    """The HostClaim CRD (the collection's file) and a read-only tenant role in the bench namespace."""
    from kubernetes import client

    ext = client.ApiextensionsV1Api(api)
    crd = yaml.safe_load((ROOT / "roles/hostclaim_setup/files/hostclaim-crd.yaml").read_text())
    ext.create_custom_resource_definition(crd)
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    rbac = client.RbacAuthorizationV1Api(api)
    rbac.create_cluster_role(
        client.V1ClusterRole(
            metadata=client.V1ObjectMeta(name=READER_ROLE),
            rules=[
                client.V1PolicyRule(api_groups=["metal3.io"], resources=["hostclaims"], verbs=["get", "list", "watch"])
            ],
        )
    )
    rbac.create_namespaced_role_binding(
        NAMESPACE,
        client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name="bench-tenant", namespace=NAMESPACE),
            role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=READER_ROLE),
            subjects=[
                client.RbacV1Subject(
                    api_group="rbac.authorization.k8s.io", kind="User", name=kube.IDENTITIES["tenant-a"].user
                )
            ],
        ),
    )
    custom = client.CustomObjectsApi(api)
    deadline = time.monotonic() + 60
    while True:
        try:
            custom.list_namespaced_custom_object("metal3.io", "v1alpha1", NAMESPACE, "hostclaims")
            return
        except client.exceptions.ApiException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def raw_kube_list(kubeconfig: Path) -> int:
    """The list requests alone, as the plugin makes them: returns the number of items."""
    from kubernetes import config

    api = config.new_client_from_config(config_file=str(kubeconfig))
    headers = {"Accept": "application/json"}
    for setting in api.configuration.auth_settings().values():
        headers[setting["key"]] = setting["value"]
    url = api.configuration.host + "/apis/metal3.io/v1alpha1/namespaces/%s/hostclaims" % NAMESPACE
    count, token = 0, None
    while True:
        fields = {"limit": str(PAGE_SIZE)}
        if token:
            fields["continue"] = token
        response = api.rest_client.pool_manager.request("GET", url, fields=fields, headers=headers)
        assert response.status == 200, response.data[:300]
        body = json.loads(response.data)
        count += len(body["items"])
        token = body["metadata"].get("continue")
        if not token:
            api.close()
            return count


def plugin_cli(source: Path, env: dict, workdir: Path, expected: int, *extra: str, peak: list | None = None) -> float:
    """Seconds of one ``ansible-inventory -i source --list --output FILE``, as ``run_inventory`` runs it.

    The process is reaped with ``os.wait4``, whose resource usage is that one process's: its peak resident set
    size (``ru_maxrss``, MiB) is appended to ``peak``.
    """
    out = workdir / "inventory.json"
    argv = [str(VENV_BIN / "ansible-inventory"), "-i", str(source), "--list", "--output", str(out), *extra]

    def run():
        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen(
                argv, env=ansible_env(env, workdir), stdout=subprocess.DEVNULL, stderr=errors, cwd=str(workdir)
            )
            dummy, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            errors.seek(0)
            assert proc.returncode == 0, errors.read()[-2000:].decode("utf-8", "replace")
        if peak is not None:
            peak.append(round(usage.ru_maxrss / 1024, 1))  # KiB on Linux

    seconds = timed(run, 1)
    hosts = json.loads(out.read_text())["_meta"]["hostvars"]
    assert len(hosts) == expected, (len(hosts), expected)
    return seconds


def plugin_in_process(
    source: Path, env: dict, workdir: Path, expected: int, repeat: int = 5, collections: Path | None = None
) -> dict:
    """Medians, in a warm process: ``parse`` (the inventory manager's whole parse), ``ansible_api`` (the part of it
    spent inside Ansible's inventory API) and ``source`` (the plugin's ``parse`` of the source alone, without the
    manager's processing of every host afterwards).  ``collections``: a collections root holding another version of
    the collection (the code before, side by side)."""
    run_env = ansible_env(env, workdir)
    if collections is not None:
        run_env["ANSIBLE_COLLECTIONS_PATH"] = str(collections)
    proc = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(source), str(repeat), str(expected)],
        env=run_env,
        capture_output=True,
        text=True,
        cwd=str(workdir),
        timeout=1800,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return dict((key, median(values)) for key, values in result.items())


def old_collections(ref: str, workdir: Path) -> Path:
    """A collections root holding the collection at git ``ref`` (``git archive``), to run the code before."""
    root = workdir / ("collection-%s" % ref)
    tree = root / "ansible_collections" / "baremetal" / "tenancy"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=str(ROOT), capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return root


def plugin_playbook(source: Path, env: dict, workdir: Path, expected: int, group: str = "claimed_hosts") -> float:
    """``ansible-playbook -i <src>`` with the same final play as the baseline: the like-for-like comparison."""
    plays = [
        {
            "name": "count them",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "tasks": [
                {"name": "check", "ansible.builtin.assert": {"that": "groups['%s'] | length == %d" % (group, expected)}}
            ],
        }
    ]
    start = time.perf_counter()
    run = run_playbook(
        plays,
        dict(env, ANSIBLE_INVENTORY_UNPARSED_FAILED="True"),
        workdir,
        callback="default",
        inventory=str(source),
        timeout=3600,
    )
    seconds = time.perf_counter() - start
    assert run.ok, run.explain()
    return round(seconds, 3)


def kube_baseline(env: dict, workdir: Path, expected: int) -> float:
    plays = [
        {
            "name": "what a tenant does without the plugin",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "list my claims",
                    "kubernetes.core.k8s_info": {
                        "api_version": "metal3.io/v1alpha1",
                        "kind": "HostClaim",
                        "namespace": NAMESPACE,
                    },
                    "register": "claims",
                },
                {
                    "name": "add each claimed host",
                    "ansible.builtin.add_host": {
                        "name": "{{ item.metadata.name }}",
                        "groups": ["claimed"],
                        "ansible_host": "{{ (item.status.addresses | default([]) | selectattr('type', 'eq', 'InternalIP')"
                        " | map(attribute='address') | list + [omit]) | first }}",
                        "claim_ready": "{{ (item.status.conditions | default([]) | selectattr('type', 'eq', 'Ready')"
                        "| map(attribute='status') | list) == ['True'] }}",
                    },
                    "loop": "{{ claims.resources | selectattr('status', 'defined') }}",
                    "loop_control": {"label": "{{ item.metadata.name }}"},
                },
            ],
        },
        {
            "name": "count them",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "tasks": [
                {"name": "check", "ansible.builtin.assert": {"that": "groups['claimed'] | length == %d" % expected}}
            ],
        },
    ]
    start = time.perf_counter()
    run = run_playbook(plays, env, workdir, callback="default", timeout=7200)
    seconds = time.perf_counter() - start
    assert run.ok, run.explain()
    return round(seconds, 3)


def _ratio(numerator, denominator, digits=1):
    return None if numerator is None or denominator is None else round(numerator / denominator, digits)


def bench_metal3(sizes, workdir: Path, before: Path | None = None, lean: bool = False) -> dict:
    """``lean``: only the in-process figures (3 runs a side), one ``ansible-inventory --list`` (its peak memory) and
    the cached run; no baseline, no every-variable or playbook runs (hours on a loaded 2-core machine at 20,000)."""
    results = {}
    with kube.KubeEnv(workdir / "kube") as env:
        with env.api("admin") as api:
            install_hostclaims(api)
        source = write_source(workdir / "bench.claimed_hosts.yml", namespaces=[NAMESPACE], page_size=PAGE_SIZE)
        seeded = 0
        for size in sizes:
            t0 = time.perf_counter()
            with env.api("admin") as api:
                seed_claims(api, NAMESPACE, size - seeded, start=seeded)
            seed_seconds = time.perf_counter() - t0
            seeded = size
            results[str(size)] = metal3_size(env, source, size, seed_seconds, workdir, before, lean)
            print("metal3 %d: %s" % (size, json.dumps(results[str(size)])), file=sys.stderr)
    return results


def metal3_size(env, source: Path, size: int, seed_seconds: float, workdir: Path, before, lean: bool) -> dict:
    """The figures of one size (``size`` claims seeded)."""
    repeat = 3 if lean else 5
    tenant_env = env.ansible_env("tenant-a")
    run_dir = workdir / ("metal3-%d" % size)
    run_dir.mkdir()
    kubeconfig = env.kubeconfig("tenant-a")
    raw_kube_list(kubeconfig)  # warm
    m = {"size": size, "seed_seconds": seed_seconds, "lean": lean, "load_start": round(os.getloadavg()[0], 1)}
    raw = timed(lambda kubeconfig=kubeconfig: raw_kube_list(kubeconfig), 5)
    # the code before and now, alternated, each beside a raw list of its own
    sides, raws = {}, [raw]
    for side in ("now", "before") if before is not None else ("now",):
        sides[side] = plugin_in_process(
            source, tenant_env, run_dir, size, repeat, collections=before if side == "before" else None
        )
        raws.append(timed(lambda kubeconfig=kubeconfig: raw_kube_list(kubeconfig), 3))
    m.update(raw=median(raws), raws=raws, sides=sides, peaks=[], peaks_every=[])
    m["cli"] = median(
        [plugin_cli(source, tenant_env, run_dir, size, peak=m["peaks"]) for dummy in range(1 if lean else 3)]
    )
    every_source = write_source(
        run_dir / "every.claimed_hosts.yml",
        namespaces=[NAMESPACE],
        page_size=PAGE_SIZE,
        host_variables=ALL_HOST_VARIABLES,
    )
    m["cli_every"] = m["playbook"] = m["baseline"] = None
    if not lean:
        m["cli_every"] = median(
            [plugin_cli(every_source, tenant_env, run_dir, size, peak=m["peaks_every"]) for dummy in range(3)]
        )
        m["playbook"] = median([plugin_playbook(source, tenant_env, run_dir, size) for dummy in range(3)])
        print("metal3 %d: baseline (k8s_info + add_host), once" % size, file=sys.stderr)
        m["baseline"] = kube_baseline(tenant_env, run_dir, size)
    m["cached"], m["first_requests"], m["cached_requests"], m["peaks_cached"] = metal3_cached(env, run_dir, size)
    return metal3_figures(m)


def metal3_cached(env, run_dir: Path, size: int) -> tuple[float, int, int, list]:
    """The plugin with a jsonfile cache, through a proxy that counts the requests to the apiserver: (the cached
    run's seconds, the first run's requests, the cached run's requests, the cached run's peak memory)."""
    tenant_env = env.ansible_env("tenant-a")
    with kube_proxy(env) as proxy:
        proxied = dict(
            tenant_env,
            K8S_AUTH_KUBECONFIG=str(kubeconfig_via(env, "tenant-a", proxy.url, run_dir / "proxy.kubeconfig")),
        )
        cached_source = write_source(
            run_dir / "cached.claimed_hosts.yml",
            namespaces=[NAMESPACE],
            page_size=PAGE_SIZE,
            cache=True,
            cache_plugin="ansible.builtin.jsonfile",
            cache_connection=str(run_dir / "cache"),
            cache_timeout=3600,
        )
        plugin_cli(cached_source, proxied, run_dir, size)
        first_requests = len(proxy.paths())
        proxy.reset()
        peaks_cached = []
        cached = plugin_cli(cached_source, proxied, run_dir, size, peak=peaks_cached)
        cached_requests = len(proxy.paths())
    return cached, first_requests, cached_requests, peaks_cached


def metal3_figures(m: dict) -> dict:
    """One size's result from its measurements (:func:`metal3_size`)."""
    size, raw, cli, baseline = m["size"], m["raw"], m["cli"], m["baseline"]
    cli_every, playbook, sides = m["cli_every"], m["playbook"], m["sides"]
    parse, ansible_api, in_source = sides["now"]["parse"], sides["now"]["ansible_api"], sides["now"]["source"]
    result = {
        "claims": size,
        "seed_s": round(m["seed_seconds"], 1),
        "plugin_cli_s": cli,
        "plugin_parse_s": parse,
        "ansible_inventory_api_s": ansible_api,
        "plugin_own_s": round(parse - ansible_api, 3),
        "raw_list_s": raw,
        "baseline_s": baseline,
        "baseline_runs": 0 if m["lean"] else 1,
        "cached_cli_s": m["cached"],
        "first_requests": m["first_requests"],
        "cached_requests": m["cached_requests"],
        "plugin_playbook_s": playbook,
        "plugin_cli_every_variable_s": cli_every,
        "plugin_cli_max_rss_mib": max(m["peaks"]),
        "plugin_cli_every_variable_max_rss_mib": max(m["peaks_every"]) if m["peaks_every"] else None,
        "cached_cli_max_rss_mib": max(m["peaks_cached"]),
        "plugin_cli_ms_per_claim": round(cli * 1000 / size, 3),
        "baseline_ms_per_claim": _ratio(baseline * 1000 if baseline else None, size, 3),
        "baseline_over_plugin": _ratio(baseline, cli),
        "baseline_over_plugin_every_variable": _ratio(baseline, cli_every),
        "baseline_over_plugin_playbook": _ratio(baseline, playbook),
        "plugin_parse_over_raw": round(parse / raw, 2),
        "plugin_own_over_raw": round((parse - ansible_api) / raw, 2),
        "plugin_cli_over_raw": round(cli / raw, 2),
        "raw_list_samples_s": m["raws"],
        "plugin_source_s": in_source,
        "plugin_source_own_s": round(in_source - ansible_api, 3),
        "plugin_source_own_over_raw": round((in_source - ansible_api) / raw, 2),
        "loadavg_at_size_start": m["load_start"],
        "loadavg_at_size_end": round(os.getloadavg()[0], 1),
    }
    if "before" in sides:
        old = sides["before"]
        result.update(
            before_plugin_parse_s=old["parse"],
            before_ansible_inventory_api_s=old["ansible_api"],
            before_plugin_own_s=round(old["parse"] - old["ansible_api"], 3),
            before_plugin_own_over_raw=round((old["parse"] - old["ansible_api"]) / raw, 2),
            before_plugin_source_own_s=round(old["source"] - old["ansible_api"], 3),
            before_plugin_source_own_over_raw=round((old["source"] - old["ansible_api"]) / raw, 2),
        )
    return result


# --------------------------------------------------------------------------- ironic

IRONIC_CLASS = "bench"
TEMPLATES = 2


def _insert(db, table: str, row: dict) -> int:
    columns = sorted(row)
    cursor = db.execute(
        "INSERT INTO %s (%s) VALUES (%s)" % (table, ", ".join(columns), ", ".join("?" * len(columns))),
        [row[c] for c in columns],
    )
    return cursor.lastrowid


def clone_claimed_nodes(db_path: Path, template_uuid: str, count: int, first: int) -> None:
    """Copy a claimed, deployed node (its row, port, traits and allocation) ``count`` times in Ironic's database."""
    with sqlite3.connect(db_path, timeout=120) as db:
        db.row_factory = sqlite3.Row
        node = dict(db.execute("SELECT * FROM nodes WHERE uuid = ?", (template_uuid,)).fetchone())
        allocation = dict(db.execute("SELECT * FROM allocations WHERE node_id = ?", (node["id"],)).fetchone())
        port = dict(db.execute("SELECT * FROM ports WHERE node_id = ?", (node["id"],)).fetchone())
        traits = [dict(r) for r in db.execute("SELECT * FROM node_traits WHERE node_id = ?", (node["id"],))]
        for row in (node, allocation, port):
            del row["id"]
        template_info = json.loads(node["instance_info"] or "{}")
        for index in range(first, first + count):
            allocation_uuid = str(uuid.uuid4())
            # As host_claim leaves a node it deployed: the claim's name for the inventory (the templates, deployed
            # without host_claim, carry none and are read through their allocations).
            marker = {"name": "bench-claim-%05d" % index, "allocation": allocation_uuid, "project": allocation["owner"]}
            node_id = _insert(
                db,
                "nodes",
                dict(
                    node,
                    uuid=str(uuid.uuid4()),
                    name="bench-node-%05d" % index,
                    instance_uuid=allocation_uuid,
                    instance_info=json.dumps(dict(template_info, baremetal_tenancy_claim=marker)),
                    allocation_id=None,
                    reservation=None,
                ),
            )
            extra = json.dumps(
                {
                    "addresses": [
                        {
                            "type": "InternalIP",
                            "address": "10.%d.%d.%d" % (index >> 16 & 255, index >> 8 & 255, index & 255),
                        }
                    ]
                }
            )
            allocation_id = _insert(
                db,
                "allocations",
                dict(allocation, uuid=allocation_uuid, name="bench-claim-%05d" % index, node_id=node_id, extra=extra),
            )
            db.execute("UPDATE nodes SET allocation_id = ? WHERE id = ?", (allocation_id, node_id))
            _insert(
                db,
                "ports",
                dict(
                    port,
                    uuid=str(uuid.uuid4()),
                    node_id=node_id,
                    address="52:54:02:%02x:%02x:%02x" % (index >> 16 & 255, index >> 8 & 255, index & 255),
                ),
            )
            for trait in traits:
                _insert(db, "node_traits", dict(trait, node_id=node_id))


def _raw_list(conn, path: str, key: str, params: dict, page_size: int) -> list:
    items, marker = [], None
    while True:
        query = dict(params, limit=page_size)
        if marker:
            query["marker"] = marker
        body = conn.baremetal.get(path, params=query, microversion="1.78").json()
        page = body[key]
        items += page
        if not body.get("next") or not page:
            return items
        marker = page[-1]["uuid"]


def raw_ironic_list(conn, project_id: str, page_size: int = PAGE_SIZE, route: str = "nodes") -> int:
    """The list requests alone (default host variables: no ports list); returns the number of claimed nodes.

    ``nodes``: what the plugin requests now, the project's claimed nodes (and, for the few nodes that do not
    name their claim, their allocations one by one); ``allocations``: what it requested before, the project's
    allocation list (Ironic looks each allocation's node up) and the claimed nodes."""
    from ansible_collections.baremetal.tenancy.plugins.plugin_utils import inventory_model as model

    node_params = {"associated": "true", "project": project_id, "fields": ",".join(model.IRONIC_NODE_FIELDS)}
    nodes = _raw_list(conn, "/nodes", "nodes", node_params, page_size)
    if route == "allocations":
        allocation_params = {"fields": ",".join(model.IRONIC_ALLOCATION_FIELDS), "owner": project_id}
        return len(_raw_list(conn, "/allocations", "allocations", allocation_params, page_size))
    fields = ",".join(model.IRONIC_ALLOCATION_FIELDS)
    for node in nodes:
        if "baremetal_tenancy_claim" not in (node.get("instance_info") or {}):
            conn.baremetal.get(
                "/allocations/%s" % node["instance_uuid"], params={"fields": fields}, microversion="1.78"
            )
    return len(nodes)


def same_records_both_routes(conn, project_id: str) -> dict:
    """The plugin's records (nodes route) against the records joined from every allocation, in process."""
    from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.claim_view import ironic_records
    from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic
    from ansible_collections.baremetal.tenancy.plugins.plugin_utils import inventory_api
    from ansible_collections.baremetal.tenancy.plugins.plugin_utils import inventory_model as model

    reader = inventory_api.IronicClaims.__new__(inventory_api.IronicClaims)
    reader.conn, reader.client = conn, Ironic(conn)
    reader.project_id, reader.project_name = project_id, "tenant-a"
    start = time.perf_counter()
    by_nodes = reader.records(PAGE_SIZE, ports=True)
    nodes_s = time.perf_counter() - start
    start = time.perf_counter()
    allocations = reader.client.list_allocations(fields=model.IRONIC_ALLOCATION_FIELDS, owner=project_id)
    nodes = reader.client.list_nodes(fields=model.IRONIC_NODE_FIELDS, associated="true")
    by_allocations = ironic_records(allocations, nodes, reader.client.list_ports(), {project_id: "tenant-a"})
    allocations_s = time.perf_counter() - start

    def key(records):
        return sorted(records, key=lambda r: r["node_uuid"])

    return {
        "records": len(by_nodes),
        "same_records_as_allocation_route": key(by_nodes) == key(by_allocations),
        "records_by_nodes_s": round(nodes_s, 3),
        "records_by_allocations_s": round(allocations_s, 3),
    }


def ironic_baseline(env: dict, workdir: Path, expected: int) -> float:
    plays = [
        {
            "name": "what a tenant does without the plugin",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "list my nodes",
                    "openstack.cloud.baremetal_node_info": {"cloud": env["OS_CLOUD"]},
                    "register": "nodes",
                },
                {
                    "name": "add each claimed node",
                    "ansible.builtin.add_host": {
                        "name": "{{ item.name }}",
                        "groups": ["claimed"],
                        "node_ready": "{{ item.provision_state == 'active' }}",
                    },
                    "loop": "{{ nodes.nodes | selectattr('instance_id') }}",
                    "loop_control": {"label": "{{ item.name }}"},
                },
            ],
        },
        {
            "name": "count them",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "tasks": [
                {"name": "check", "ansible.builtin.assert": {"that": "groups['claimed'] | length == %d" % expected}}
            ],
        },
    ]
    start = time.perf_counter()
    run = run_playbook(plays, env, workdir, callback="default", timeout=7200)
    seconds = time.perf_counter() - start
    assert run.ok, run.explain()
    return round(seconds, 3)


def seed_ironic(env, admin, tenant, conn, count: int) -> float:
    """``count`` nodes claimed by tenant-a: TEMPLATES enrolled, allocated and deployed through the API, the rest
    cloned in Ironic's database; returns the seconds."""
    t0 = time.perf_counter()
    templates = []
    for index in range(TEMPLATES):
        node = openstack_harness.enroll_fake_node(
            admin,
            "bench-template-%d" % index,
            IRONIC_CLASS,
            env.infra_project_id,
            lessee=tenant.project_id,
            traits=["CUSTOM_BENCH"],
        )
        admin.baremetal.create_port(node_id=node.id, address="52:54:01:00:00:%02x" % index)
        allocation = conn.baremetal.create_allocation(
            name="bench-template-claim-%d" % index, resource_class=IRONIC_CLASS
        )
        _wait_allocation(conn, allocation.id)
        conn.baremetal.update_allocation(
            allocation.id, extra={"addresses": [{"type": "InternalIP", "address": "10.255.0.%d" % (index + 1)}]}
        )
        _deploy(admin, node.id)
        templates.append(node.id)
    clone_claimed_nodes(env.ironic_server.db_path, templates[0], count - TEMPLATES, 0)
    return time.perf_counter() - t0


def ironic_cached(env, run_dir: Path, count: int) -> tuple[float, int, int]:
    """The plugin with a jsonfile cache, through proxies that count the requests to Keystone and Ironic:
    (the cached run's seconds, the first run's requests, the cached run's requests)."""
    keystone_base = env.keystone.url.rsplit("/v3", 1)[0]
    with CountingProxy(keystone_base) as keystone, CountingProxy(env.ironic.url) as ironic:
        clouds = ironic_clouds_via(env, keystone.url, ironic.url, run_dir / "clouds.yaml")
        proxied = {"OS_CLIENT_CONFIG_FILE": str(clouds), "OS_CLOUD": "tenant-a"}
        cached_source = write_source(
            run_dir / "cached.claimed_hosts.yml",
            backend="ironic",
            page_size=PAGE_SIZE,
            cache=True,
            cache_plugin="ansible.builtin.jsonfile",
            cache_connection=str(run_dir / "cache"),
            cache_timeout=3600,
        )
        plugin_cli(cached_source, proxied, run_dir, count)
        first_requests = len(keystone.paths()) + len(ironic.paths())
        keystone.reset()
        ironic.reset()
        cached = plugin_cli(cached_source, proxied, run_dir, count)
        cached_requests = len(keystone.paths()) + len(ironic.paths())
    return cached, first_requests, cached_requests


def bench_ironic(count: int, workdir: Path) -> dict:
    env = openstack_harness.start_openstack(workdir / "openstack")
    try:
        admin, tenant = env.admin_conn, env.tenants["tenant-a"]
        conn = tenant.conn("member")
        seed_seconds = seed_ironic(env, admin, tenant, conn, count)
        listed = raw_ironic_list(conn, tenant.project_id)
        assert listed == count, (listed, count)
        run_dir = workdir / "ironic"
        run_dir.mkdir()
        tenant_env = env.ansible_env("tenant-a")
        source = write_source(run_dir / "ironic.claimed_hosts.yml", backend="ironic", page_size=PAGE_SIZE)
        raw = timed(lambda: raw_ironic_list(conn, tenant.project_id), 5)
        raw_allocations = timed(lambda: raw_ironic_list(conn, tenant.project_id, route="allocations"), 3)
        equivalence = same_records_both_routes(conn, tenant.project_id)
        assert equivalence["same_records_as_allocation_route"], equivalence
        in_process = plugin_in_process(source, tenant_env, run_dir, count)
        parse, ansible_api = in_process["parse"], in_process["ansible_api"]
        cli = median([plugin_cli(source, tenant_env, run_dir, count) for dummy in range(3)])
        every_source = write_source(
            run_dir / "every.claimed_hosts.yml",
            backend="ironic",
            page_size=PAGE_SIZE,
            host_variables=ALL_HOST_VARIABLES,
        )
        cli_every = median([plugin_cli(every_source, tenant_env, run_dir, count) for dummy in range(3)])
        playbook = median([plugin_playbook(source, tenant_env, run_dir, count) for dummy in range(3)])
        baseline = ironic_baseline(tenant_env, run_dir, count)
        cached, first_requests, cached_requests = ironic_cached(env, run_dir, count)
        result = {
            "nodes": count,
            "seed_s": round(seed_seconds, 1),
            "cloned_in_db": count - TEMPLATES,
            "plugin_cli_s": cli,
            "plugin_parse_s": parse,
            "ansible_inventory_api_s": ansible_api,
            "plugin_own_s": round(parse - ansible_api, 3),
            "raw_list_s": raw,
            "raw_allocation_route_s": raw_allocations,
            **equivalence,
            "baseline_s": baseline,
            "cached_cli_s": cached,
            "first_requests": first_requests,
            "cached_requests": cached_requests,
            "plugin_playbook_s": playbook,
            "plugin_cli_every_variable_s": cli_every,
            "baseline_over_plugin": round(baseline / cli, 1),
            "baseline_over_plugin_every_variable": round(baseline / cli_every, 1),
            "baseline_over_plugin_playbook": round(baseline / playbook, 1),
            "plugin_parse_over_raw": round(parse / raw, 2),
            "plugin_own_over_raw": round((parse - ansible_api) / raw, 2),
            "plugin_cli_over_raw": round(cli / raw, 2),
        }
        print("ironic %d: %s" % (count, json.dumps(result)), file=sys.stderr)
        return result
    finally:
        env.stop()


def metal3_goals(results: dict) -> dict:
    """The goals of issue 20 against the figures of the largest size (and of every size for the per-size ones)."""
    largest = results[str(max(int(size) for size in results))]
    return {
        "claims": largest["claims"],
        "baseline_over_plugin_ge_15": None
        if largest["baseline_over_plugin"] is None
        else largest["baseline_over_plugin"] >= 15,
        "plugin_own_over_raw_le_1_3": all(r["plugin_own_over_raw"] <= 1.3 for r in results.values()),
        "plugin_source_own_over_raw_le_1_3": all(r["plugin_source_own_over_raw"] <= 1.3 for r in results.values()),
        "cached_requests_0": all(r["cached_requests"] == 0 for r in results.values()),
        "plugin_cli_max_rss_lt_1_gib": largest["plugin_cli_max_rss_mib"] < 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument(
        "--claims", "--sizes", dest="claims", default="1000,5000,20000", help="claim counts for metal3 (cumulative)"
    )
    parser.add_argument("--ironic-nodes", type=int, default=1000)
    parser.add_argument("--skip", choices=["metal3", "ironic"], action="append", default=[])
    parser.add_argument("--lean", action="store_true", help="metal3: no baseline, every-variable or playbook runs")
    parser.add_argument(
        "--before", metavar="GIT_REF", help="also run the plugin at this commit in process, side by side (metal3)"
    )
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bmt-bench-inventory-"))
    report = {
        "bench": "inventory",
        "workdir": str(workdir),
        "machine": os.environ.get("BENCH_MACHINE", "polyglot"),
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 1) for x in os.getloadavg()],
    }
    if "metal3" not in args.skip:
        before = old_collections(args.before, workdir) if args.before else None
        report["before"] = args.before
        report["lean"] = args.lean
        report["metal3"] = bench_metal3([int(s) for s in args.claims.split(",")], workdir, before, args.lean)
        report["metal3_goals"] = metal3_goals(report["metal3"])
    if "ironic" not in args.skip:
        report["ironic"] = bench_ironic(args.ironic_nodes, workdir)
    report["loadavg_end"] = [round(x, 1) for x in os.getloadavg()]
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
