"""Pieces every benchmark shares: the Llama-3 tokenizer for the peers, and greedy tokenization."""
from __future__ import annotations


def llama3_hf():
    """The offline Llama-3 tokenizer.json as a ``transformers`` tokenizer (xgrammar and llguidance take one)."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    from kbnf_gpu.tokenizers import locate

    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_file(str(locate("llama3").path)))


def greedy_tokens(vocab, compiled, text: bytes) -> list[int]:
    """The longest token our mask allows that matches ``text`` at each position (a path through the grammar)."""
    from kbnf_gpu import Matcher

    m = Matcher(compiled)
    out, pos = [], 0
    while pos < len(text):
        best = max((t for t in m.allowed_token_ids().tolist() if text.startswith(vocab.token_bytes(t), pos)),
                   key=lambda t: len(vocab.token_bytes(t)))
        m.accept_token(best)
        out.append(best)
        pos += len(vocab.token_bytes(best))
    assert m.is_accepting(), "the text is not a complete sentence of the grammar"
    return out
