"""The vLLM logits processor, driven through vLLM's own V1 interface classes (vllm installed with --no-deps).

A stand-in for vLLM's persistent batch records adds, removals, moves and swaps
in a real ``BatchUpdateBuilder`` (in vLLM's order: removed, added, moved), calls
``update_state`` / ``apply`` as the GPU model runner does, samples a token from
every row, and checks each row against an independent ``Matcher`` fed the same
tokens: the row's finite columns must equal ``Matcher.allowed_token_ids`` (or
the filler / stop ids in the states that force them), unconstrained rows must be
untouched, padded columns masked.
"""
from __future__ import annotations

import json
import tomllib
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from vllm import SamplingParams
from vllm.exceptions import VLLMValidationError
from vllm.v1.sample.logits_processor import (
    BatchUpdateBuilder,
    LogitsProcessors,
    MoveDirectionality,
    _load_logitsprocs_by_fqcns,
    validate_logits_processors_parameters,
)

import kbnf_gpu.integrations.vllm as kv
from integration_support import SCHEMA, allowed_columns, greedy_tokens, save_llama3_tokenizer
from kbnf_gpu import GrammarError, Matcher
from kbnf_gpu.integrations.vllm import GrammarLogitsProcessor, request_spec

PAD = 128  # logits wider than the tokenizer, as models pad their vocabulary
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return save_llama3_tokenizer(tmp_path_factory.mktemp("llama3-model"))


def make_config(model_dir: Path, **settings) -> SimpleNamespace:
    """The parts of ``VllmConfig`` the processors read (a real one needs a model to inspect)."""
    model_config = SimpleNamespace(skip_tokenizer_init=False, hf_config=None, tokenizer=str(model_dir),
                                   model=str(model_dir), runner_type="generate", tokenizer_mode="auto",
                                   tokenizer_revision=None, trust_remote_code=False)
    return SimpleNamespace(model_config=model_config, additional_config={"kbnf_gpu": settings} if settings else {},
                           scheduler_config=SimpleNamespace(max_num_seqs=8), speculative_config=None)


@pytest.fixture(scope="module")
def processor_factory(model_dir):
    def make(**settings) -> GrammarLogitsProcessor:
        return GrammarLogitsProcessor(make_config(model_dir, **settings), torch.device("cpu"), False)

    return make


def params(spec=None, **kw) -> SamplingParams:
    return SamplingParams(max_tokens=64, extra_args=None if spec is None else {"kbnf_gpu": spec}, **kw)


class Slot:
    """One request in the stand-in batch: vLLM's output list, and the reference matcher (None: unconstrained)."""

    def __init__(self, proc: GrammarLogitsProcessor, sampling: SamplingParams, ready: bool = True) -> None:
        self.params = sampling
        self.output: list[int] = []
        spec = request_spec(sampling)
        self.ref = None if spec is None or not ready else Matcher(proc.cache.result(spec))
        self.pending = spec is not None and not ready
        self.done = False


class Batch:
    """What vLLM's persistent batch tells a logits processor, and the checks of every row."""

    def __init__(self, proc: GrammarLogitsProcessor, seed: int = 0) -> None:
        self.proc = proc
        self.builder = BatchUpdateBuilder()
        self.slots: dict[int, Slot] = {}
        self.rng = np.random.default_rng(seed)
        self.width = proc.vocab.size + PAD
        self.filler = None

    def add(self, index: int, sampling: SamplingParams, ready: bool = True) -> Slot:
        slot = Slot(self.proc, sampling, ready)
        self.builder.added.append((index, sampling, [1, 2, 3], slot.output))
        self.slots[index] = slot
        return slot

    def remove(self, index: int) -> None:
        self.builder.removed_append(index)
        del self.slots[index]

    def move(self, a: int, b: int, swap: bool = False) -> None:
        self.builder.moved.append((a, b, MoveDirectionality.SWAP if swap else MoveDirectionality.UNIDIRECTIONAL))
        slot_a, slot_b = self.slots.pop(a, None), self.slots.pop(b, None)
        if slot_a is not None:
            self.slots[b] = slot_a
        if swap and slot_b is not None:
            self.slots[a] = slot_b

    def expected(self, slot: Slot) -> np.ndarray | None:
        """The allowed ids of a row; ``None``: the row must be untouched."""
        stop = np.array(sorted(set(self.proc.vocab.eos_ids) | set(slot.params.all_stop_token_ids)), dtype=np.int32)
        if slot.pending:
            return np.array([self.filler], dtype=np.int32)
        if slot.ref is None or slot.done:
            return None
        if slot.ref.is_finished():
            return stop
        return slot.ref.allowed_token_ids()

    def step(self) -> torch.Tensor:
        """update_state, apply, check every row, sample every row."""
        size = max(self.slots, default=-1) + 1
        self.proc.update_state(self.builder.get_and_reset(size))
        logits = torch.randn(size, self.width, generator=torch.Generator().manual_seed(int(self.rng.integers(1 << 30))))
        original = logits.clone()
        assert self.proc.apply(logits) is logits
        for index, slot in self.slots.items():
            if slot.pending and allowed_columns(logits[index]).tolist() != [self.filler]:
                slot.pending = False  # its compile finished (in the worker thread) before this step
                slot.ref = Matcher(self.proc.cache.result(request_spec(slot.params)))
            want = self.expected(slot)
            row = logits[index]
            if want is None:
                assert torch.equal(row, original[index]), f"row {index} must be untouched"
            else:
                got = allowed_columns(row)
                np.testing.assert_array_equal(got, want, err_msg=f"row {index}")
                assert torch.equal(row[got], original[index][got]), "allowed logits are kept bit-exact"
                assert (got < self.proc.vocab.size).all(), "padded columns are masked"
            self.sample(index, slot, row)
        return logits

    def sample(self, index: int, slot: Slot, row: torch.Tensor) -> None:
        choices = allowed_columns(row)
        token = int(self.rng.choice(choices))
        slot.output.append(token)
        if slot.pending or slot.ref is None or slot.done:
            return
        if slot.ref.is_finished():
            slot.done = True  # a stop token after an eager finish: vLLM ends the request
            return
        slot.ref.accept_token(token)
        slot.done = slot.ref.is_finished() and token in slot.ref.compiled.eos_set


GBNF = 'root ::= "[" [0-9]+ ("," [0-9]+)* "]"'
REGEX = r"[a-z]{1,8}@[a-z]{2,5}\.(com|org)"


def test_batch_changes_and_rows_follow_the_matcher(processor_factory):
    proc = processor_factory()
    batch = Batch(proc, seed=1)
    batch.add(0, params({"json_schema": SCHEMA}))
    batch.add(1, params())
    batch.add(2, params({"grammar": GBNF, "syntax": "gbnf"}))
    batch.add(3, params({"regex": REGEX}))
    batch.add(4, params({"json_schema": json.dumps(SCHEMA)}))  # the same schema as JSON text: one compile
    assert len(proc.cache) == 3
    for _ in range(3):
        batch.step()
    batch.remove(1)
    batch.move(4, 1)  # condense the hole, as vLLM does
    for _ in range(2):
        batch.step()
    batch.move(0, 2, swap=True)
    for _ in range(2):
        batch.step()
    batch.remove(3)
    batch.add(3, params({"grammar": 'start ::= "yes" | "no";'}))  # a new request in the freed slot (eager KBNF)
    batch.add(4, params())  # slot 4 was vacated by the move: nothing of its old request may remain
    for _ in range(4):
        batch.step()
    assert batch.slots[3].done or batch.slots[3].ref.is_finished(), "yes/no finishes within 4 tokens"
    assert proc.requests.keys() == {0, 1, 2, 3}


def test_one_mask_batch_launch_per_step(processor_factory, monkeypatch):
    proc = processor_factory()
    calls = []
    real = kv.mask_batch

    def counting(logits, matchers, indices=None, **kw):
        calls.append(list(indices))
        return real(logits, matchers, indices, **kw)

    monkeypatch.setattr(kv, "mask_batch", counting)
    batch = Batch(proc, seed=2)
    batch.add(0, params({"regex": REGEX}))
    batch.add(1, params())
    batch.add(2, params({"json_schema": SCHEMA}))
    batch.step()
    batch.step()
    assert calls == [[0, 2], [0, 2]]


def test_pending_compile_masks_only_its_row_with_the_filler(processor_factory, monkeypatch):
    proc = processor_factory()
    hold = Future()
    spec_of_held = request_spec(params({"regex": "held[0-9]{3}"}))
    submit = proc.cache.submit
    monkeypatch.setattr(proc.cache, "submit", lambda spec: hold if spec.key == spec_of_held.key else submit(spec))
    batch = Batch(proc, seed=3)
    batch.filler = proc._filler(set(proc.vocab.eos_ids))
    assert batch.filler in proc.vocab.special_ids and batch.filler not in proc.vocab.eos_ids
    held = batch.add(0, params({"regex": "held[0-9]{3}"}), ready=False)
    batch.add(1, params({"json_schema": SCHEMA}))  # ready: masked exactly while row 0 waits
    for _ in range(2):
        batch.step()
    assert held.output == [batch.filler, batch.filler]
    compiled = submit(spec_of_held).result()
    hold.set_result(compiled)
    held.pending = False
    held.ref = Matcher(compiled)
    for _ in range(6):
        batch.step()
    text = proc.vocab.decode_bytes(held.output, skip_special=True)
    assert text.startswith(b"held") and held.output[:2] == [batch.filler] * 2
    from integration_support import llama3_hf

    assert llama3_hf().decode(held.output, skip_special_tokens=True) == text.decode()


def test_wait_policy_and_kept_special_tokens_block_on_their_own_compile(processor_factory):
    proc = processor_factory(pending="wait")
    batch = Batch(proc, seed=4)
    slot = batch.add(0, params({"regex": "w[0-9]{2}"}), ready=False)
    slot.pending, slot.ref = False, None  # no filler: the first apply waits and masks exactly
    proc.update_state(batch.builder.get_and_reset(1))
    logits = torch.randn(1, batch.width)
    proc.apply(logits)
    ref = Matcher(proc.cache.result(request_spec(slot.params)))
    np.testing.assert_array_equal(allowed_columns(logits[0]), ref.allowed_token_ids())

    proc = processor_factory()
    batch = Batch(proc, seed=5)
    batch.add(0, params({"regex": "k[0-9]{2}"}, skip_special_tokens=False), ready=False)
    proc.update_state(batch.builder.get_and_reset(1))
    logits = torch.randn(1, batch.width)
    proc.apply(logits)
    ref = Matcher(proc.cache.result(request_spec(batch.slots[0].params)))
    np.testing.assert_array_equal(allowed_columns(logits[0]), ref.allowed_token_ids())


def test_endings_eos_eager_rejected_token_failed_compile(processor_factory, monkeypatch):
    proc = processor_factory()
    batch = Batch(proc, seed=6)
    stop = np.array(sorted(proc.vocab.eos_ids), dtype=np.int32)
    done = batch.add(0, params({"json_schema": SCHEMA}))
    eager = batch.add(1, params({"grammar": 'start ::= "ok";'}))
    broken = batch.add(2, params({"regex": "[0-9]+"}))
    document = b'{"name": "Ada", "age": 36, "ok": true}'
    done.output.extend(greedy_tokens(done.ref.compiled, document))
    eager.output.extend(greedy_tokens(eager.ref.compiled, b"ok"))
    broken.output.append(proc.vocab.eos_ids[0] - 1000)  # a token another processor forced in
    proc.update_state(batch.builder.get_and_reset(3))
    logits = torch.randn(3, batch.width)
    proc.apply(logits)
    allowed = allowed_columns(logits[0])
    assert set(stop) <= set(allowed.tolist()), "the complete document may end"
    np.testing.assert_array_equal(allowed_columns(logits[1]), stop)  # eager: finished, only EOS
    np.testing.assert_array_equal(allowed_columns(logits[2]), stop)  # rejected token: the request ends
    done.output.append(int(stop[0]))  # EOS accepted: the row is left alone from now on
    logits = torch.randn(3, batch.width)
    original = logits.clone()
    proc.apply(logits)
    assert torch.equal(logits[0], original[0])

    failing = Future()
    failing.set_exception(GrammarError("boom"))
    monkeypatch.setattr(proc.cache, "submit", lambda spec: failing)
    batch.add(3, params({"regex": "x"}), ready=False)
    proc.update_state(batch.builder.get_and_reset(4))
    logits = torch.randn(4, batch.width)
    proc.apply(logits)
    np.testing.assert_array_equal(allowed_columns(logits[3]), stop)


def test_async_placeholders_wait_for_the_real_token(processor_factory):
    proc = processor_factory()
    batch = Batch(proc, seed=7)
    slot = batch.add(0, params({"regex": "ab[0-9]{4}"}))
    first = greedy_tokens(slot.ref.compiled, b"ab")
    slot.output.extend(first + [-1])  # vLLM's async scheduling: the last token is not copied back yet
    proc.update_state(batch.builder.get_and_reset(1))
    logits = torch.randn(1, batch.width)
    proc.apply(logits)
    slot.ref.accept_tokens(first)
    np.testing.assert_array_equal(allowed_columns(logits[0]), slot.ref.allowed_token_ids())
    digit = int(slot.ref.allowed_token_ids()[0])
    slot.output[-1] = digit
    logits = torch.randn(1, batch.width)
    proc.apply(logits)
    slot.ref.accept_token(digit)
    np.testing.assert_array_equal(allowed_columns(logits[0]), slot.ref.allowed_token_ids())


def test_validate_params_through_vllm(monkeypatch, tmp_path):
    validate = lambda p: validate_logits_processors_parameters([GrammarLogitsProcessor], p)  # noqa: E731
    validate(params())
    validate(params({"json_schema": SCHEMA}))
    validate(SamplingParams(extra_args={"kbnf_gpu": json.dumps({"regex": "[0-9]+"})}))  # vllm_xargs: JSON text
    with pytest.raises(VLLMValidationError, match=r"line 2, column \d+"):
        validate(params({"grammar": 'root ::= "a"\nitem ::= ( "b" ', "syntax": "gbnf"}))
    with pytest.raises(VLLMValidationError, match="unknown key 'shema'"):
        validate(params({"shema": {}}))
    with pytest.raises(VLLMValidationError, match="exactly one"):
        validate(params({"regex": "a", "json_schema": {}}))
    with pytest.raises(VLLMValidationError, match="/properties/a"):
        validate(params({"json_schema": {"type": "object", "properties": {"a": {"type": "strin"}}}}))
    with pytest.raises(VLLMValidationError, match="KBNF_GPU_ARTIFACT_DIR"):
        validate(params({"artifact": "x.kbnfgpu"}))
    monkeypatch.setenv("KBNF_GPU_ARTIFACT_DIR", str(tmp_path))
    with pytest.raises(VLLMValidationError, match="outside"):
        validate(params({"artifact": "../x.kbnfgpu"}))
    with pytest.raises(VLLMValidationError, match="no such file"):
        validate(params({"artifact": "missing.kbnfgpu"}))


def test_artifact_request_loads_from_the_allowed_directory(processor_factory, monkeypatch, tmp_path):
    proc = processor_factory()
    compiled = proc.cache.result(request_spec(params({"regex": "[a-f]{3}"})))
    compiled.save(tmp_path / "hex.kbnfgpu")
    monkeypatch.setenv("KBNF_GPU_ARTIFACT_DIR", str(tmp_path))
    GrammarLogitsProcessor.validate_params(params({"artifact": "hex.kbnfgpu"}))
    batch = Batch(proc, seed=8)
    batch.add(0, params({"artifact": "hex.kbnfgpu"}))
    for _ in range(4):
        batch.step()
    output = batch.slots[0].output
    text = output[: output.index(proc.vocab.eos_ids[0])] if proc.vocab.eos_ids[0] in output else output
    assert text and all(proc.vocab.token_bytes(t).strip(b"abcdef") == b"" for t in text)


def test_entry_point_and_vllm_builder_load_the_processor(model_dir):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = project["project"]["entry-points"]["vllm.logits_processors"]["kbnf_gpu"]
    assert target == "kbnf_gpu.integrations.vllm:GrammarLogitsProcessor"
    (cls,) = _load_logitsprocs_by_fqcns([target])  # what `vllm serve --logits-processors` does with the name
    assert cls is GrammarLogitsProcessor
    procs = LogitsProcessors([cls(make_config(model_dir), torch.device("cpu"), False)])
    assert len(procs.non_argmax_invariant) == 1 and not procs.argmax_invariant


def test_bad_server_settings_fail_at_start(model_dir):
    with pytest.raises(ValueError, match="pending"):
        GrammarLogitsProcessor(make_config(model_dir, pending="sometimes"), torch.device("cpu"), False)
    with pytest.raises(ValueError, match="unknown setting"):
        GrammarLogitsProcessor(make_config(model_dir, cache=3), torch.device("cpu"), False)


def test_compiles_run_in_a_worker_thread_while_other_rows_are_masked(processor_factory, monkeypatch):
    import time

    from kbnf_gpu.integrations.spec import GrammarSpec

    real_compile = GrammarSpec.compile

    def slow_compile(self, *args, **kwargs):  # schema compiles now take milliseconds: make this one take 300 ms
        time.sleep(0.3)
        return real_compile(self, *args, **kwargs)

    monkeypatch.setattr(GrammarSpec, "compile", slow_compile)
    proc = processor_factory()
    batch = Batch(proc, seed=10)
    batch.filler = proc._filler(set(proc.vocab.eos_ids))
    batch.add(0, params({"regex": REGEX}))
    schema = dict(SCHEMA, properties=dict(SCHEMA["properties"], extra={"type": "number"}))
    fresh = batch.add(1, params({"json_schema": schema}), ready=False)  # not compiled yet: in the worker
    deadline = time.monotonic() + 120  # steps take microseconds: wait on the clock, not on a step count
    while fresh.pending:
        if time.monotonic() > deadline:
            pytest.fail("the compile never finished")
        batch.step()
        time.sleep(0.01)
    for _ in range(3):
        batch.step()
    assert fresh.output[0] == batch.filler, "a 300 ms compile cannot finish between update_state and apply"
    assert fresh.ref.num_tokens >= 3


# ---------------------------------------------------------------- Model Runner V2 (vLLM's default on CUDA)


def test_model_runner_v2_reordered_rows_recycled_slots(processor_factory, model_dir):
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext, LogitsProcRequestState

    proc = processor_factory()
    max_reqs, max_len = 4, 96
    all_token_ids = torch.zeros(max_reqs, max_len, dtype=torch.int32)
    prompt_len = np.zeros(max_reqs, dtype=np.int32)
    total_len = np.zeros(max_reqs, dtype=np.int32)
    state = LogitsProcRequestState(device=torch.device("cpu"), max_num_reqs=max_reqs, vocab_size=proc.vocab.size + PAD,
                                   all_token_ids=SimpleNamespace(gpu=all_token_ids),
                                   prompt_len=SimpleNamespace(np=prompt_len), prefill_len=SimpleNamespace(np=prompt_len),
                                   total_len=SimpleNamespace(gpu=torch.from_numpy(total_len)))
    v2 = GrammarLogitsProcessor(make_config(model_dir), state)
    assert v2.req_states is state
    refs: dict[int, Matcher | None] = {}
    rng = np.random.default_rng(9)

    def admit(slot: int, spec, prompt: int) -> None:
        sampling = params(spec)
        assert v2.add_request(slot, sampling) is (spec is not None)
        prompt_len[slot] = total_len[slot] = prompt
        all_token_ids[slot, :prompt] = torch.arange(prompt)  # prompt tokens: never given to the matcher
        refs[slot] = None if spec is None else Matcher(v2.cache.result(request_spec(sampling)))

    def step(order: list[int]) -> None:
        ctx = LogitsContext(expanded_idx_mapping=torch.tensor(order), idx_mapping=torch.tensor(order),
                            idx_mapping_np=np.array(order), expanded_local_pos=torch.zeros(len(order)),
                            input_ids=torch.zeros(len(order)), pos=torch.zeros(len(order)),
                            seq_lens_upper_bound_np=total_len[order].copy())
        logits = torch.randn(len(order), proc.vocab.size + PAD)
        original = logits.clone()
        v2.apply(logits, ctx)
        for row, slot in enumerate(order):
            ref = refs[slot]
            if ref is None or ref.is_finished():
                assert torch.equal(logits[row], original[row])
                token = int(rng.integers(proc.vocab.size))
            else:
                np.testing.assert_array_equal(allowed_columns(logits[row]), ref.allowed_token_ids())
                token = int(rng.choice(ref.allowed_token_ids()))
                ref.accept_token(token)
            all_token_ids[slot, total_len[slot]] = token  # the sampler's write, read back next step
            total_len[slot] += 1

    admit(2, {"regex": REGEX}, 5)
    admit(0, None, 3)
    admit(1, {"json_schema": SCHEMA}, 7)
    for order in ([2, 0, 1], [1, 2, 0], [0, 1, 2], [2, 1, 0]):
        step(order)
    admit(2, {"grammar": GBNF, "syntax": "gbnf"}, 2)  # the slot is recycled for a new request
    for order in ([2, 0, 1], [1, 2]):
        step(order)


def test_model_runner_v2_loader_and_validator_accept_the_class():
    from vllm.v1.worker.gpu.sample.logits_processor import build_custom_logits_processors_params_validator
    from vllm.v1.worker.gpu.sample.logits_processor.loader import _load_v2_logitsprocs_by_fqcns

    target = "kbnf_gpu.integrations.vllm:GrammarLogitsProcessor"
    assert _load_v2_logitsprocs_by_fqcns([target]) == [GrammarLogitsProcessor]
    validate = build_custom_logits_processors_params_validator([target])
    validate(params({"regex": "[0-9]+"}))
    with pytest.raises(VLLMValidationError, match="column"):
        validate(params({"grammar": "start ::= ;;", "syntax": "kbnf"}))
