# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One client per control plane, one wait loop, one parallel map, one error table.

The collection reaches Kubernetes only through ``metal3/client.py``, Ironic
only through ``ironic/client.py`` and BMCs only through ``redfish/client.py``;
it waits only through ``common/polling.py``, runs work side by side only
through ``common/parallel.py`` (and the Kubernetes client's watch threads),
and maps HTTP statuses to errors only in ``common/errors.py``.  This test
reads the source of ``plugins/`` and fails on a second implementation.
"""

import re
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"

RULES = {
    "HTTP request": (
        re.compile(
            r"\burllib3\.(PoolManager|request|Timeout|Retry)|\bconn\.baremetal\.|\.baremetal\.(get|post|patch|put|delete)\("
            r"|\bopen_url\(|\burlopen\(|\brequests\.(get|post|patch|put|delete|Session)\b|\bhttp\.client\b"
            r"|CustomObjectsApi|CoreV1Api"
        ),
        # metal3/transport.py builds the Kubernetes client's urllib3 pool (no request: they all go through client.py)
        {
            "module_utils/metal3/client.py",
            "module_utils/metal3/transport.py",
            "module_utils/ironic/client.py",
            "module_utils/redfish/client.py",
        },
    ),
    "wait loop": (
        re.compile(r"\btime\.sleep\(|\bsleep\(|\bdeadline\b"),
        # leases.py and esi_leap_expire.py sleep once until a lease's end (host_lease's and host_offer_expire's
        # lead_time: a wall-clock instant, no state polled; the wait for ESI-Leap to end the lease is a poll);
        # bind_worker.py is host_bind_worker's serve loop between spool reads, not a wait for a state. The clients
        # send a transient answer's request again in their request loop (Ironic's and ESI-Leap's).
        {
            "module_utils/common/polling.py",
            "module_utils/metal3/client.py",
            "module_utils/ironic/client.py",
            "module_utils/ironic/esi_leap_client.py",
            "module_utils/ironic/leases.py",
            "module_utils/ironic/esi_leap_expire.py",
            "module_utils/metal3/events/worker.py",
        },
    ),
    "parallel map": (
        re.compile(r"\bThreadPoolExecutor\b|\bthreading\.Thread\(|\bmultiprocessing\b"),
        {"module_utils/common/parallel.py", "module_utils/metal3/client.py"},
    ),
    "status-to-error table": (
        re.compile(r"\{\s*4\d\d\s*:\s*(InvalidInput|NotFound|Forbidden|Conflict|BackendError)"),
        {"module_utils/common/errors.py"},
    ),
}


def sources():
    return sorted(path for path in PLUGINS.rglob("*.py") if "__pycache__" not in path.parts)


def code_lines(path):
    """Lines of code without comments and docstrings' prose lines (a rough but sufficient cut)."""
    in_doc = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        quotes = stripped.count('"""') + stripped.count("'''")
        if in_doc:
            if quotes % 2:
                in_doc = False
            continue
        if stripped.startswith(('"""', "'''", 'r"""')):
            in_doc = quotes % 2 == 1
            continue
        if stripped.startswith("#"):
            continue
        yield number, line.split("  #", 1)[0]


@pytest.mark.parametrize("kind", sorted(RULES))
def test_no_second_implementation(kind):
    pattern, allowed = RULES[kind]
    found = []
    for path in sources():
        where = path.relative_to(PLUGINS).as_posix()
        if where in allowed:
            continue
        found += [
            "%s:%d: %s" % (where, number, line.strip()) for number, line in code_lines(path) if pattern.search(line)
        ]
    assert found == [], "a second %s outside %s:\n%s" % (kind, sorted(allowed), "\n".join(found))


def test_the_rules_see_what_they_forbid():
    """Each rule matches the code it is meant to find (so an empty result above means something)."""
    samples = {
        "HTTP request": "response = conn.baremetal.get('/nodes')",
        "wait loop": "    time.sleep(0.5)",
        "parallel map": "with ThreadPoolExecutor(max_workers=4) as pool:",
        "status-to-error table": "_TABLE = {404: NotFound, 409: Conflict}",
    }
    for kind, sample in samples.items():
        assert RULES[kind][0].search(sample), kind
