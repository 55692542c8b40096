"""Grammars that ship with the package (the demo's and the benchmarks' JSON)."""
from __future__ import annotations


def json_kbnf(max_whitespace: int | None = None) -> str:
    """JSON (RFC 8259) in KBNF: strings are any code point but ``"``, ``\\`` and C0 controls, or an escape.

    Whitespace sits next to punctuation (``ws "," ws``, ``ws "}"``) so the
    normalizer fuses each run into one lexeme: a token like ``", "`` then
    crosses one lexeme boundary, not three.

    ``max_whitespace`` bounds each run of whitespace (a sampler cannot then
    loop on spaces forever); ``None`` leaves it unbounded.
    """
    ws = "*" if max_whitespace is None else f"{{0,{int(max_whitespace)}}}"
    return rf"""
start ::= ws value ws;
value ::= object | array | string | number | "true" | "false" | "null";
object ::= "{{" ws "}}" | "{{" ws member (ws "," ws member)* ws "}}";
member ::= string ws ":" ws value;
array ::= "[" ws "]" | "[" ws value (ws "," ws value)* ws "]";
string ::= "\"" #"([^\"\\\\\u0000-\u001f]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{{4}})*" "\"";
number ::= #"-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?";
ws ::= #"[ \t\n\r]{ws}";
"""


JSON_KBNF = json_kbnf()
