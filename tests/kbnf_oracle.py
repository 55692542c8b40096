"""Helpers for tests that use the ``kbnf`` package (the seed crate) as an oracle."""
from __future__ import annotations

import contextlib
import logging
import os

# kbnf's Rust logging (pyo3-log) caches logger levels: set ours before its first message
logging.getLogger("kbnf").setLevel(logging.ERROR)


@contextlib.contextmanager
def quiet_stderr():
    """kbnf (Rust) warns about the vocabulary through Python logging and may print to fd 2."""
    logger = logging.getLogger("kbnf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    fd = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(fd, 2)
        os.close(fd)
        logger.setLevel(level)


def sentinel_status(engine, data: bytes) -> tuple[bool, bool]:
    """(data is a viable prefix, data is a sentence) for an engine over ``start ::= X "\\x01";``.

    Feeds ``data`` byte by byte, then the sentinel: kbnf finishes eagerly, and
    the sentinel makes that happen exactly at the end.
    """
    engine.reset()
    for byte in data:
        try:
            engine.try_accept_new_bytes(bytes([byte]))
        except ValueError:
            return False, False
        if engine.is_finished():  # cannot happen: the sentinel is not in data
            return False, False
    try:
        engine.try_accept_new_bytes(b"\x01")
    except ValueError:
        return True, False
    return True, engine.is_finished()
