#!/usr/bin/env python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the CPU of a run goes, by kind of process: a /proc sampler for the test bed.

    python scripts/cpu_profile.py --out profile.json -- make test      # runs the command, samples until it ends
    python scripts/cpu_profile.py --out profile.json --pid 1234       # samples until process 1234 ends
    python scripts/cpu_profile.py --acct /tmp/pacct -- make test      # and names the short-lived processes (root)

Every ``--interval`` seconds it reads the user and system CPU time of every process
(``/proc/<pid>/stat``) and keeps each process's first and last reading; a process is
counted from its first reading (a process started and ended between two readings
is missed: keep the interval short; what the machine spent beyond the processes read is its own row, mostly
Ansible's short module processes). At the end it sums the CPU seconds by kind
(its program in :data:`PROGRAMS`, else the first rule of :data:`KINDS` whose words the command line holds) and prints a
table, most CPU first (and the command lines of kind ``other`` that used most), and one JSON line (also written to ``--out``) with the wall
time, the machine's CPU seconds (``/proc/stat``) and the seconds per kind.

With ``--acct FILE`` (root) the kernel's process accounting is on for the run, written to FILE: every process that
ends leaves its name (15 characters), its parent's pid and its CPU time there. The CPU the sampler missed is then
named too: ``short_lived`` gives it by the kind of the nearest sampled ancestor and the process's name
(``ansible-playbook <- python`` is a ``python`` started by an ``ansible-playbook`` or by a child of one). Records
are matched to the sampler's processes by pid alone, so a pid the machine reused during the run mixes two
processes' figures: a diagnostic, good for the large rows.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import struct
import subprocess
import sys
import time

#: program (the first word of the command line, or the script or ``-m`` module a Python runs, without its
#: directory; a process title such as ``postgres: ironic ...`` by its first word) -> kind: decided by the program
#: first, so that ``ansible-playbook .../ironic_claim_hosts.yml`` or ``postgres: ironic ironic`` is not Ironic
PROGRAMS = {
    "ansible-playbook": "ansible-playbook",
    "ansible-inventory": "ansible-playbook",
    "ansible-runner": "ansible-playbook",
    "ansible-test": "ansible-test",
    "ansible-lint": "ansible-test",
    "antsibull-docs": "ansible-test",
    "molecule": "molecule",
    "ansible-rulebook": "ansible-rulebook",
    "java": "ansible-rulebook",
    "pytest": "pytest",
    "postgres": "postgres",
    "postgres:": "postgres",
    "ironic:": "ironic",
    "ironic-dbsync": "ironic",
    "etcd": "etcd",
    "kube-apiserver": "kube-apiserver",
    "kube-controller-manager": "kube-controller-manager",
    "sshd": "sshd",
    "sshd:": "sshd",
    "git": "git",
    "pylint": "ansible-test",  # ansible-test sanity's; its command line names the collection's files (ironic_*.py)
    "mypy": "ansible-test",
    "module_zygote.py": "module-zygote",  # the modules run by the test bed's zygote (its forks keep its command line)
}
#: (kind, words any of which in the command line makes a process that kind), first match wins, for the processes
#: whose program says nothing (``python -c ...`` launchers, gunicorn workers, the Go toolchain's tools)
KINDS = (
    ("go", ("go build", "/compile", "/link", "go-build")),
    ("fake-ipa", ("fake_ipa", "fake-ipa", "fakeipa", "ironic_python_agent")),
    ("sushy-tools", ("sushy",)),
    ("ironic", ("ironic",)),
    ("keystone", ("keystone",)),
    ("neutron", ("neutron",)),
    ("esi-leap", ("esi-leap", "esi_leap")),
    ("postgres", ("postgres",)),
    ("baremetal-operator", ("bmo-", "baremetal-operator")),
    ("flux", ("source-controller", "kustomize-controller", "helm-controller")),
    ("ansible-test", ("pylint", "mypy")),
    ("ansible-playbook", ("AnsiballZ", "ansible_playbook")),
    ("git", ("git-",)),
)
TICKS = os.sysconf("SC_CLK_TCK")
ACCT_RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3 (linux/acct.h): 64 bytes
ACCT_HZ = 100  # the unit of its comp_t times (AHZ)
COMM_MARK = "\x00"  # prefixes a process name read from /proc/<pid>/stat for want of a command line


def program_of(cmdline: str) -> str:
    """The program a command line runs: its first word, or what a Python interpreter runs (script or -m module)."""
    words = cmdline.split()
    if not words:
        return ""
    first = os.path.basename(words[0])
    if first.startswith("python") and len(words) > 1:
        if words[1] == "-m" and len(words) > 2:
            return words[2]
        if not words[1].startswith("-"):
            return os.path.basename(words[1])
    return first


def kind_of(cmdline: str) -> str:
    if "module_zygote.py" in cmdline and "--preload-deps-of" in cmdline:
        return "controller-zygote"  # Ansible's controllers run by the test bed's zygote of the test venv
    kind = PROGRAMS.get(program_of(cmdline))
    if kind:
        return kind
    for kind, words in KINDS:
        if any(word in cmdline for word in words):
            return kind
    return "other"


def read_procs(parents: dict[int, int] | None = None) -> dict[int, tuple[float, str]]:
    """pid -> (CPU seconds so far, command line) of every process that can be read now (and pid -> parent's pid
    into ``parents`` when given)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as handle:
                stat = handle.read().decode("utf-8", "replace")
            with open("/proc/%s/cmdline" % name, "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
        if parents is not None:
            parents[int(name)] = int(fields[1])
        # a process that has ended and is not yet reaped (or a kernel thread) has no command line: its name then
        # (15 characters), marked so that the command line read earlier for the same process is kept
        found[int(name)] = (cpu, cmdline or COMM_MARK + stat.partition("(")[2].partition(")")[0])
    return found


def machine_cpu() -> float:
    with open("/proc/stat", encoding="ascii") as handle:
        fields = handle.readline().split()[1:]
    busy = sum(int(value) for index, value in enumerate(fields) if index not in (3, 4))  # not idle, iowait
    return busy / TICKS


def alive(proc: subprocess.Popen | None, pid: int | None) -> bool:
    if proc is not None:
        return proc.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def comp_t(value: int) -> float:
    """Seconds of an accounting record's time (13 bits of mantissa, 3 of base-8 exponent, in 1/AHZ s)."""
    return ((value & 0x1FFF) << (3 * (value >> 13))) / ACCT_HZ


def read_acct(path: str) -> list[tuple[int, int, float, str]]:
    """(pid, parent's pid, CPU seconds, name) of every process an accounting file recorded."""
    with open(path, "rb") as handle:
        data = handle.read()
    records = []
    for offset in range(0, len(data) - ACCT_RECORD.size + 1, ACCT_RECORD.size):
        fields = ACCT_RECORD.unpack_from(data, offset)
        if fields[1] != 3:  # ac_version
            continue
        name = fields[-1].split(b"\0", 1)[0].decode("utf-8", "replace")
        records.append((fields[6], fields[7], comp_t(fields[10]) + comp_t(fields[11]), name))
    return records


def set_acct(path: str | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(path.encode() if path else None) != 0:
        raise OSError(ctypes.get_errno(), "acct(%s): %s" % (path, os.strerror(ctypes.get_errno())))


def short_lived(
    records: list[tuple[int, int, float, str]],
    used: dict[int, float],
    parents: dict[int, int],
    kinds: dict[int, str],
) -> dict[str, float]:
    """The CPU the sampler missed, by "<kind of the nearest sampled ancestor> <- <process name>": of each ended
    process, its CPU beyond what the sampler counted of its pid."""
    parent_of = dict(parents)
    for pid, ppid, _cpu, _name in records:
        parent_of.setdefault(pid, ppid)
    found: dict[str, float] = {}
    for pid, ppid, cpu, name in records:
        missed = cpu - used.get(pid, 0.0)
        if missed <= 0.005:
            continue
        ancestor, seen = ppid, set()
        while ancestor and ancestor not in kinds and ancestor not in seen:
            seen.add(ancestor)
            ancestor = parent_of.get(ancestor, 0)
        key = "%s <- %s" % (kinds.get(ancestor, "?"), name)
        found[key] = found.get(key, 0.0) + missed
    return found


def profile(interval: float, proc: subprocess.Popen | None, pid: int | None, acct: str | None = None) -> dict:
    me = os.getpid()
    first: dict[int, float] = {}
    last: dict[int, tuple[float, str]] = {}
    parents: dict[int, int] = {}
    start, machine_start = time.monotonic(), machine_cpu()
    while True:
        for key, (cpu, read) in read_procs(parents).items():
            if key == me:
                continue
            # the same process, ended since the last reading: its command line read then
            cmdline = last[key][1] if key in last and read.startswith(COMM_MARK) and cpu >= last[key][0] else read
            if key not in first or (cmdline != last[key][1] and cpu < last[key][0]):  # new, or a reused pid
                first[key] = 0.0 if time.monotonic() - start > interval else cpu
            last[key] = (cpu, cmdline)
        if not alive(proc, pid):
            break
        time.sleep(interval)
    by_kind: dict[str, float] = {}
    others: dict[str, float] = {}
    used_by_pid: dict[int, float] = {}
    kinds: dict[int, str] = {}
    for key, (cpu, read) in last.items():
        used = cpu - first[key]
        cmdline = read.lstrip(COMM_MARK)
        kinds[key] = kind_of(cmdline)
        used_by_pid[key] = used
        if used > 0:
            kind = kinds[key]
            by_kind[kind] = by_kind.get(kind, 0.0) + used
            if kind == "other":
                words = cmdline.split()
                program = " ".join([os.path.basename(words[0]), *words[1:3]])[:80] if words else "?"
                others[program] = others.get(program, 0.0) + used
    machine = machine_cpu() - machine_start
    by_kind["(unsampled, short-lived)"] = max(0.0, machine - sum(by_kind.values()))
    if acct:
        set_acct(None)  # off before its file is read
    missed = short_lived(read_acct(acct), used_by_pid, parents, kinds) if acct else {}
    return {
        "wall_s": round(time.monotonic() - start, 1),
        "machine_cpu_s": round(machine, 1),
        "cpu_s_by_kind": {k: round(v, 1) for k, v in sorted(by_kind.items(), key=lambda item: -item[1])},
        "other_top": {k: round(v, 1) for k, v in sorted(others.items(), key=lambda item: -item[1])[:15]},
        "short_lived": {k: round(v, 1) for k, v in sorted(missed.items(), key=lambda item: -item[1])[:40]},
        "rc": proc.returncode if proc is not None else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--out")
    parser.add_argument("--pid", type=int)
    parser.add_argument("--acct", help="turn the kernel's process accounting on into this file for the run (root)")
    parser.add_argument("command", nargs="*")
    args = parser.parse_args()
    if bool(args.pid) == bool(args.command):
        parser.error("give either --pid or a command after --")
    if args.acct:
        open(args.acct, "wb").close()
        set_acct(args.acct)
    try:
        proc = subprocess.Popen(args.command) if args.command else None
        result = profile(args.interval, proc, args.pid, args.acct)
    finally:
        if args.acct:
            set_acct(None)
    for kind, seconds in result["cpu_s_by_kind"].items():
        print(
            "%-26s %9.1f s  %5.1f%%" % (kind, seconds, 100 * seconds / max(result["machine_cpu_s"], 1)), file=sys.stderr
        )
    for program, seconds in result["other_top"].items():
        print("  other: %-60s %8.1f s" % (program, seconds), file=sys.stderr)
    for program, seconds in result["short_lived"].items():
        print("  short-lived: %-54s %8.1f s" % (program, seconds), file=sys.stderr)
    line = json.dumps(result)
    print(line)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(line + "\n")
    return result["rc"] or 0


if __name__ == "__main__":
    sys.exit(main())
