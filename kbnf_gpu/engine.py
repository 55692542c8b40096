"""``Engine``: the seed crate ``kbnf``'s API over a ``Matcher``, so kbnf users can switch.

Same method names and results as ``kbnf.Engine``: ``update_logits`` accepts a
token then masks the logits in place and returns ``AcceptTokenResult``;
a finished engine leaves the logits alone.
"""
from __future__ import annotations

from enum import Enum
from typing import Any

import numpy as np

from .compile.compiled import CompileConfig, CompiledGrammar, compile_grammar
from .errors import TokenRejected
from .runtime.matcher import Matcher
from .vocab import Vocabulary


class AcceptTokenResult(Enum):
    Ongoing = "Ongoing"
    Finished = "Finished"


class AcceptTokenError(TokenRejected):
    """The token is rejected; the engine's state is unchanged."""


class Engine:
    """A kbnf-compatible engine: ``Engine(grammar_str, vocab, config=None)``.

    ``grammar_str`` is KBNF (eager end: finished as soon as ``start`` completes)
    unless ``syntax=`` says otherwise. A ``CompiledGrammar`` may be passed
    instead of text to share one compilation between engines.
    """

    def __init__(
        self,
        grammar_str: str | CompiledGrammar,
        vocab: Vocabulary | None = None,
        config: CompileConfig | None = None,
        *,
        syntax: str = "kbnf",
        start: str | None = None,
        **options: Any,
    ) -> None:
        if isinstance(grammar_str, CompiledGrammar):
            compiled = grammar_str
        else:
            if vocab is None:
                raise TypeError("Engine needs a Vocabulary")
            compiled = compile_grammar(grammar_str, vocab, syntax=syntax, start=start, config=config, **options)
        self.compiled = compiled
        self.matcher = Matcher(compiled)
        self._allowed = np.zeros(0, dtype=np.int32)

    # ------------------------------------------------------------- accepting

    def _result(self) -> AcceptTokenResult:
        return AcceptTokenResult.Finished if self.matcher.is_finished() else AcceptTokenResult.Ongoing

    def try_accept_new_token(self, token_id: int) -> AcceptTokenResult:
        """Accept one token; ``AcceptTokenError`` (state unchanged) if it is not allowed."""
        try:
            self.matcher.accept_token(token_id)
        except TokenRejected as err:
            raise AcceptTokenError(str(err)) from None
        return self._result()

    def try_accept_new_bytes(self, data: bytes) -> AcceptTokenResult:
        try:
            self.matcher.accept_bytes(data)
        except TokenRejected as err:
            raise AcceptTokenError(str(err)) from None
        return self._result()

    # ----------------------------------------------------------------- masks

    def compute_allowed_token_ids(self) -> None:
        self._allowed = self.matcher.allowed_token_ids()

    def allowed_token_ids_from_last_computation(self) -> list[int]:
        return self._allowed.tolist()

    get_allowed_token_ids_from_last_computation = allowed_token_ids_from_last_computation

    def is_token_allowed(self, token_id: int) -> bool:
        return self.matcher.is_token_allowed(token_id)

    def mask_logits(self, logits: Any) -> None:
        """Set every logit not allowed by the last computation to -inf, in place.

        ``logits``: a numpy array or torch tensor of shape ``[V]`` or ``[1, V]``.
        """
        if logits.ndim == 2 and logits.shape[0] == 1:
            logits = logits[0]
        if logits.ndim != 1:
            raise ValueError(f"mask_logits takes logits of shape [V] or [1, V], not {tuple(logits.shape)}")
        keep = np.zeros(logits.shape[0], dtype=bool)
        ids = self._allowed[self._allowed < logits.shape[0]]
        keep[ids] = True
        if isinstance(logits, np.ndarray):
            logits[~keep] = -np.inf
        else:
            import torch

            logits.masked_fill_(torch.from_numpy(~keep).to(logits.device), float("-inf"))

    def update_logits(self, token_id: int, logits: Any) -> AcceptTokenResult:
        """Accept ``token_id``, then (unless finished) mask ``logits`` for the next token in place."""
        result = self.try_accept_new_token(token_id)
        if result is AcceptTokenResult.Ongoing:
            self.compute_allowed_token_ids()
            self.mask_logits(logits)
        return result

    # ----------------------------------------------------------------- state

    def is_finished(self) -> bool:
        return self.matcher.is_finished()

    def reset(self) -> None:
        """Back to the start; the caches are kept."""
        self.matcher.reset()
        self._allowed = np.zeros(0, dtype=np.int32)

    def clone(self) -> "Engine":
        other = Engine.__new__(Engine)
        other.compiled = self.compiled
        other.matcher = self.matcher.fork()
        other._allowed = self._allowed.copy()
        return other

    __copy__ = clone
