"""What the test bed changes in its Ironic processes (imported by the launcher of :func:`harness.ironic.start_ironic`).

Ironic 39's Redfish driver derives the key of its session cache with PBKDF2-SHA512, 600,000 rounds, from the
BMC's password and address before every Redfish request (``redfish.utils.SessionCache``): 0.4-0.8 s of CPU
here per request, most of a test-bed Ironic's CPU (node verification at enrolment makes about six requests per
node). The key only names a cached Redfish session inside the process (it changes with the password, so a changed
password gets a new session). So the test bed derives it with at most :data:`ROUNDS` rounds and remembers the
result in the process: the same credentials get the same key, different ones a different key, Ironic still talks
to the BMC for every request. Before the rounds were capped, the first request to each new BMC still cost its
0.4-0.8 s: a quarter of a busy test-bed Ironic's samples (py-spy, 2026-12-01), the suites enrolling hundreds of
BMCs. Nothing else in Ironic changes (nothing else in its process calls PBKDF2). Not for production: weaker
derivation, and the derived keys of the BMC passwords kept in memory (Ironic keeps the passwords themselves there
anyway).
"""

from __future__ import annotations

import functools
import hashlib

#: the most rounds a test-bed Ironic's PBKDF2 runs (Ironic 39 asks 600,000 for its Redfish session-cache key)
ROUNDS = 1000


def install(cache_size: int = 4096) -> None:
    """Replace ``hashlib.pbkdf2_hmac`` in this process by a memoized one of at most :data:`ROUNDS` rounds
    (idempotent)."""
    if getattr(hashlib.pbkdf2_hmac, "test_bed_memo", False):
        return
    derive = hashlib.pbkdf2_hmac

    @functools.lru_cache(maxsize=cache_size)
    def remembered(hash_name, password, salt, iterations, dklen):
        return derive(hash_name, password, salt, min(iterations, ROUNDS), dklen)

    def pbkdf2_hmac(hash_name, password, salt, iterations, dklen=None):
        return remembered(hash_name, bytes(password), bytes(salt), iterations, dklen)

    pbkdf2_hmac.test_bed_memo = True
    hashlib.pbkdf2_hmac = pbkdf2_hmac
