"""Corrupted and crafted artifact files fail cleanly (issue #13).

Raw damage (truncation, flipped bytes) is caught by the checksum; crafted
files (re-signed, so the checksum holds) with edited headers, absurd declared
sizes, wrong types and out-of-range indices must raise ``ArtifactError`` (or
load a grammar whose masks are still those of a valid grammar), never another
exception, and never allocate much more than the file's size. A re-signed
file with edited table rows loads and runs but may mask wrongly (the parser
still rejects what the grammar forbids): artifacts are trusted content, the
checksum guards against damage, not against their author.
"""
from __future__ import annotations

import hashlib
import json
import struct
import tracemalloc

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbnf_gpu import Matcher, Vocabulary, load_compiled
from kbnf_gpu.errors import ArtifactError, TokenRejected
from test_compiled_masks import compile_ir, json_grammar

TOKENS = [b"{", b"}", b'"', b'":', b"a", b"1", b" ", b"[", b"]", b",", b'"a"', b"true", b'{"', b"},", b"</s>"]
VOCAB = Vocabulary(dict(enumerate(TOKENS)), special_ids=[len(TOKENS) - 1], eos_ids=[len(TOKENS) - 1])
_SAVED: list[bytes] = []


def artifact_bytes(tmp_path_factory) -> bytes:
    if not _SAVED:
        path = tmp_path_factory.mktemp("artifact") / "g.kbnfgpu"
        compile_ir(json_grammar(), VOCAB, sparse_limit=2).save(path)
        _SAVED.append(path.read_bytes())
    return _SAVED[0]


def split(data: bytes) -> tuple[dict, bytes]:
    head_len = struct.unpack_from("<Q", data, 8)[0]
    return json.loads(data[16:16 + head_len]), data[16 + head_len:-32]


def signed(header, payload: bytes, prefix: bytes) -> bytes:
    head = json.dumps(header).encode()
    body = prefix + struct.pack("<Q", len(head)) + head + payload
    return body + hashlib.sha256(body).digest()


def load_cleanly(path, size: int) -> None:
    """Load; only ArtifactError may escape; peak allocation bounded by a few times the file."""
    tracemalloc.start()
    try:
        compiled = load_compiled(path, VOCAB)
    except ArtifactError:
        compiled = None
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak <= 8 * size + (1 << 20), (peak, size)
    if compiled is not None:  # structurally valid: it runs (its rows may be wrong: the file was re-signed)
        m = Matcher(compiled)
        for _ in range(4):
            allowed = m.allowed_token_ids()
            if not allowed.size:
                break
            try:
                m.accept_token(int(allowed[0]))
            except TokenRejected:
                break


# ------------------------------------------------------------ raw damage


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_truncated_or_flipped_files_are_refused(tmp_path_factory, data):
    raw = artifact_bytes(tmp_path_factory)
    kind = data.draw(st.sampled_from(["truncate", "flip", "append"]))
    if kind == "truncate":
        bad = raw[: data.draw(st.integers(0, len(raw) - 1))]
    elif kind == "flip":
        bad = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 4))):
            bad[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
        bad = bytes(bad)
    else:
        bad = raw + data.draw(st.binary(min_size=1, max_size=64))
    path = tmp_path_factory.mktemp("bad") / "x.kbnfgpu"
    path.write_bytes(bad)
    if bad == raw:
        return
    try:
        load_compiled(path, VOCAB)
    except ArtifactError:
        return
    raise AssertionError(f"a damaged file ({kind}) was loaded")


# -------------------------------------------------------- crafted headers

ABSURD = st.one_of(st.integers(-2**63, 2**63 - 1), st.sampled_from([0, -1, 10**12, 2**62]), st.none(), st.text(max_size=3),
                   st.lists(st.integers(-3, 10**9), max_size=3), st.floats(allow_nan=True), st.booleans(),
                   st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))


@st.composite
def header_edits(draw, header: dict):
    header = json.loads(json.dumps(header))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["top", "array", "rule", "terminals", "nullable", "config"]))
        if where == "top":
            key = draw(st.sampled_from(sorted(header) + ["extra"]))
            if draw(st.booleans()) and key in header:
                del header[key]
            else:
                header[key] = draw(ABSURD)
        # an earlier edit may have made "arrays" or "rules" absurd already: edit inside only what is still a list
        elif where == "array" and isinstance(header.get("arrays"), list) and header["arrays"] \
                and all(isinstance(e, dict) for e in header["arrays"]):
            entry = draw(st.sampled_from(header["arrays"]))
            entry[draw(st.sampled_from(["dtype", "shape", "offset", "nbytes", "name"]))] = draw(
                st.one_of(ABSURD, st.sampled_from(["<i4", "<u4", "|b1", "<i8", "|O", "<f8"])))
        elif where == "rule" and isinstance(header.get("rules"), list) and header["rules"] \
                and all(isinstance(r, list) and len(r) >= 2 for r in header["rules"]):
            rule = draw(st.sampled_from(header["rules"]))
            rule[draw(st.integers(0, 1))] = draw(st.one_of(ABSURD, st.lists(st.integers(-50, 50), max_size=4)))
        elif where == "terminals":
            header["terminals"] = draw(st.one_of(ABSURD, st.lists(st.text(max_size=2), max_size=40)))
        elif where == "nullable":
            header["nullable"] = draw(st.one_of(ABSURD, st.lists(st.integers(-5, 50), max_size=4)))
        else:
            header["config"] = draw(st.one_of(ABSURD, st.dictionaries(
                st.sampled_from(["sparse_limit", "memo_limit", "max_dfa_states", "cache_dir", "use_tables"]),
                ABSURD, max_size=3)))
    return header


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_crafted_headers_fail_cleanly(tmp_path_factory, data):
    raw = artifact_bytes(tmp_path_factory)
    header, payload = split(raw)
    edited = data.draw(header_edits(header))
    path = tmp_path_factory.mktemp("crafted") / "x.kbnfgpu"
    blob = signed(edited, payload, raw[:8])
    path.write_bytes(blob)
    load_cleanly(path, len(blob))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_crafted_array_contents_fail_cleanly(tmp_path_factory, data):
    """Checksum-valid files whose arrays hold out-of-range states, rows, refs and pointers."""
    raw = artifact_bytes(tmp_path_factory)
    header, payload = split(raw)
    payload = bytearray(payload)
    entry = data.draw(st.sampled_from(header["arrays"]))
    if entry["nbytes"]:
        dtype = np.dtype(entry["dtype"])
        view = np.frombuffer(payload, dtype=np.uint8)[entry["offset"]:entry["offset"] + entry["nbytes"]]
        values = view.view(dtype)
        i = data.draw(st.integers(0, values.size - 1))
        if dtype.kind == "b":
            view[i] = data.draw(st.integers(0, 255))
        else:
            low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
            # Any value of the dtype, or one near the edges of a small table (-3 only where the dtype is signed).
            values[i] = data.draw(st.one_of(st.integers(low, high), st.integers(max(low, -3), min(high, 300))))
    path = tmp_path_factory.mktemp("contents") / "x.kbnfgpu"
    blob = signed(header, bytes(payload), raw[:8])
    path.write_bytes(blob)
    load_cleanly(path, len(blob))


def test_a_crafted_cache_dir_is_ignored(tmp_path_factory):
    raw = artifact_bytes(tmp_path_factory)
    header, payload = split(raw)
    target = tmp_path_factory.mktemp("elsewhere")
    header["config"]["cache_dir"] = str(target)
    path = tmp_path_factory.mktemp("crafted") / "x.kbnfgpu"
    path.write_bytes(signed(header, payload, raw[:8]))
    compiled = load_compiled(path, VOCAB)
    Matcher(compiled).allowed_token_ids()
    assert compiled.config.cache_dir is None and not any(target.iterdir())
