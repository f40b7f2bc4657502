"""A watcher for the benches (``tenant_networks.py``, ``esi_leap_claim.py``): a thread that calls its ``read()``
every ``interval`` seconds while a ``with`` block runs, to note when the services reached a state."""

from __future__ import annotations

import threading


class Watch:
    """Subclasses define ``read()``; ``with`` starts the thread, its end stops it (after the read under way)."""

    interval = 0.1

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def read(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.read()
            self._stop.wait(self.interval)
