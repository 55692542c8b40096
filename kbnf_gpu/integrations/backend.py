"""``GrammarBackend`` / ``Grammar``: kbnf_gpu behind the interface serving engines give xgrammar and llguidance.

``GrammarBackend`` is the engine-level object (vLLM's ``StructuredOutputBackend``,
SGLang's ``BaseGrammarBackend``): it compiles requests (cached by content hash)
and allocates bitmasks. ``Grammar`` is the request-level object (vLLM's
``StructuredOutputGrammar``, SGLang's ``BaseGrammarObject``) around one ``Matcher``.

Stop tokens: a request's stop ids (default: the vocabulary's EOS ids) are
allowed exactly when the output so far is a sentence; accepting one terminates
the grammar (``is_terminated``). In eager mode, once the grammar completes only
the stop ids are allowed. Engine conventions are kept: ``accept_tokens`` returns
``False`` instead of raising (and, unlike xgrammar, changes nothing then),
``validate_tokens`` returns the longest acceptable prefix without changing state.
"""
from __future__ import annotations

import json
import re
from concurrent.futures import Future
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..errors import OptionError, TokenRejected
from ..runtime.matcher import Matcher
from .cache import CompileCache
from .spec import GrammarSpec

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from ..compile.compiled import CompiledGrammar
    from ..config import CompileConfig
    from ..vocab import Vocabulary


@dataclass(frozen=True)
class JumpForward:
    """Output every continuation must start with: ``data`` bytes, and ``tokens`` that spell a prefix of them.

    ``tokens`` is the longest-match tokenization of ``data`` among the tokens the
    grammar allows at each step; it may stop short of ``data`` (``len(tokens_bytes)``).
    """

    data: bytes
    tokens: tuple[int, ...]
    tokens_bytes: int


class Grammar:
    """One request's constrained-decoding state (vLLM ``StructuredOutputGrammar`` / SGLang ``BaseGrammarObject``)."""

    def __init__(self, compiled: "CompiledGrammar", stop_token_ids: Iterable[int] | None = None) -> None:
        self.matcher = Matcher(compiled)
        self.vocab = compiled.vocab
        self.vocab_size = compiled.vocab.size
        self.stop_token_ids = frozenset(int(t) for t in stop_token_ids) if stop_token_ids else frozenset(
            compiled.vocab.eos_ids)
        self._vocab_eos = frozenset(compiled.vocab.eos_ids)
        self._stop_is_eos = self.stop_token_ids == self._vocab_eos
        self._terminated = False
        self.num_processed_tokens = 0

    # ------------------------------------------------------------ accepting

    def _accept(self, token: int) -> None:
        """One token, or ``TokenRejected`` with nothing changed."""
        if self._terminated:
            raise TokenRejected(f"token {token} rejected: the grammar has terminated")
        if token in self.stop_token_ids:
            if not (self.matcher.is_accepting() or self.matcher.is_finished()):
                raise TokenRejected(f"stop token {token} rejected: the output is not a complete sentence")
            self._terminated = True
        elif token in self._vocab_eos:
            raise TokenRejected(f"EOS token {token} is not a stop token of this request")
        else:
            self.matcher.accept_token(token)
        self.num_processed_tokens += 1

    def accept_tokens(self, request_id_or_tokens: Any, tokens: Sequence[int] | None = None) -> bool:
        """Advance by ``tokens``, all or nothing; ``False`` if the grammar rejects one (state unchanged).

        Called ``accept_tokens(tokens)`` or, as vLLM does, ``accept_tokens(request_id, tokens)``.
        Tokens after a stop token are ignored (the request is over), as vLLM expects.
        """
        if tokens is None:
            tokens = request_id_or_tokens
        saved = (self.matcher.fork(), self._terminated, self.num_processed_tokens)
        try:
            for token in tokens:
                if self._terminated:
                    break
                self._accept(int(token))
        except TokenRejected:
            self.matcher, self._terminated, self.num_processed_tokens = saved
            return False
        return True

    def accept_token(self, token: int) -> None:
        """SGLang's call: advance by one token; ``TokenRejected`` (state unchanged) if it is not allowed."""
        self._accept(int(token))

    def validate_tokens(self, tokens: Sequence[int]) -> list[int]:
        """The longest prefix of ``tokens`` the grammar accepts from here (ends at a stop token); no state change."""
        probe = self.copy()
        out: list[int] = []
        for token in tokens:
            if probe._terminated:
                break
            try:
                probe._accept(int(token))
            except TokenRejected:
                break
            out.append(int(token))
        return out

    def rollback(self, num_tokens: int) -> None:
        """Undo the last ``num_tokens`` accepted tokens (a stop token included)."""
        if not 0 <= num_tokens <= self.num_processed_tokens:
            raise ValueError(f"cannot roll back {num_tokens} tokens; {self.num_processed_tokens} accepted")
        left = num_tokens
        if left and self._terminated:
            self._terminated = False
            left -= 1
        self.matcher.rollback(left)
        self.num_processed_tokens -= num_tokens

    def reset(self) -> None:
        self.matcher.reset()
        self._terminated = False
        self.num_processed_tokens = 0

    def copy(self) -> "Grammar":
        """An independent copy (O(1): the matcher forks)."""
        other = Grammar.__new__(Grammar)
        other.__dict__.update(self.__dict__)
        other.matcher = self.matcher.fork()
        return other

    # ------------------------------------------------------------ queries

    def is_terminated(self) -> bool:
        """Has a stop token been accepted?"""
        return self._terminated

    @property
    def finished(self) -> bool:
        """SGLang's name for ``is_terminated()``."""
        return self._terminated

    def allowed_token_ids(self) -> list[int]:
        """Sorted ids allowed next, stop tokens included (a convenience; the bitmask is the fast path)."""
        if self._terminated:
            return []
        if self.matcher.is_finished():
            return sorted(self.stop_token_ids)
        ids = set(self.matcher.allowed_token_ids().tolist()) - self._vocab_eos
        if self.matcher.is_accepting():
            ids |= self.stop_token_ids
        return sorted(ids)

    # ------------------------------------------------------------ bitmasks

    def fill_bitmask(self, bitmask: "torch.Tensor", index: int = 0) -> None:
        """Write the allowed set into row ``index`` of an int32 ``[B, ceil(V/32)]`` bitmask."""
        if self._terminated or self.matcher.is_finished():
            bitmask[index].zero_()
            if not self._terminated:
                _set_bits(bitmask, index, self.stop_token_ids, True)
            return
        self.matcher.fill_bitmask(bitmask, index)
        if not self._stop_is_eos:
            _set_bits(bitmask, index, self._vocab_eos - self.stop_token_ids, False)
            if self.matcher.is_accepting():
                _set_bits(bitmask, index, self.stop_token_ids, True)

    fill_vocab_mask = fill_bitmask  # SGLang's name

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device) -> "torch.Tensor":
        """SGLang's call: an all-allowed int32 bitmask ``[batch_size, ceil(vocab_size/32)]``."""
        from ..kernels import allocate_token_bitmask

        return allocate_token_bitmask(batch_size, vocab_size, device)

    @staticmethod
    def move_vocab_mask(vocab_mask: "torch.Tensor", device) -> "torch.Tensor":
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: "torch.Tensor", vocab_mask: "torch.Tensor") -> None:
        """``-inf`` where the bitmask's bit is 0 (rows of ``logits`` and ``vocab_mask`` correspond)."""
        from ..kernels import apply_bitmask_inplace

        apply_bitmask_inplace(logits, vocab_mask, vocab_size=min(logits.shape[-1], vocab_mask.shape[-1] * 32))

    # ------------------------------------------------------------ jump-forward

    def jump_forward(self) -> JumpForward:
        """The bytes every continuation starts with, and allowed tokens spelling a prefix of them."""
        if self._terminated or self.matcher.is_finished():
            return JumpForward(b"", (), 0)
        data = self.matcher.find_jump_forward_bytes()
        index = _token_ids_by_bytes(self.vocab)
        probe = self.matcher.fork()
        tokens: list[int] = []
        pos = 0
        while pos < len(data):
            for end in range(min(len(data), pos + index.longest), pos, -1):
                token = index.ids.get(data[pos:end])
                if token is not None and probe.is_token_allowed(token):
                    probe.accept_token(token)
                    tokens.append(token)
                    pos = end
                    break
            else:
                break
        return JumpForward(data, tuple(tokens), pos)

    def try_jump_forward(self, tokenizer: Any = None) -> tuple[list[int], str] | None:
        """SGLang's call: ``(tokens, text)`` forced next, or ``None`` when nothing is forced."""
        jump = self.jump_forward()
        if not jump.data:
            return None
        return list(jump.tokens), jump.data.decode("utf-8", errors="replace")

    def jump_forward_str_state(self, helper: tuple[list[int], str]) -> tuple[str, int]:
        """SGLang's call: the forced text; the state id is unused (-1)."""
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: Sequence[int], new_output_ids: Sequence[int],
                            next_state: int) -> None:
        """SGLang's call after it retokenized the output: follow the new token ids from their common prefix."""
        common = 0
        for a, b in zip(old_output_ids, new_output_ids):
            if a != b:
                break
            common += 1
        self.rollback(len(old_output_ids) - common)
        if not self.accept_tokens(list(new_output_ids[common:])):
            raise TokenRejected("the retokenized output is not accepted by the grammar")


class GrammarBackend:
    """Compiles requests for one vocabulary (cached by content hash, LRU-bounded) and hands out ``Grammar`` objects.

    vLLM calls ``compile_grammar(request_type, grammar_spec, stop_token_ids)``;
    SGLang calls ``dispatch_json`` / ``dispatch_regex`` / ``dispatch_ebnf`` or
    ``get_cached_or_future_value((key_type, key_string))``. Request types:
    ``json`` (a JSON Schema), ``json_object``, ``regex``, ``grammar``/``ebnf``
    (GBNF text, or a kbnf_gpu request object as JSON text: see ``GrammarSpec``),
    ``choice`` (a JSON list of strings), ``kbnf_gpu`` (a request object).
    """

    def __init__(self, vocab: "Vocabulary", config: "CompileConfig | None" = None, *, cache_size: int = 64,
                 compile_threads: int = 1) -> None:
        self.vocab = vocab
        self.vocab_size = vocab.size
        self.cache = CompileCache(vocab, config, capacity=cache_size, workers=compile_threads)

    # ------------------------------------------------------------ vLLM

    def compile_grammar(self, request_type: Any, grammar_spec: Any,
                        stop_token_ids: Iterable[int] | None = None) -> Grammar:
        """Compile (or fetch from the cache) and start a fresh ``Grammar``; raises the compile error."""
        return Grammar(self.cache.result(self.spec_for(request_type, grammar_spec)), stop_token_ids)

    def validate_grammar(self, request_type: Any, grammar_spec: Any) -> None:
        """Reject a bad request before it is scheduled (front end and normalization only: no vocabulary work)."""
        self.spec_for(request_type, grammar_spec).check(self.cache.config)

    def allocate_token_bitmask(self, max_num_seqs: int) -> "torch.Tensor":
        """int32 ``[max_num_seqs, ceil(V/32)]``, every bit set."""
        from ..kernels import allocate_token_bitmask

        return allocate_token_bitmask(max_num_seqs, self.vocab_size)

    def destroy(self) -> None:
        self.cache.shutdown()

    # ------------------------------------------------------------ SGLang

    def dispatch_json(self, key_string: str) -> Grammar:
        return self.compile_grammar("json", key_string)

    def dispatch_regex(self, key_string: str) -> Grammar:
        return self.compile_grammar("regex", key_string)

    def dispatch_ebnf(self, key_string: str) -> Grammar:
        return self.compile_grammar("grammar", key_string)

    def get_cached_or_future_value(self, key: tuple[str, str]) -> tuple[Grammar | Future, bool]:
        """``(Grammar, True)`` when compiled already, else ``(Future[Grammar], False)`` (compiling in a thread)."""
        compiled = self.cache.submit(self.spec_for(*key))
        if compiled.done() and compiled.exception() is None:
            return Grammar(compiled.result()), True
        grammar: Future = Future()

        def _done(f: Future) -> None:
            err = f.exception()
            if err is not None:
                grammar.set_exception(err)
            else:
                grammar.set_result(Grammar(f.result()))

        compiled.add_done_callback(_done)
        return grammar, False

    def reset(self) -> None:
        """Forget every cached grammar."""
        self.cache.clear()

    # ------------------------------------------------------------ requests

    @staticmethod
    def spec_for(request_type: Any, grammar_spec: Any) -> GrammarSpec:
        """The ``GrammarSpec`` of an engine's (request type, spec) pair; ``request_type`` may be an enum."""
        kind = str(getattr(request_type, "name", request_type)).lower()
        if kind == "json":
            return GrammarSpec.from_request({"json_schema": grammar_spec})
        if kind == "json_object":
            return GrammarSpec.from_request({"json_schema": {"type": "object"}})
        if kind == "regex":
            return GrammarSpec.from_request({"regex": grammar_spec})
        if kind in ("grammar", "ebnf"):
            if isinstance(grammar_spec, str) and grammar_spec.lstrip().startswith("{"):
                return GrammarSpec.from_request(grammar_spec)
            return GrammarSpec.from_request({"grammar": grammar_spec, "syntax": "gbnf"})
        if kind == "choice":
            return GrammarSpec.from_request({"regex": _choice_regex(grammar_spec)})
        if kind == "kbnf_gpu":
            return GrammarSpec.from_request(grammar_spec)
        raise OptionError(f"unsupported structured-output request type {kind!r} "
                          "(json, json_object, regex, grammar, ebnf, choice, kbnf_gpu)")


def _choice_regex(choices: Any) -> str:
    if isinstance(choices, str):
        try:
            choices = json.loads(choices)
        except ValueError as err:
            raise OptionError(f"choice: not a JSON list of strings: {err}") from None
    if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
        raise OptionError("choice: expected a non-empty list of strings")
    return "|".join(re.escape(c) for c in choices)


@dataclass(frozen=True)
class _TokenIndex:
    ids: dict[bytes, int]
    longest: int


@lru_cache(maxsize=4)
def _token_ids_by_bytes(vocab: "Vocabulary") -> _TokenIndex:
    """bytes → id of the non-special tokens (the lowest id where two tokens share bytes)."""
    ids: dict[bytes, int] = {}
    special = vocab.special_ids
    for token, data in vocab.items():
        if data and token not in special:
            ids.setdefault(data, token)
    return _TokenIndex(ids, max((len(b) for b in ids), default=0))


def _set_bits(bitmask: "torch.Tensor", index: int, token_ids: Iterable[int], value: bool) -> None:
    """Set (or clear) the bits of ``token_ids`` in row ``index`` (a few ids: stop tokens)."""
    width = bitmask.shape[1]
    for token in token_ids:
        word = token >> 5
        if word >= width:
            continue
        bit = 1 << (token & 31)
        current = int(bitmask[index, word]) & 0xFFFFFFFF
        updated = current | bit if value else current & ~bit
        bitmask[index, word] = updated - (1 << 32) if updated >= 1 << 31 else updated
