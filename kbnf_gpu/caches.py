"""Bounded memo tables: a server runs for weeks, so nothing here grows without limit.

``GenerationalCache`` keeps two generations of at most ``limit`` entries
each: lookups hit the young generation, then the old one (promoting the
entry); when the young one is full it becomes the old one and the previous
old one is evicted. That is LRU-like eviction with no per-hit bookkeeping.
The young generation *is* the object (a ``dict``), so a hit, ``cache[key]``,
runs at the speed of a plain dict lookup; a miss returns ``None`` (values are
never ``None``). Every operation is one or two dict operations, so threads
sharing a cache can at worst recompute an entry.

Neither structure frees many objects at once: an evicted generation is
released two entries per later store, and a ``WeakTable`` drops its dead
entries a few per store. Dropping a generation of 8,192 parser states in one
go cost a step 1-3 ms (the objects they alone held were freed with them).
"""
from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterator, Optional


class GenerationalCache(dict):
    """A memo table of at most ``2 * limit`` entries (plus an evicted generation of at most ``limit``, released
    two entries per store): ``cache[key]`` is the value or ``None``; ``put`` stores."""

    __slots__ = ("limit", "_old", "_evicted")

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = max(1, int(limit))
        self._old: dict = {}
        self._evicted: dict = {}  # the generation before ``_old``: no longer read, released two entries per store

    def __missing__(self, key: Hashable) -> Any:
        value = self._old.get(key)
        if value is not None:
            self.put(key, value)
        return value

    def put(self, key: Hashable, value: Any) -> Any:
        """Store ``value`` (not ``None``) and return it."""
        evicted = self._evicted
        if evicted:
            try:
                evicted.popitem()
                evicted.popitem()
            except KeyError:  # emptied (here or by another thread between the check and the pop)
                pass
        if dict.__len__(self) >= self.limit and key not in self:
            # ``limit`` stores have passed since the last turn: two per store emptied ``_evicted`` long ago
            self._evicted = self._old
            self._old = dict(self)
            dict.clear(self)
        self[key] = value
        return value

    def __len__(self) -> int:
        """Entries that can still be found (an evicted generation still being released is not counted)."""
        return dict.__len__(self) + len(self._old)

    def clear(self) -> None:
        dict.clear(self)
        self._old = {}
        self._evicted = {}


class WeakTable:
    """``key -> object``, the objects held weakly, for interning. Unlike ``weakref.WeakValueDictionary`` an
    entry adds no object of its own for the garbage collector to scan (the plain callback-free ``weakref.ref``
    is the one its referent shares with every such reference). Entries of freed objects stay until a sweep:
    once the table has doubled since the last one, its keys are listed and each later store checks two of
    them, dropping the dead (constant time per store, no pause; the table holds at most about three times
    its live entries, or ``1.5 * MIN_SWEEP``). Readers need no lock (each access is one dict operation);
    writers hold the owner's lock.
    """

    __slots__ = ("data", "_sweep_at", "_to_check", "_kept")

    MIN_SWEEP = 1024

    def __init__(self) -> None:
        self.data: dict = {}
        self._sweep_at = self.MIN_SWEEP
        self._to_check: list = []  # keys of the sweep under way
        self._kept = 0  # of those checked so far, the ones alive

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
        to_check = self._to_check
        if to_check:
            for _ in range(2):
                old = to_check.pop()
                ref = data.get(old)
                if ref is not None:
                    if ref() is None:
                        del data[old]
                    else:
                        self._kept += 1
                if not to_check:
                    # the next sweep once the table is twice what this one found alive: a sweep over n keys
                    # spans n / 2 stores, so the listed keys settle at about twice the live ones
                    self._sweep_at = max(self.MIN_SWEEP, 2 * self._kept)
                    break
        elif len(data) >= self._sweep_at:
            self._to_check = list(data)
            self._kept = 0

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


class WeightedMemo:
    """A memo table bounded by the total *weight* of what it holds (least recently used out first), for
    results whose size follows an untrusted input's (a pattern's text, a class's ranges, a schema's key
    names): a count alone would let a few thousand huge entries hold gigabytes. Reads take no lock (each is
    one or two dict operations); stores do. An entry heavier than the whole limit is computed, not held."""

    __slots__ = ("limit", "_entries", "_held", "_lock")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: OrderedDict = OrderedDict()  # key -> (value, weight)
        self._held = 0
        self._lock = threading.Lock()

    def lookup(self, key: Hashable) -> Any:
        """The value held under ``key`` (now the most recently used), or ``None``."""
        hit = self._entries.get(key)
        if hit is None:
            return None
        try:
            self._entries.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile
            pass
        return hit[0]

    def store(self, key: Hashable, value: Any, weight: int) -> Any:
        """Hold ``value`` (not ``None``) under ``key`` unless it alone weighs more than the limit; returns it."""
        if weight <= self.limit:
            entries = self._entries
            with self._lock:
                if key not in entries:
                    entries[key] = (value, weight)
                    self._held += weight
                    while self._held > self.limit:
                        self._held -= entries.popitem(last=False)[1][1]
        return value

    @property
    def held(self) -> int:
        """The total weight held."""
        return self._held

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0


def memoized(limit: int, weigh: Callable[..., int]) -> Callable[[Callable], Callable]:
    """Memoize a pure function of hashable arguments in a ``WeightedMemo`` of ``limit``, an entry weighing
    ``weigh(*args, **kwargs)`` (say, the length of the text it was made from, plus a constant for its fixed
    cost); a ``None`` result is not held. The function gets ``memo`` (the table) and ``cache_clear()``."""

    def decorate(f: Callable) -> Callable:
        memo = WeightedMemo(limit)

        @functools.wraps(f)
        def call(*args: Any, **kwargs: Any) -> Any:
            key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
            hit = memo.lookup(key)
            return hit if hit is not None else memo.store(key, f(*args, **kwargs), weigh(*args, **kwargs))

        call.memo = memo  # type: ignore[attr-defined]
        call.cache_clear = memo.clear  # type: ignore[attr-defined]
        return call

    return decorate
