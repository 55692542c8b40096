"""transformers: ``GrammarLogitsProcessor`` for ``model.generate(..., logits_processor=[...])``.

Only generated tokens are constrained: the first call's ``input_ids`` are the
prompt (left padding included). Each row's matcher is found by its generated
tokens minus the last one (its parent's), forked and advanced by that last
token, so greedy search, sampling and beam search (which reorders and
duplicates rows every step) are one code path; forks are O(1). All rows are
masked with one ``mask_batch`` launch; columns past the vocabulary (a model's
padded embedding) are masked. After an EOS the row is left alone (``generate``
pads it); after an eager grammar completes only EOS stays allowed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from transformers import LogitsProcessor

from ..batch import mask_batch
from ..errors import TokenRejected
from ..runtime.matcher import Matcher
from .masking import allow_only

if TYPE_CHECKING:  # pragma: no cover
    from ..compile.compiled import CompiledGrammar


class GrammarLogitsProcessor(LogitsProcessor):
    """Constrain every sequence of a ``generate`` call to ``compiled``'s grammar.

    ``batch_size`` (optional) is the number of prompts: rows must then be a
    multiple of it (``num_beams`` / ``num_return_sequences`` rows per prompt).
    A new ``generate`` call is recognised by its input length and restarts.
    """

    def __init__(self, compiled: "CompiledGrammar", batch_size: int | None = None) -> None:
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.compiled = compiled
        self.batch_size = batch_size
        self.eos_ids = tuple(compiled.vocab.eos_ids)
        self.reset()

    def reset(self) -> None:
        """Forget the current generation (the next call's input is a new prompt)."""
        self._prompt_len: int | None = None
        self._last_len = -1
        self._by_generated: dict[tuple[int, ...], Matcher] = {}

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        rows, length = input_ids.shape
        if self.batch_size is not None and rows % self.batch_size:
            raise ValueError(f"{rows} rows is not a multiple of batch_size={self.batch_size}")
        if self._prompt_len is None or length != self._last_len + 1:
            self._prompt_len = length
            self._by_generated = {(): Matcher(self.compiled)}
        self._last_len = length
        matchers: list[Matcher | None] = []
        ended: list[int] = []
        current: dict[tuple[int, ...], Matcher] = {}
        for row, generated in enumerate(input_ids[:, self._prompt_len:].tolist()):
            key = tuple(generated)
            matcher = current.get(key)
            if matcher is None:
                matcher = current[key] = self._advance(key)
            if matcher.is_finished():
                matchers.append(None)
                if not key or key[-1] not in self.compiled.eos_set:
                    ended.append(row)  # an eager grammar completed: end the sequence
            else:
                matchers.append(matcher)
        self._by_generated = current
        mask_batch(scores, matchers)
        allow_only(scores, ended, [self.eos_ids] * len(ended))
        return scores

    def _advance(self, generated: tuple[int, ...]) -> Matcher:
        parent = self._by_generated.get(generated[:-1]) if generated else self._by_generated[()]
        if parent is None:
            raise ValueError("input_ids do not extend the previous step's sequences; call reset() between generations")
        matcher = parent.fork()
        if generated and not matcher.is_finished():
            try:
                matcher.accept_token(generated[-1])
            except TokenRejected as err:
                raise TokenRejected(f"generated token outside the grammar ({err}): is another logits processor "
                                    "re-enabling masked tokens after this one?") from None
        return matcher
