"""What the test bed changes in its Ironic processes (imported by the launcher of :func:`harness.ironic.start_ironic`).

Ironic 39's Redfish driver derives the key of its session cache with PBKDF2-SHA512, 600,000 rounds, from the
BMC's password and address before every Redfish request (``redfish.utils.SessionCache``): 0.4-0.8 s of CPU
here per request, most of a test-bed Ironic's CPU (node verification at enrolment makes about six requests per
node). PBKDF2 is a pure function, so the test bed remembers its results in the process: the same request with the
same credentials gets the same key, Ironic still talks to the BMC for every request, and a changed password still
gets a new key. Nothing else in Ironic changes. Not for production: it keeps the derived keys of the BMC
passwords in memory (Ironic keeps the passwords themselves there anyway).
"""

from __future__ import annotations

import functools
import hashlib


def install(cache_size: int = 4096) -> None:
    """Replace ``hashlib.pbkdf2_hmac`` in this process by a memoized one (idempotent)."""
    if getattr(hashlib.pbkdf2_hmac, "test_bed_memo", False):
        return
    derive = hashlib.pbkdf2_hmac

    @functools.lru_cache(maxsize=cache_size)
    def remembered(hash_name, password, salt, iterations, dklen):
        return derive(hash_name, password, salt, iterations, dklen)

    def pbkdf2_hmac(hash_name, password, salt, iterations, dklen=None):
        return remembered(hash_name, bytes(password), bytes(salt), iterations, dklen)

    pbkdf2_hmac.test_bed_memo = True
    hashlib.pbkdf2_hmac = pbkdf2_hmac
