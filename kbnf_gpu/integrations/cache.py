"""``CompileCache``: compiled grammars by content hash, compiled off the caller's thread, LRU-bounded.

A thousand requests with one schema compile it once; a new schema compiles in
a worker thread, so the serving loop asks ``ready`` and never waits unless it
chooses to (``result``). Failures are cached like successes (a bad grammar is
not recompiled per request) and re-raised to every caller.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..compile.compiled import CompiledGrammar
    from ..config import CompileConfig
    from ..vocab import Vocabulary
    from .spec import GrammarSpec


class CompileCache:
    """At most ``capacity`` compiled grammars (or compilations in flight) for one vocabulary and config."""

    def __init__(self, vocab: "Vocabulary", config: "CompileConfig | None" = None, *, capacity: int = 64,
                 workers: int = 1) -> None:
        from ..compile.compiled import prepare_vocabulary
        from ..config import CompileConfig

        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be a positive integer, got {capacity!r}")
        self.vocab = prepare_vocabulary(vocab)  # at start-up, not in the first request
        self.config = config or CompileConfig()
        self.capacity = capacity
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Future] = OrderedDict()
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kbnf-gpu-compile")

    def __len__(self) -> int:
        return len(self._entries)

    def submit(self, spec: "GrammarSpec") -> Future:
        """The future of ``spec``'s compiled grammar: a cached one, or a compilation started now."""
        key = spec.key
        with self._lock:
            future = self._entries.get(key)
            if future is not None:
                self._entries.move_to_end(key)
                return future
            future = self._executor.submit(spec.compile, self.vocab, self.config)
            self._entries[key] = future
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)  # in-flight ones finish; their holders keep them
            return future

    def result(self, spec: "GrammarSpec", timeout: float | None = None) -> "CompiledGrammar":
        """Block until ``spec`` is compiled (raises what compiling raised)."""
        return self.submit(spec).result(timeout)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def shutdown(self) -> None:
        """Stop the worker threads (compilations in flight finish first)."""
        self._executor.shutdown(wait=True)
