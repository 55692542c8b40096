"""Glue for the engines people serve with; one module per engine, each imported only on demand.

* ``kbnf_gpu.integrations.vllm``: a vLLM custom logits processor (``GrammarLogitsProcessor``).
* ``kbnf_gpu.integrations.transformers``: a ``transformers`` logits processor for ``generate``.
* ``kbnf_gpu.integrations.backend``: ``GrammarBackend`` / ``Grammar``, the object a serving
  engine's structured-output backend calls (vLLM's and SGLang's method names).
* ``kbnf_gpu.integrations.spec`` / ``.cache``: what a request asks for, and the bounded
  cache of compiled grammars that the three share.

Importing ``kbnf_gpu`` (or this package) never imports vllm or transformers.
"""
