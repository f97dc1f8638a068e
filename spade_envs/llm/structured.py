"""Grammar-constrained decoding for the transformers backend, with llguidance.

A request with ``SamplingParams.json_schema`` is decoded under that schema: before each
token is drawn, every token that would take the reply out of the schema's language is
masked, so the reply is an instance of the schema (unless ``max_tokens`` cuts it).
:class:`SchemaGuide` compiles schemas for one tokenizer; :class:`RowMasks` follows the
rows of one batch and gives :class:`~spade_envs.llm.sampling.SeededSampler` the tokens
each row may take.

Why llguidance (measured on this project's 2-core CPU with SmolLM2-135M's 49,152-token
vocabulary, over the fillings of the 32 seed parents; ``docs/designer.md`` has the
table):

- **llguidance** (chosen): one 3 MB wheel with no dependencies (installs in about 1 s);
  compiles a filling schema in under 5 ms after a one-time ~1 s tokenizer load; computes
  a mask in 0.07-0.16 ms per token for numeric fillings and about 1 ms per token inside
  free text; implements the JSON Schema keywords the filling schemas use as JSON Schema
  means them (integer ``minimum``/``maximum``, an unanchored ``pattern`` together with
  ``maxLength``, escapes in strings): every seed's own values were accepted.
- **xgrammar**: faster masks (0.02-0.05 ms per token), but its wheel requires torch,
  transformers and, on Linux x86-64, triton (a 286 MB download no CPU uses), and it
  refused the seeds' own descriptions under a ``pattern`` (a ``\\\\`` escape).
- **outlines-core**: drops ``minimum``/``maximum`` and, beside a length, ``pattern``
  (so out-of-bounds fillings stay possible), and building the index of a free-text
  schema did not finish in 7 CPU minutes.

vLLM ships llguidance too (its ``guidance`` structured-output backend), so one library
serves both. llguidance is imported only when a constrained request arrives.

The sampler still records each token's log-probability under the model's raw,
unmasked distribution (what a learner recomputes from the same weights); the mask only
decides which token is drawn.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..error import MissingExtraError
from .base import LLMConfigError

__all__ = ["JSON_OPTIONS", "RowMasks", "SchemaGuide"]

#: How llguidance writes JSON: ``json.dumps``'s separators and no other whitespace, so a
#: reply cannot spend its tokens on blank lines and reads like the prompts' examples.
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
#: Compiled grammars kept per tokenizer (a designer run reuses a few dozen schemas).
_CACHED_GRAMMARS = 256


def _llguidance() -> Any:
    if importlib.util.find_spec("llguidance") is None:
        raise MissingExtraError(
            "Constrained decoding (SamplingParams.json_schema)", ["llguidance"], "train"
        )
    import llguidance
    import llguidance.hf

    return llguidance


class SchemaGuide:
    """Compiles JSON Schemas into grammars for one Hugging Face tokenizer.

    Args:
        tokenizer: A fast Hugging Face tokenizer (llguidance reads its Rust form).
        eos_ids: The tokens that end a reply (allowed once the JSON is complete).

    Raises:
        MissingExtraError: llguidance is not installed.
        LLMConfigError: The tokenizer is not a fast one.
    """

    def __init__(self, tokenizer: Any, eos_ids: Sequence[int]) -> None:
        llguidance = _llguidance()
        self._lib = llguidance
        try:
            self.tokenizer = llguidance.hf.from_tokenizer(tokenizer, eos_token=list(eos_ids))
        except ValueError as exc:
            raise LLMConfigError(
                f"Constrained decoding needs a fast Hugging Face tokenizer ({exc}); load the "
                "model with its tokenizer.json."
            ) from None
        self._grammars: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def grammar(self, schema: dict[str, Any]) -> str:
        """The grammar of ``schema`` (cached by its JSON text).

        Raises:
            LLMConfigError: llguidance cannot compile the schema (the message says why).
        """
        key = json.dumps(schema, sort_keys=True)
        with self._lock:
            if key in self._grammars:
                self._grammars.move_to_end(key)
                return self._grammars[key]
        matcher_class = self._lib.LLMatcher
        try:
            grammar = matcher_class.grammar_from_json_schema(schema, defaults=JSON_OPTIONS)
        except ValueError as exc:
            raise LLMConfigError(f"The JSON schema cannot be compiled: {exc}") from None
        error = matcher_class.validate_grammar(grammar, self.tokenizer)
        if error and not error.startswith("WARNING"):
            raise LLMConfigError(
                f"The JSON schema cannot be compiled: {error.strip()[:300]}. Use the JSON "
                "Schema keywords llguidance supports (type, properties, required, items, "
                "minimum/maximum, minLength/maxLength, pattern, enum, anyOf, ...)."
            )
        with self._lock:
            self._grammars[key] = grammar
            while len(self._grammars) > _CACHED_GRAMMARS:
                self._grammars.popitem(last=False)
        return grammar

    def rows(self, grammars: Sequence[str | None], eos_ids: Sequence[int]) -> RowMasks:
        """Masks for one batch: row ``i`` follows ``grammars[i]`` (None: unconstrained)."""
        matchers = [
            None if grammar is None else self._lib.LLMatcher(self.tokenizer, grammar)
            for grammar in grammars
        ]
        return RowMasks(matchers, eos_ids)


class RowMasks:
    """The allowed next tokens of each row of one batch, step by step.

    Each call to :meth:`allowed` first advances every row by the token drawn for it at
    the previous step, then returns which tokens each row may take now. A row stops
    advancing once it drew an end-of-sequence token (transformers pads it from then on).
    """

    def __init__(self, matchers: list[Any], eos_ids: Sequence[int]) -> None:
        self.matchers = matchers
        self.eos_ids = list(eos_ids)
        self.done = [m is None for m in matchers]
        self.failed = [False] * len(matchers)

    @property
    def constrained(self) -> bool:
        return any(m is not None for m in self.matchers)

    def allowed(self, previous: list[int] | None, vocab: int) -> Any:
        """A ``(rows, vocab)`` bool tensor of the tokens each row may draw now.

        Args:
            previous: The tokens drawn at the previous step (None at the first step).
            vocab: The width of the model's logits (may exceed the tokenizer's).
        """
        import numpy as np
        import torch

        rows = len(self.matchers)
        allowed = np.ones((rows, vocab), dtype=bool)
        for row, matcher in enumerate(self.matchers):
            if matcher is None:
                continue
            if previous is not None and not self.done[row]:
                token = previous[row]
                if token in self.eos_ids:
                    self.done[row] = True
                elif not matcher.consume_token(token):
                    self.failed[row] = True
            if self.done[row]:
                continue  # the row is finished; whatever it draws is padding
            if self.failed[row] or matcher.is_error():
                # Cannot happen when every draw obeys the mask; end the row rather than
                # draw from nothing (the reply then fails to parse, and is counted).
                allowed[row] = False
                allowed[row, [e for e in self.eos_ids if e < vocab]] = True
                continue
            bits = np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8)
            mask = np.unpackbits(bits, bitorder="little").astype(bool)
            width = min(vocab, mask.shape[0])
            allowed[row, :width] = mask[:width]
            allowed[row, width:] = False  # logits past the tokenizer's vocabulary
            if not allowed[row].any():
                allowed[row, [e for e in self.eos_ids if e < vocab]] = True
        return torch.from_numpy(allowed)
