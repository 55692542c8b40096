"""vLLM: ``GrammarLogitsProcessor``, a custom logits processor for both vLLM model runners.

It implements the V1 interface (``vllm.v1.sample.logits_processor``) and Model
Runner V2's (``vllm.v1.worker.gpu.sample.logits_processor``, the default of
vLLM 0.33 on CUDA), whose loader refuses V1-only classes registered under the
shared entry point — a V1-only plugin would stop every vLLM server on that
machine from starting.

Load it with ``vllm serve MODEL --logits-processors kbnf_gpu.integrations.vllm:GrammarLogitsProcessor``
(or through the ``vllm.logits_processors`` entry point this package declares). A
request asks for a grammar in ``SamplingParams.extra_args["kbnf_gpu"]`` (the
OpenAI server's ``vllm_xargs``, where it must be JSON text): see ``GrammarSpec``.

Per step, ``apply`` advances each constrained request's ``Matcher`` by its new
output tokens and masks all their rows with ONE ``mask_batch`` launch on the
logits' device (columns past the tokenizer's vocabulary, i.e. padding, are masked).

Compiling never stalls the batch. A new grammar compiles in a worker thread
(cached by content hash, LRU-bounded: ``CompileCache``); until it is ready,
its request's row allows only a *filler* token — a special, non-stop token that
detokenization skips (``skip_special_tokens``, vLLM's default). This is sound:
the request's text gains nothing from fillers, the matcher ignores the leading
fillers, and from the first real token on every token is in the grammar's mask.
A request that keeps special tokens in its text, or a tokenizer without such a
token, or ``pending="wait"`` falls back to waiting for its own compile (the one
case that holds the step). Server settings: ``--additional-config
'{"kbnf_gpu": {...}}'`` with ``pending`` ("filler" | "wait"), ``filler_token``
(an id), ``cache_size``, ``compile_threads`` and ``compile_config`` (``CompileConfig`` fields).

After the matcher finishes: if the request accepted an EOS token its row is
left alone (the request ends); if an eager grammar completed, only EOS/stop ids
stay allowed so the output ends exactly at a sentence. A compile that fails in
the worker (rare: ``validate_params`` already parsed the grammar) or a token the
grammar rejects (another processor overrode the mask) ends the request the same
way, with a logged error.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality
from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext, LogitsProcRequestState
from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as V2LogitsProcessor

from ..batch import mask_batch
from ..config import CompileConfig
from ..errors import OptionError, TokenRejected
from ..runtime.matcher import Matcher
from ..vocab import Vocabulary
from .cache import CompileCache
from .masking import allow_only
from .spec import REQUEST_KEY, GrammarSpec

if TYPE_CHECKING:  # pragma: no cover
    from vllm import SamplingParams
    from vllm.config import VllmConfig

logger = logging.getLogger(__name__)

PENDING_POLICIES = ("filler", "wait")


@dataclass(frozen=True)
class Settings:
    """Server-wide settings, from ``vllm_config.additional_config["kbnf_gpu"]``."""

    pending: str = "filler"
    filler_token: int | None = None
    cache_size: int = 64
    compile_threads: int = 1
    compile_config: CompileConfig = CompileConfig()

    @classmethod
    def from_vllm_config(cls, vllm_config: Any) -> "Settings":
        extra = getattr(vllm_config, "additional_config", None) or {}
        raw = extra.get(REQUEST_KEY, {}) if isinstance(extra, dict) else {}
        if not isinstance(raw, dict):
            raise OptionError(f"additional_config.{REQUEST_KEY} must be an object, got {type(raw).__name__}")
        unknown = set(raw) - {"pending", "filler_token", "cache_size", "compile_threads", "compile_config"}
        if unknown:
            raise OptionError(f"additional_config.{REQUEST_KEY}: unknown setting {sorted(unknown)[0]!r}")
        settings = dict(raw)
        if "compile_config" in settings:
            settings["compile_config"] = CompileConfig(**settings["compile_config"])
        out = cls(**settings)
        if out.pending not in PENDING_POLICIES:
            raise OptionError(f"additional_config.{REQUEST_KEY}.pending must be one of {PENDING_POLICIES}")
        for name in ("cache_size", "compile_threads"):
            value = getattr(out, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise OptionError(f"additional_config.{REQUEST_KEY}.{name} must be a positive integer")
        return out


def request_spec(params: "SamplingParams") -> GrammarSpec | None:
    """The grammar a request asks for (``extra_args["kbnf_gpu"]``), or ``None`` for an unconstrained request."""
    extra = params.extra_args or {}
    value = extra.get(REQUEST_KEY)
    return None if value is None else GrammarSpec.from_request(value)


class _Validated:
    """Bounded memo of ``GrammarSpec.check`` outcomes: a popular schema is parsed once per server, not per request."""

    def __init__(self, capacity: int = 256) -> None:
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, Exception | None] = OrderedDict()
        self._capacity = capacity

    def check(self, spec: GrammarSpec) -> None:
        key = spec.key
        with self._lock:
            known = key in self._seen
            outcome = self._seen.get(key)
        if not known:
            try:
                spec.check()
                outcome = None
            except ValueError as err:  # GrammarError, OptionError: the request's fault
                outcome = err
            with self._lock:
                self._seen[key] = outcome
                while len(self._seen) > self._capacity:
                    self._seen.popitem(last=False)
        if outcome is not None:
            raise outcome


_VALIDATED = _Validated()


def vocabulary_for(vllm_config: "VllmConfig") -> Vocabulary:
    """The served model's vocabulary, from the tokenizer vLLM itself loads (and caches) for this config."""
    from vllm.tokenizers import cached_tokenizer_from_config

    tokenizer = cached_tokenizer_from_config(vllm_config.model_config)
    if tokenizer is None:
        raise OptionError("kbnf_gpu needs the tokenizer: do not start vLLM with --skip-tokenizer-init")
    return _vocabulary_of(tokenizer)


@lru_cache(maxsize=4)
def _vocabulary_of(tokenizer: Any) -> Vocabulary:
    return Vocabulary.from_hf(tokenizer)


class _Request:
    """One constrained request: its compile, its output list (vLLM's own, growing) and its matcher."""

    __slots__ = ("future", "output", "matcher", "consumed", "forced", "filler", "wait", "stop_ids", "last")

    def __init__(self, future: Future, output: list[int], filler: int | None, wait: bool,
                 stop_ids: tuple[int, ...]) -> None:
        self.future = future
        self.output = output
        self.matcher: Matcher | None = None
        self.consumed = 0
        self.forced: tuple[int, ...] | None = None  # set once the request may only end
        self.filler = filler
        self.wait = wait or filler is None
        self.stop_ids = stop_ids
        self.last: int | None = None

    def step(self) -> Matcher | tuple[int, ...] | None:
        """This step's constraint: a matcher to mask with, the only allowed ids, or ``None`` (row untouched)."""
        if self.forced is not None:
            return self.forced
        if self.matcher is None:
            if not self.future.done() and not self.wait:
                return (self.filler,)  # type: ignore[return-value]
            try:
                self.matcher = Matcher(self.future.result())
            except Exception as err:  # the compile's error: this request cannot be constrained
                logger.error("kbnf_gpu: compiling a request's grammar failed, ending the request: %s", err)
                self.forced = self.stop_ids
                return self.forced
        matcher = self.matcher
        output = self.output
        while self.consumed < len(output):
            token = output[self.consumed]
            if token < 0:  # vLLM's async-scheduling placeholder: resolved by the next step
                break
            self.consumed += 1
            if matcher.is_finished() or (token == self.filler and self.last is None):
                continue  # after the end, or a leading filler
            try:
                matcher.accept_token(token)
            except TokenRejected as err:
                logger.error("kbnf_gpu: output token outside the grammar (%s), ending the request", err)
                self.forced = self.stop_ids
                return self.forced
            self.last = token
        if matcher.is_finished():
            if self.last in matcher.compiled.eos_set:
                return None
            self.forced = self.stop_ids
            return self.forced
        return matcher


class GrammarLogitsProcessor(LogitsProcessor, V2LogitsProcessor):
    """Grammar-constrained decoding for the requests that carry ``extra_args["kbnf_gpu"]``.

    One class for both of vLLM's model runners (one entry point must load under
    either): the V1 interface (``__init__(vllm_config, device, is_pin_memory)``,
    ``update_state``, ``apply(logits)``) and Model Runner V2's
    (``__init__(vllm_config, req_states)``, ``add_request``, ``apply(logits, ctx)``).
    """

    @classmethod
    def validate_params(cls, sampling_params: "SamplingParams") -> None:
        """Reject a malformed request or a grammar that does not parse (``ValueError``: HTTP 400)."""
        spec = request_spec(sampling_params)
        if spec is not None:
            _VALIDATED.check(spec)

    def __init__(self, vllm_config: "VllmConfig", device_or_req_states: Any, is_pin_memory: bool = False) -> None:
        self.settings = Settings.from_vllm_config(vllm_config)
        self.vocab = vocabulary_for(vllm_config)
        self.req_states: LogitsProcRequestState | None = None
        if isinstance(device_or_req_states, LogitsProcRequestState):  # Model Runner V2
            self.req_states = device_or_req_states
            device_or_req_states = device_or_req_states.device
        self.device = torch.device(device_or_req_states)
        self.speculative = getattr(vllm_config, "speculative_config", None) is not None
        self.cache = CompileCache(self.vocab, self.settings.compile_config, capacity=self.settings.cache_size,
                                  workers=self.settings.compile_threads)
        self.requests: dict[int, _Request] = {}  # V1: batch index; V2: request slot

    def is_argmax_invariant(self) -> bool:
        """Masking changes the argmax."""
        return False

    # ------------------------------------------------------------ V1

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        """Apply the batch's changes in vLLM's order: removed, added, moved."""
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.requests.pop(index, None)
        for index, params, _prompt_ids, output_ids in batch_update.added:
            self._add(index, params, output_ids)
        for a, b, direction in batch_update.moved:
            moved_a = self.requests.pop(a, None)
            moved_b = self.requests.pop(b, None)
            if moved_a is not None:
                self.requests[b] = moved_a
            if moved_b is not None and direction == MoveDirectionality.SWAP:
                self.requests[a] = moved_b

    # ------------------------------------------------------------ V2

    def add_request(self, req_idx: int, sampling_params: "SamplingParams") -> bool:
        """Model Runner V2: (re)initialize slot ``req_idx``; its output tokens are read from ``req_states``."""
        return self._add(req_idx, sampling_params, [])

    def _v2_rows(self, ctx: LogitsContext) -> list[tuple[int, _Request]]:
        """(logits row, request) of this step, after copying each request's new output tokens to the host."""
        slots = ctx.idx_mapping_np.tolist()
        if self.speculative:  # one row per draft token: unsupported, so constrained requests end
            for slot in slots:
                request = self.requests.get(slot)
                if request is not None and request.forced is None:
                    logger.error("kbnf_gpu: speculative decoding is not supported, ending the request")
                    request.forced = request.stop_ids
        rows: list[tuple[int, _Request]] = []
        fetch_slots: list[int] = []
        fetch_positions: list[int] = []
        for row, slot in enumerate(slots):
            request = self.requests.get(slot)
            if request is None:
                continue
            rows.append((row, request))
            start = int(self.req_states.prompt_len.np[slot]) + len(request.output)
            for position in range(start, int(ctx.seq_lens_upper_bound_np[row])):
                fetch_slots.append(slot)
                fetch_positions.append(position)
        if fetch_slots:
            tokens = self.req_states.all_token_ids.gpu
            index = (torch.tensor(fetch_slots).to(tokens.device), torch.tensor(fetch_positions).to(tokens.device))
            for slot, token in zip(fetch_slots, tokens[index].tolist()):
                self.requests[slot].output.append(token)
        return rows

    # ------------------------------------------------------------ both

    def _add(self, index: int, params: "SamplingParams", output_ids: list[int]) -> bool:
        spec = request_spec(params)
        if spec is None:
            self.requests.pop(index, None)
            return False
        stop = set(self.vocab.eos_ids) | set(params.all_stop_token_ids or ())
        filler = self._filler(stop) if params.skip_special_tokens else None
        self.requests[index] = _Request(self.cache.submit(spec), output_ids, filler, self.settings.pending == "wait",
                                        tuple(sorted(t for t in stop if 0 <= t < self.vocab.size)))
        return True

    def _filler(self, stop_ids: set[int]) -> int | None:
        if self.settings.filler_token is not None:
            return self.settings.filler_token
        return next((t for t in sorted(self.vocab.special_ids) if t not in stop_ids), None)

    def apply(self, logits: torch.Tensor, ctx: LogitsContext | None = None) -> torch.Tensor:
        """Mask every constrained row: one ``mask_batch`` launch, plus one small op for rows in a forced state."""
        if not self.requests:
            return logits
        rows = self.requests.items() if ctx is None else self._v2_rows(ctx)
        matchers: list[Matcher] = []
        indices: list[int] = []
        forced_rows: list[int] = []
        forced_ids: list[tuple[int, ...]] = []
        for index, request in rows:
            if index >= logits.shape[0]:
                continue
            constraint = request.step()
            if isinstance(constraint, Matcher):
                matchers.append(constraint)
                indices.append(index)
            elif constraint is not None:
                forced_rows.append(index)
                forced_ids.append(constraint)
        if matchers:
            mask_batch(logits, matchers, indices)
        if forced_rows:
            allow_only(logits, forced_rows, forced_ids)
        return logits
