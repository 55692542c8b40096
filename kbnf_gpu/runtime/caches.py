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
from collections import OrderedDict
from typing import Any, Callable, Hashable, Optional


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
