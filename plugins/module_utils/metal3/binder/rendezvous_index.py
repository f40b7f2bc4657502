# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The binder's candidates, ranked for one claim without scanning them all; pure.

The planner (:mod:`binding`) ranks a claim's candidates by ``(group, seed of
the claim XOR seed of the host, host key, position)`` and keeps the first few
that no other claim of the pass has taken.  Scanning every candidate for every
claim costs claims x hosts (50 million steps for 5,000 claims over 10,000
hosts).  :class:`XorRank` keeps one group's entries sorted by seed: the
entries sharing the top bits of their seed are a contiguous run, so walking
the bits from the top, nearer half first, yields entries in increasing XOR
with the claim's seed after a few ``bisect`` steps each, and a claim reads
only as many entries as it keeps plus the taken ones it skips.
:class:`CandidateIndex` splits a survey's candidates into the groups the
ranking puts first (node-reuse label, unlabelled, labelled; a failure domain
before the others) and chains them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, islice

#: bits of a rendezvous seed (``binding._seed``)
SEED_BITS = 64

#: an entry: ``(seed, host key, position in the candidate list, node-reuse label, failure domain)``
Entry = tuple


class XorRank:
    """Entries sorted by seed, read in increasing ``(seed XOR query, key, position)``."""

    def __init__(self, entries: Iterable[Entry]):
        self.entries = sorted(entries, key=lambda entry: entry[:3])
        self.seeds = [entry[0] for entry in self.entries]

    def __len__(self) -> int:
        return len(self.entries)

    def nearest(self, query: int, skip: Callable[[Entry], bool]) -> Iterator[Entry]:
        """The entries not ``skip``-ped, nearest first: lowest ``seed ^ query``, then key and position."""
        entries, seeds = self.entries, self.seeds
        stack = [(0, len(entries), SEED_BITS - 1)] if entries else []
        while stack:
            low, high, bit = stack.pop()
            if high - low == 1 or bit < 0:
                # one entry, or entries with one seed (sorted by key and position)
                for entry in entries[low:high]:
                    if not skip(entry):
                        yield entry
                continue
            # entries low..high share the seed bits above ``bit``: those with ``bit`` clear come first
            middle = bisect_left(seeds, (seeds[low] >> (bit + 1) << (bit + 1)) | (1 << bit), low, high)
            if query >> bit & 1:
                halves = ((low, middle), (middle, high))
            else:
                halves = ((middle, high), (low, middle))
            for start, end in halves:  # the nearer half is pushed last, so popped first
                if start < end:
                    stack.append((start, end, bit - 1))


class CandidateIndex:
    """One survey's candidates, grouped as the planner ranks them (indexes built when first asked)."""

    def __init__(self, entries: Sequence[Entry]):
        self.entries = list(entries)
        self.ranks = {}

    def _rank(self, group: tuple, select: Callable[[Entry], bool]) -> XorRank:
        if group not in self.ranks:
            self.ranks[group] = XorRank(entry for entry in self.entries if select(entry))
        return self.ranks[group]

    def _unlabelled(self):
        return self._rank(("unlabelled",), lambda entry: entry[3] is None)

    def _labelled(self):
        return self._rank(("labelled",), lambda entry: entry[3] is not None)

    def best(
        self, query: int, taken: set, count: int, reuse_value: str | None = None, domain: str | None = None
    ) -> list[Entry]:
        """The first ``count`` entries whose key is not in ``taken``, in the planner's order.

        Without ``domain``: hosts labelled ``reuse_value``, then unlabelled hosts, then hosts labelled for
        another reuse; with ``domain`` (baremetal-operator's dialect, no node reuse): the same groups within the
        failure domain, then outside it.
        """
        if domain:
            inside = (
                self._rank(("domain", domain, False), lambda entry: entry[4] == domain and entry[3] is None),
                self._rank(("domain", domain, True), lambda entry: entry[4] == domain and entry[3] is not None),
            )
            groups = [rank.nearest(query, lambda entry: entry[1] in taken) for rank in inside]
            groups.extend(
                rank.nearest(query, lambda entry: entry[1] in taken or entry[4] == domain)
                for rank in (self._unlabelled(), self._labelled())
            )
            return list(islice(chain.from_iterable(groups), count))
        groups = []
        if reuse_value:
            reuse = self._rank(("reuse", reuse_value), lambda entry: entry[3] == reuse_value)
            groups.append(reuse.nearest(query, lambda entry: entry[1] in taken))
        groups.append(self._unlabelled().nearest(query, lambda entry: entry[1] in taken))
        groups.append(
            self._labelled().nearest(
                query, lambda entry: entry[1] in taken or (reuse_value and entry[3] == reuse_value)
            )
        )
        return list(islice(chain.from_iterable(groups), count))
