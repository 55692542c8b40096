"""The budget of one compilation: the limits of a ``CompileConfig`` plus a wall-clock deadline.

``compile_grammar`` (and ``parse_grammar`` called on its own) opens a budget;
every stage reads it with ``current_budget()`` instead of threading a
parameter through every function. Stages check a structural limit *before*
the work it guards (``budget.check``) and call ``budget.tick`` inside long
loops, so hostile input fails fast with ``CompileBudgetExceeded``. The budget
lives in a ``ContextVar``: threads compiling at once each have their own.
"""
from __future__ import annotations

import gc
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from .config import CompileConfig
from .errors import CompileBudgetExceeded

_TICKS_PER_CLOCK_READ = 256


class Budget:
    """Limits and deadline of one compilation (mutable: it counts ticks)."""

    __slots__ = ("config", "deadline", "_ticks")

    def __init__(self, config: CompileConfig) -> None:
        self.config = config
        self.deadline = None if config.time_budget_s is None else time.monotonic() + config.time_budget_s
        self._ticks = 0

    def check(self, limit: str, value: int, what: str, **where) -> None:
        """Raise if ``value`` exceeds ``config.<limit>``; ``what`` names the construct (and ``where`` its place)."""
        bound = getattr(self.config, limit)
        if value > bound:
            raise CompileBudgetExceeded(f"{what}: {value:,} exceeds the limit {limit}={bound:,}", limit=limit, **where)

    def tick(self, what: str, **where) -> None:
        """Cheap enough for inner loops: reads the clock every few hundred calls."""
        self._ticks += 1
        if self._ticks % _TICKS_PER_CLOCK_READ == 0:
            self.check_time(what, **where)

    def check_time(self, what: str, **where) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise CompileBudgetExceeded(
                f"compiling took longer than time_budget_s={self.config.time_budget_s} s (while {what})",
                limit="time_budget_s",
                **where,
            )


_CURRENT: ContextVar[Budget | None] = ContextVar("kbnf_gpu_budget", default=None)


_DEFAULT_CONFIG = CompileConfig()  # frozen: shared by the budgets opened outside a compilation


def current_budget() -> Budget:
    """The budget of the compilation in progress; outside one, a fresh budget with the default limits."""
    budget = _CURRENT.get()
    return budget if budget is not None else Budget(_DEFAULT_CONFIG)


@contextmanager
def compile_budget(config: CompileConfig | None = None) -> Iterator[Budget]:
    """Run the body under a budget; a budget already open (an outer compilation) is kept, not restarted."""
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    budget = Budget(config or _DEFAULT_CONFIG)
    token = _CURRENT.set(budget)
    try:
        with _collector_paused(budget.config.pause_gc):
            yield budget
    finally:
        _CURRENT.reset(token)


_pause_lock = threading.Lock()
_pausing = 0  # compilations in progress that pause the collector
_was_enabled = False


@contextmanager
def _collector_paused(pause: bool) -> Iterator[None]:
    """Pause Python's cyclic garbage collector while the body runs (``CompileConfig.pause_gc``).

    A compilation builds tens of thousands of long-lived objects and no
    cycles, so the collections its allocations trigger free nothing and only
    cost time: two full collections were a quarter of a 22,000-rule schema's
    compile. The pause is process-wide (reference counting frees memory as
    usual); overlapping compilations in several threads keep it until the
    last one ends, and the collector's state before the first is restored.
    """
    global _pausing, _was_enabled
    if not pause:
        yield
        return
    with _pause_lock:
        if _pausing == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pausing += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pausing -= 1
            if _pausing == 0 and _was_enabled:
                gc.enable()
