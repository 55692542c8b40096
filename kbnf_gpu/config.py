"""``CompileConfig``: every limit and switch of compilation and of the runtime caches, in one frozen record.

The defaults are safe for an API server that compiles grammars and JSON
Schemas from users it does not trust: every limit is checked *before* the
expensive step it guards (estimate, then build), so a hostile input fails in
milliseconds with a ``CompileBudgetExceeded`` that names the construct, and
the wall-clock budget is the last line of defence.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from .errors import OptionError


@dataclass(frozen=True)
class CompileConfig:
    """Limits and switches for compilation and the runtime caches.

    Limits (``CompileBudgetExceeded`` past them):

    * ``max_dfa_states``: states of one terminal's automaton;
    * ``max_terminals``: distinct terminals of a grammar;
    * ``max_rules``: BNF rules after desugaring;
    * ``max_expansion``: grammar symbols after desugaring (counted repetition
      ``x{m,n}`` costs about ``n`` copies of ``x``), estimated before expanding;
    * ``max_schema_branches``: JSON Schema ``anyOf``/``oneOf`` branch combinations
      of one subschema (the product of the widths of the choices it combines;
      each combination is a rule with its own terminals, milliseconds apiece);
    * ``time_budget_s``: wall-clock seconds for ``compile_grammar``, an eager compile's tables included
      (``None``: no limit; ``kbnf-gpu compile``, an offline build, sets none unless ``--time-budget``).

    Fusion of regular sub-grammars into one terminal: ``fuse`` (``None``, the
    default: fused for grammar texts, not for JSON Schemas),
    ``fuse_max_states`` (char-level parts), ``fuse_max_states_lexemes``.
    A one-off schema pays for fusion at compile time and again in the cold
    table rows of its fused terminals (unique to it), while its unfused
    terminals (strings, numbers, punctuation) recur in every schema and share
    rows; on 25 Kubernetes schemas, unfused compiles 5x faster (p50 8.5 vs
    43 ms) and the first instance's tokens cost 4.6x less (mean 1.3 vs 6.1 ms).

    Runtime caches (entries; each is bounded): ``memo_limit`` (parser step
    memos), ``mask_cache_limit`` (masks).

    Tables: ``sparse_limit`` (rows with at most this many tokens are id lists),
    ``use_tables`` (``False``: exact reference masks, slow), ``cache_dir``
    (also cache token tables on disk there; never pickled).

    ``pause_gc``: pause Python's cyclic garbage collector while compiling
    (process-wide, restored after; a compile makes no cycles, and the
    collections its allocations trigger cost up to a quarter of a large
    schema's compile).
    """

    max_dfa_states: int = 10_000
    max_terminals: int = 20_000
    max_rules: int = 200_000
    max_expansion: int = 2_000_000
    max_schema_branches: int = 1_000
    time_budget_s: float | None = 10.0
    fuse: bool | None = None
    fuse_max_states: int = 256
    fuse_max_states_lexemes: int = 64
    memo_limit: int = 1 << 13
    mask_cache_limit: int = 1 << 12
    sparse_limit: int = 256
    use_tables: bool = True
    cache_dir: str | None = None
    pause_gc: bool = True

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "time_budget_s":
                ok = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0)
                need = "a positive number of seconds or None"
            elif f.name == "fuse":
                ok, need = value is None or isinstance(value, bool), "True, False or None (by syntax)"
            elif f.name == "cache_dir":
                ok, need = value is None or isinstance(value, str), "a directory path (str) or None"
            elif f.type in ("bool", bool):
                ok, need = isinstance(value, bool), "True or False"
            else:
                low = 0 if f.name == "sparse_limit" else 1  # sparse_limit=0: every row is a dense bitset
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
                need = "a positive integer" if low else "an integer >= 0"
            if not ok:
                raise OptionError(f"CompileConfig.{f.name} must be {need}, got {value!r}")

    def normalize_config(self, syntax: str | None = None):
        """The normalizer's limits for a grammar written in ``syntax`` (it decides ``fuse=None``)."""
        from .normalize import NormalizeConfig

        fuse = self.fuse if self.fuse is not None else syntax != "json_schema"
        return NormalizeConfig(self.max_dfa_states, fuse, self.fuse_max_states, self.fuse_max_states_lexemes)

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))
