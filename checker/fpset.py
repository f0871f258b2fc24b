"""An off-heap visited set: 64-bit fingerprints in a numpy open-addressing table.

Each slot holds a fingerprint (uint64; 0 marks an empty slot) and the index of the state it names
(uint32, in order of discovery). Batches are inserted with vectorised linear probing, so the
Python interpreter does a handful of numpy calls per batch instead of one dict operation per state;
a slot costs 12 bytes and the table stays between 3/8 and 3/4 full (16 to 32 bytes per state),
against about 100 bytes per entry of a dict of ints.

>>> import numpy as np
>>> t = FingerprintSet()
>>> t.add_new(np.array([5, 7, 5], dtype=np.uint64)).tolist()   # the repeated 5 is not new
[True, True, False]
>>> t.add_new(np.array([7, 9], dtype=np.uint64)).tolist(), len(t), t.index_of(9)
([False, True], 3, 2)
"""

from __future__ import annotations

import numpy as np

_MIX = np.uint64(0x9E3779B97F4A7C15)   # Fibonacci hashing spreads the slots over the table
_EMPTY_STAND_IN = np.uint64(0x5BD1E9955BD1E995)  # the fingerprint 0 is stored as this one
_GROW_BLOCK = 1 << 16


class FingerprintSet:
    def __init__(self, bits: int = 16):
        self.bits = bits
        self.keys = np.zeros(1 << bits, dtype=np.uint64)
        self.vals = np.zeros(1 << bits, dtype=np.uint32)
        self.count = 0

    def __len__(self) -> int:
        return self.count

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.vals.nbytes

    def _slots(self, fps: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return ((fps * _MIX) >> np.uint64(64 - self.bits)).astype(np.int64)

    def _grow(self) -> None:
        """Double the table, moving the entries a block at a time: besides the two tables, the
        move needs memory for one block only."""
        old_keys, old_vals = self.keys, self.vals
        self.bits += 1
        self.keys = np.zeros(1 << self.bits, dtype=np.uint64)
        self.vals = np.zeros(1 << self.bits, dtype=np.uint32)
        for start in range(0, len(old_keys), _GROW_BLOCK):
            keys = old_keys[start:start + _GROW_BLOCK]
            used = keys != 0
            self._place(keys[used], old_vals[start:start + _GROW_BLOCK][used])

    def _place(self, fps: np.ndarray, vals: np.ndarray) -> np.ndarray:
        """Insert fingerprints not yet in the table (distinct among themselves), each with its value;
        returns a mask of those that were absent (the others keep their old value)."""
        mask = (1 << self.bits) - 1
        new = np.zeros(len(fps), dtype=bool)
        slots = self._slots(fps)
        pending = np.arange(len(fps))
        while pending.size:
            s = slots[pending]
            k = self.keys[s]
            f = fps[pending]
            settled = k == f                       # already there
            empty = np.flatnonzero(k == 0)
            if empty.size:
                # several fingerprints may aim at one empty slot: the first of each takes it
                taken, first = np.unique(s[empty], return_index=True)
                winners = pending[empty[first]]
                self.keys[taken] = fps[winners]
                self.vals[taken] = vals[winners]
                new[winners] = True
                settled[empty[first]] = True
            pending = pending[~settled]
            slots[pending] = (slots[pending] + 1) & mask   # linear probing
        return new

    def add_new(self, fps: np.ndarray, distinct: bool = False) -> np.ndarray:
        """Insert a batch; returns the mask of the fingerprints seen for the first time (a repeat
        within the batch counts as seen after its first occurrence; ``distinct`` promises there
        is none). New fingerprints get the next indices in batch order."""
        fps = np.where(fps == 0, _EMPTY_STAND_IN, fps.astype(np.uint64, copy=False))
        out = np.zeros(len(fps), dtype=bool)
        if not len(fps):
            return out
        if distinct:
            first = np.arange(len(fps))
        else:
            _, first = np.unique(fps, return_index=True)
            first.sort()
        first = first[~self.contains(fps[first])]
        while (self.count + len(first)) * 4 > (3 << self.bits):
            self._grow()
        self._place(fps[first], np.arange(self.count, self.count + len(first), dtype=np.uint32))
        self.count += len(first)
        out[first] = True
        return out

    def contains(self, fps: np.ndarray) -> np.ndarray:
        """Which fingerprints of the batch are in the table."""
        fps = np.where(fps == 0, _EMPTY_STAND_IN, fps.astype(np.uint64, copy=False))
        mask = (1 << self.bits) - 1
        found = np.zeros(len(fps), dtype=bool)
        slots = self._slots(fps)
        pending = np.arange(len(fps))
        while pending.size:
            k = self.keys[slots[pending]]
            hit = k == fps[pending]
            found[pending[hit]] = True
            pending = pending[~(hit | (k == 0))]
            slots[pending] = (slots[pending] + 1) & mask
        return found

    def first_unseen(self, fps: np.ndarray) -> np.ndarray:
        """Mask of the first occurrence of each fingerprint of the batch that is not in the table.

        >>> t = FingerprintSet(); _ = t.add_new(np.array([3], dtype=np.uint64))
        >>> t.first_unseen(np.array([4, 3, 4, 0], dtype=np.uint64)).tolist()
        [True, False, False, True]
        """
        out = np.zeros(len(fps), dtype=bool)
        if not len(fps):
            return out
        _, first = np.unique(fps, return_index=True)
        out[first[~self.contains(fps[first])]] = True
        return out

    def index_of(self, fp: int):
        """The index stored with ``fp``, or None."""
        key = np.uint64(fp) if fp else _EMPTY_STAND_IN
        mask = (1 << self.bits) - 1
        slot = int(self._slots(np.array([key], dtype=np.uint64))[0])
        while True:
            k = self.keys[slot]
            if k == key:
                return int(self.vals[slot])
            if k == 0:
                return None
            slot = (slot + 1) & mask
