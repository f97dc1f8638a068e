"""Token selection for the transformers backend, done outside transformers.

``SeededSampler`` is a logits processor that draws each row's next token with that
row's own ``torch.Generator`` and returns a one-hot score, so ``generate``'s greedy step
takes exactly that token. Transformers' own sampling draws every row from one global
generator, which would make a reply depend on what else is in its batch. The sampler
also records the log-probability of each chosen token under the raw distribution.
With ``masks`` (a :class:`~spade_envs.llm.structured.RowMasks`, for requests with a JSON
Schema) it draws only among the tokens each row's grammar allows; the recorded
log-probabilities stay those of the raw, unmasked distribution. :func:`length_chunks`
groups prompts of similar length into batches.

torch is imported inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .base import truncate_at_stop

__all__ = ["SeededSampler", "StopStrings", "length_chunks", "nucleus"]


class SeededSampler:
    """Chooses each row's next token with its own seeded generator.

    Called by ``generate`` with the raw next-token logits (it is the only processor);
    returns scores that are ``0`` at the chosen token and ``-inf`` elsewhere.
    """

    def __init__(
        self, temperature: float, top_p: float, seeds: list[int], masks: Any = None
    ) -> None:
        self.temperature = temperature
        self.top_p = top_p
        self.seeds = seeds
        self.masks = masks
        self.generators: list[Any] | None = None
        self.logprobs: list[Any] = []
        self._previous: list[int] | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        raw = scores.float()
        logp = torch.log_softmax(raw, dim=-1)
        if self.masks is not None:
            allowed = self.masks.allowed(self._previous, raw.shape[-1]).to(raw.device)
            raw = raw.masked_fill(~allowed, -math.inf)
        if self.temperature == 0:
            chosen = raw.argmax(dim=-1)
        else:
            if self.generators is None:
                self.generators = [
                    torch.Generator(device=raw.device).manual_seed(s) for s in self.seeds
                ]
            probs = torch.softmax(raw / self.temperature, dim=-1)
            if self.top_p < 1.0:
                probs = nucleus(probs, self.top_p)
            chosen = torch.stack(
                [
                    torch.multinomial(probs[row], 1, generator=self.generators[row])[0]
                    for row in range(probs.shape[0])
                ]
            )
        self.logprobs.append(logp.gather(-1, chosen[:, None]).squeeze(-1))
        self._previous = chosen.tolist()
        out = torch.full_like(scores, -math.inf)
        out.scatter_(-1, chosen[:, None], 0.0)
        return out


def nucleus(probs: Any, top_p: float) -> Any:
    """Zero every token outside the smallest set whose probability reaches ``top_p``."""
    import torch

    sorted_probs, order = probs.sort(dim=-1, descending=True)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs  # mass strictly ahead of each token
    sorted_probs = sorted_probs.masked_fill(before >= top_p, 0.0)
    return torch.zeros_like(probs).scatter(-1, order, sorted_probs)


class StopStrings:
    """Ends a row once its recent text contains a stop string."""

    def __init__(self, tokenizer: Any, stop: Sequence[str], prompt_width: int) -> None:
        self.tokenizer = tokenizer
        self.stop = tuple(stop)
        self.prompt_width = prompt_width
        # A token decodes to at least one character, so this many recent tokens always
        # cover a stop string that the newest token completed.
        self.window = max(len(s) for s in self.stop) + 4

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        tail = input_ids[:, self.prompt_width :][:, -self.window :]
        texts = self.tokenizer.batch_decode(tail.tolist(), skip_special_tokens=True)
        done = [truncate_at_stop(t, self.stop)[1] for t in texts]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def length_chunks(
    todo: Sequence[tuple[int, list[int]]], batch_size: int, *, padding_slack: float = 0.25
) -> list[list[tuple[int, list[int]]]]:
    """Split prompts into batches of similar length.

    A batch is left-padded to its longest prompt, and on a CPU the prefill of those
    padded tokens costs as much as real ones: 32 plays mixing 300-token text prompts with
    1,200-token tool prompts spent most of each turn on padding. Prompts are sorted by
    length and a batch is closed when it is full or when padding would exceed
    ``padding_slack`` of its real tokens. Sampling is seeded per item, so how items are
    grouped does not change what each one generates.

    Args:
        todo: ``(index, prompt ids)`` pairs.
        batch_size: The most prompts in one batch.
        padding_slack: Padding allowed, as a fraction of the batch's real tokens.

    Returns:
        The batches, shortest prompts first.
    """
    chunks: list[list[tuple[int, list[int]]]] = []
    current: list[tuple[int, list[int]]] = []
    real = 0
    for item in sorted(todo, key=lambda pair: len(pair[1])):
        length = len(item[1])
        padded = length * (len(current) + 1)  # sorted: the new item is the longest
        if current and (
            len(current) >= batch_size or padded > (1 + padding_slack) * (real + length)
        ):
            chunks.append(current)
            current, real = [], 0
        current.append(item)
        real += length
    if current:
        chunks.append(current)
    return chunks
