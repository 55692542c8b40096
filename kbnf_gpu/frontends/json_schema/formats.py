"""``format`` keyword: regexes over the decoded string.

Each supported format is a full-match regex (written in the pattern dialect
of ``_pattern``) that accepts a subset of what the format's RFC allows and of
what python ``jsonschema``'s format checker accepts:

* ``date``: ``YYYY-MM-DD``, year 0001-9999, days per month, Feb 29 only in
  leap years (exact for ``date.fromisoformat`` on this shape).
* ``time``/``date-time``: RFC 3339 ``full-time`` (offset required, ``T``/``Z``
  in either case, no leap second ``:60``; exact for ``rfc3339-validator``).
* ``duration``: RFC 3339 appendix A ABNF (``P1Y2M``, ``PT5M``, ``P3W``...).
* ``email``: dot-atom local part ``@`` dot-separated domain labels (letters,
  digits, inner hyphens; label lengths unchecked; no quoted local parts or
  address literals).
* ``idn-email``: the same with non-ASCII characters (RFC 6531) in both parts.
* ``hostname``: RFC 1123 labels of 1-63 characters separated by dots; the
  253-character total is not enforced.
* ``uuid``: 8-4-4-4-12 hex digits, either case.
* ``ipv4``: dotted quad without leading zeros; ``ipv6``: RFC 4291 text forms
  (with an embedded IPv4 tail, no zone id).
* ``uri``: RFC 3986 ``URI`` without IP-literal hosts (``[...]``).
* ``uri-reference``: RFC 3986 ``URI-reference``; ``iri``/``iri-reference``:
  RFC 3987 (``ucschar``, ``iprivate`` in queries); no IP-literal hosts.
* ``uri-template``: RFC 6570 (levels 1-4).
* ``json-pointer``: RFC 6901; ``relative-json-pointer``: its draft-handrews
  form (a non-negative integer, then ``#`` or a JSON pointer), integers as
  python ``jsonschema`` checks them (no digit after a ``0``: ``100`` fails there).
* ``byte`` (OpenAPI): base64 (RFC 4648 alphabet, ``=`` padding to a multiple of 4).

OpenAPI's numeric formats bound numbers: ``int8``...``int64`` and
``uint8``...``uint64`` are the two's-complement (unsigned) ranges
(``INTEGER_FORMATS``, applied by ``_builder`` as ``minimum``/``maximum``);
``float``, ``double`` and the string formats ``binary`` and ``password``
constrain nothing a JSON text can show and are annotations.

The other standard formats (``idn-hostname``, ``regex``: the
strings Python's ``re`` compiles are not a regular language) are unsupported;
non-standard names are annotations and ignored (the validator ignores them
too).
"""
from __future__ import annotations

from functools import lru_cache

from ._pattern import pattern_language
from ._rx import Rx

_YEAR = r"(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"
_LEAP = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_MD = (
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
DATE = rf"(?:{_YEAR}-{_MD}|{_LEAP}-02-29)"
TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_N = r"[0-9]+"
_DUR_TIME = rf"T(?:{_N}H(?:{_N}M(?:{_N}S)?)?|{_N}M(?:{_N}S)?|{_N}S)"
_DUR_DATE = rf"(?:{_N}D|{_N}M(?:{_N}D)?|{_N}Y(?:{_N}M(?:{_N}D)?)?)(?:{_DUR_TIME})?"
DURATION = rf"P(?:{_DUR_DATE}|{_DUR_TIME}|{_N}W)"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOSTNAME = rf"{_LABEL}(?:\.{_LABEL})*"
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_DOMAIN_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
EMAIL = rf"{_ATOM}(?:\.{_ATOM})*@{_DOMAIN_LABEL}(?:\.{_DOMAIN_LABEL})*"
_U = r"\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF"  # RFC 6531 UTF8-non-ascii (BMP, no surrogates/noncharacters)
_IDN_ATOM = rf"[A-Za-z0-9!#$%&'*+/=?^_`{{|}}~{_U}-]+"
_IDN_LABEL = rf"[A-Za-z0-9{_U}](?:[A-Za-z0-9{_U}-]*[A-Za-z0-9{_U}])?"
IDN_EMAIL = rf"{_IDN_ATOM}(?:\.{_IDN_ATOM})*@{_IDN_LABEL}(?:\.{_IDN_LABEL})*"
_H = r"[0-9a-fA-F]"
UUID = rf"{_H}{{8}}-{_H}{{4}}-{_H}{{4}}-{_H}{{4}}-{_H}{{12}}"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_H16 = rf"{_H}{{1,4}}"
_LS32 = rf"(?:{_H16}:{_H16}|{IPV4})"


def _h16s(n: int) -> str:
    """n colon-terminated groups."""
    return "" if n == 0 else rf"(?:{_H16}:){{{n}}}"


def _upto(n: int) -> str:
    """[ *n( h16 ":" ) h16 ] (n = -1: nothing before '::')."""
    if n < 0:
        return ""
    if n == 0:
        return rf"(?:{_H16})?"
    return rf"(?:(?:{_H16}:){{0,{n}}}{_H16})?"


IPV6 = "(?:" + "|".join(
    [
        rf"{_h16s(6)}{_LS32}",
        rf"::{_h16s(5)}{_LS32}",
        rf"{_upto(0)}::{_h16s(4)}{_LS32}",
        rf"{_upto(1)}::{_h16s(3)}{_LS32}",
        rf"{_upto(2)}::{_h16s(2)}{_LS32}",
        rf"{_upto(3)}::{_H16}:{_LS32}",
        rf"{_upto(4)}::{_LS32}",
        rf"{_upto(5)}::{_H16}",
        rf"{_upto(6)}::",
    ]
) + ")"
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUBDELIMS = r"!$&'()*+,;="
_PCT = rf"%{_H}{{2}}"
_PCHAR = rf"(?:[{_UNRESERVED}{_SUBDELIMS}:@]|{_PCT})"
_SEGMENT = rf"{_PCHAR}*"
_SEGMENT_NZ = rf"{_PCHAR}+"
_USERINFO = rf"(?:[{_UNRESERVED}{_SUBDELIMS}:]|{_PCT})*"
_REGNAME = rf"(?:[{_UNRESERVED}{_SUBDELIMS}]|{_PCT})*"
_AUTHORITY = rf"(?:{_USERINFO}@)?{_REGNAME}(?::[0-9]*)?"
_HIER = (
    rf"(?://{_AUTHORITY}(?:/{_SEGMENT})*"
    rf"|/(?:{_SEGMENT_NZ}(?:/{_SEGMENT})*)?"
    rf"|{_SEGMENT_NZ}(?:/{_SEGMENT})*"
    r"|)"
)
_QUERY = rf"(?:{_PCHAR}|[/?])*"
URI = rf"[A-Za-z][A-Za-z0-9+.\-]*:{_HIER}(?:\?{_QUERY})?(?:#{_QUERY})?"


def _uri_reference(unreserved: str, private: str = "") -> tuple[str, str]:
    """RFC 3986 ``URI`` and ``URI-reference`` (RFC 3987 ``IRI``/``IRI-reference`` with ``ucschar``s
    added to ``unreserved`` and ``iprivate`` to the query), without IP-literal hosts."""
    pchar = rf"(?:[{unreserved}{_SUBDELIMS}:@]|{_PCT})"
    nc = rf"(?:[{unreserved}{_SUBDELIMS}@]|{_PCT})"  # no colon: a first relative segment is not a scheme
    userinfo = rf"(?:[{unreserved}{_SUBDELIMS}:]|{_PCT})*"
    authority = rf"(?:{userinfo}@)?(?:[{unreserved}{_SUBDELIMS}]|{_PCT})*(?::[0-9]*)?"
    query = rf"(?:{pchar}|[/?{private}])*"
    fragment = rf"(?:{pchar}|[/?])*"
    tail = rf"(?:\?{query})?(?:#{fragment})?"
    hier = rf"(?://{authority}(?:/{pchar}*)*|/(?:{pchar}+(?:/{pchar}*)*)?|{pchar}+(?:/{pchar}*)*|)"
    relative = rf"(?://{authority}(?:/{pchar}*)*|/(?:{pchar}+(?:/{pchar}*)*)?|{nc}+(?:/{pchar}*)*|)"
    absolute = rf"[A-Za-z][A-Za-z0-9+.\-]*:{hier}{tail}"
    return absolute, rf"(?:{absolute}|{relative}{tail})"


_UCSCHAR = r"\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF"
_IPRIVATE = r"\uE000-\uF8FF"
_, URI_REFERENCE = _uri_reference(_UNRESERVED)
IRI, IRI_REFERENCE = _uri_reference(_UNRESERVED + _UCSCHAR, _IPRIVATE)
JSON_POINTER = r"(?:/(?:[^~/]|~[01])*)*"
# python jsonschema rejects a digit after any 0 of the integer ("100"): the accepted integers are kept sound
RELATIVE_JSON_POINTER = rf"(?:0|[1-9]+0?)(?:#|{JSON_POINTER})"
_VARCHAR = rf"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\*)?"
_TEMPLATE_LITERAL = r"[^\x00-\x20\x7F\"'%<>\\^`{|}]"
URI_TEMPLATE = rf"(?:{_TEMPLATE_LITERAL}|{_PCT}|\{{[+#./;?&=,!@|]?{_VARSPEC}(?:,{_VARSPEC})*\}})*"
_B64 = r"[A-Za-z0-9+/]"
BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{2}}==|{_B64}{{3}}=)?"

FORMATS: dict[str, str] = {
    "date": DATE,
    "time": TIME,
    "date-time": rf"{DATE}[Tt]{TIME}",
    "duration": DURATION,
    "email": EMAIL,
    "idn-email": IDN_EMAIL,
    "hostname": HOSTNAME,
    "uuid": UUID,
    "ipv4": IPV4,
    "ipv6": IPV6,
    "uri": URI,
    "uri-reference": URI_REFERENCE,
    "iri": IRI,
    "iri-reference": IRI_REFERENCE,
    "uri-template": URI_TEMPLATE,
    "json-pointer": JSON_POINTER,
    "relative-json-pointer": RELATIVE_JSON_POINTER,
    "byte": BASE64,
}

INTEGER_FORMATS: dict[str, tuple[int, int]] = {
    **{f"int{b}": (-(1 << (b - 1)), (1 << (b - 1)) - 1) for b in (8, 16, 32, 64)},
    **{f"uint{b}": (0, (1 << b) - 1) for b in (8, 16, 32, 64)},
}

UNSUPPORTED_FORMATS = frozenset(
    {
        "idn-hostname",
        "regex",
    }
)


@lru_cache(maxsize=None)
def format_language(name: str) -> Rx:
    """The decoded-string language of a supported format."""
    return pattern_language("^(?:" + FORMATS[name] + ")$")
