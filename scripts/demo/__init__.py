"""`make demo` (``python scripts/demo``): the collection's main job in three parts, one module each.

- ``__main__``: the arguments (``--only ironic|esi|metal3``, ``--keep``, ``--database``), the parts in turn, the
  exit status;
- :mod:`demo.ironic`, :mod:`demo.esi`, :mod:`demo.metal3`: the parts ("halves"), each with the same shape: ``run(args,
  workdir)`` starts its services (a ``Services`` that stops what it started, also on failure), runs its ``Story``'s
  steps (small named methods, in the order of ``Story.steps()``) and returns the story's tables;
- what they use: :mod:`demo.common` (the progress lines, the error that fails a step, the tables),
  :mod:`demo.networks` (the Ironic half's private networks), :mod:`demo.metal3_web` (the Metal3 half's step 9).

Importing the package puts the integration-test harness (``tests/integration``: ``harness`` starts and stops the
services) on ``sys.path``.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HARNESS = str(Path(__file__).resolve().parents[2] / "tests" / "integration")
if _HARNESS not in sys.path:
    sys.path.insert(0, _HARNESS)
