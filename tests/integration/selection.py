"""Markers of suites that need more than the default test bed: selected only when the marker expression names them.

``pytest tests/integration`` without ``-m`` (or with an expression that does not name the marker) deselects the
suites of :data:`OPT_IN`, so a plain run neither needs their builds (Flux, Neutron's venv, ESI-Leap's venv) nor
starts their services; ``make test-gitops``, ``make test-networks`` and ``make test-esi`` name them, and so do the
sessions of ``scripts/integration-sessions.sh`` (``gitops``, ``networks`` and ``esi`` each select their own;
``not esi``/``not networks`` keep them out of the other sessions).
"""

from __future__ import annotations

#: marker -> why it is opt-in
OPT_IN = {
    "gitops": "the real Flux controllers and a Git server on a cluster of their own (make flux gitops-tools)",
    "networks": "a real switch (Open vSwitch in userspace, root) configured by Neutron (make neutron)",
    "esi": "ESI-Leap's API and manager from their own venv (make esi-leap)",
}


def pytest_collection_modifyitems(config, items):
    """Deselect the tests of each opt-in marker that the marker expression does not name."""
    expression = config.option.markexpr or ""
    skipped = {marker for marker in OPT_IN if marker not in expression}
    if not skipped:
        return
    keep, drop = [], []
    for item in items:
        (drop if any(item.get_closest_marker(m) for m in skipped) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
