"""Bounded memo tables: a server runs for weeks, so nothing here grows without limit.

``GenerationalCache`` keeps two generations of at most ``limit`` entries
each: lookups hit the young generation, then the old one (promoting the
entry); when the young one is full it becomes the old one and the previous
old one is dropped. That is LRU-like eviction with no per-hit bookkeeping.
The young generation *is* the object (a ``dict``), so a hit, ``cache[key]``,
runs at the speed of a plain dict lookup; a miss returns ``None`` (values are
never ``None``). Every operation is one or two dict operations, so threads
sharing a cache can at worst recompute an entry.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterator, Optional


class GenerationalCache(dict):
    """A memo table bounded to ``2 * limit`` entries: ``cache[key]`` is the value or ``None``; ``put`` stores."""

    __slots__ = ("limit", "_old")

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = max(1, int(limit))
        self._old: dict = {}

    def __missing__(self, key: Hashable) -> Any:
        value = self._old.get(key)
        if value is not None:
            self.put(key, value)
        return value

    def put(self, key: Hashable, value: Any) -> Any:
        """Store ``value`` (not ``None``) and return it."""
        if dict.__len__(self) >= self.limit and key not in self:
            self._old = dict(self)
            dict.clear(self)
        self[key] = value
        return value

    def __len__(self) -> int:
        return dict.__len__(self) + len(self._old)

    def clear(self) -> None:
        dict.clear(self)
        self._old = {}


class WeakTable:
    """``key -> object``, the objects held weakly, for interning. Unlike ``weakref.WeakValueDictionary`` an
    entry adds no object of its own for the garbage collector to scan (the plain callback-free ``weakref.ref``
    is the one its referent shares with every such reference): entries of freed objects stay until the table
    has doubled since its last sweep, which drops them (amortized constant time, at most twice the live size).
    Readers need no lock (a sweep swaps in a new dict); writers hold the owner's lock.
    """

    __slots__ = ("data", "_sweep_at")

    MIN_SWEEP = 1024

    def __init__(self) -> None:
        self.data: dict = {}
        self._sweep_at = self.MIN_SWEEP

    def get(self, key: Hashable, default: Any = None) -> Any:
        ref = self.data.get(key)
        found = None if ref is None else ref()
        return default if found is None else found

    def __getitem__(self, key: Hashable) -> Any:
        found = self.data[key]()
        if found is None:
            raise KeyError(key)
        return found

    def __setitem__(self, key: Hashable, value: Any) -> None:
        data = self.data
        data[key] = weakref.ref(value)
        if len(data) >= self._sweep_at:
            self.data = data = {k: ref for k, ref in data.items() if ref() is not None}
            self._sweep_at = max(self.MIN_SWEEP, 2 * len(data))

    def items(self) -> Iterator[tuple[Hashable, Any]]:
        for key, ref in list(self.data.items()):
            found = ref()
            if found is not None:
                yield key, found

    def update(self, other) -> None:
        for key, value in other.items():
            self[key] = value

    def __len__(self) -> int:
        """Live entries (a scan: for statistics, not for a hot path)."""
        return sum(1 for ref in list(self.data.values()) if ref() is not None)


def lru_get(
    cache: OrderedDict,
    lock: threading.Lock,
    key: Hashable,
    limit: int,
    build: Callable[[], Any],
    keep: Optional[Callable[[Any], bool]] = None,
) -> Any:
    """``cache[key]``, built by ``build()`` on a miss and kept (unless ``keep`` says no) in ``cache``, an LRU of
    at most ``limit`` entries guarded by ``lock``. ``build`` runs outside the lock: a lost race builds twice."""
    with lock:
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return hit
    hit = build()
    if keep is None or keep(hit):
        with lock:
            cache[key] = hit
            cache.move_to_end(key)
            while len(cache) > limit:
                cache.popitem(last=False)
    return hit
