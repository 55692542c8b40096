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
