"""The transformers backend's own sampler: nucleus filter, per-row seeds, raw log-probs."""

from __future__ import annotations

import importlib
import math
import os

import pytest

if os.environ.get("CI"):  # in CI a missing dependency fails
    torch = importlib.import_module("torch")
else:
    torch = pytest.importorskip("torch")

from spade_envs.llm.sampling import SeededSampler, StopStrings, nucleus


def test_nucleus_keeps_the_smallest_set_reaching_top_p():
    probs = torch.tensor([[0.05, 0.5, 0.15, 0.3]])

    def kept(top_p: float) -> list[int]:
        filtered = nucleus(probs, top_p)[0]
        assert torch.allclose(filtered[filtered > 0], probs[0][filtered > 0])
        return torch.nonzero(filtered).flatten().tolist()

    assert kept(0.7) == [1, 3]
    assert kept(0.5) == [1]
    assert kept(0.1) == [1]  # the most likely token always stays
    assert kept(0.9) == [1, 2, 3]
    assert kept(0.96) == [0, 1, 2, 3]


def _logits(rows: int = 3, vocab: int = 50, seed: int = 0):
    return torch.randn(rows, vocab, generator=torch.Generator().manual_seed(seed)) * 3


def _draw(sampler: SeededSampler, logits, steps: int = 20) -> list[list[int]]:
    picks = []
    for _ in range(steps):
        out = sampler(None, logits)
        picks.append(out.argmax(-1).tolist())
        # The returned scores are one-hot: 0 at the chosen token, -inf elsewhere.
        assert torch.isinf(out).sum().item() == out.numel() - out.shape[0]
    return [list(col) for col in zip(*picks)]


def test_same_seeds_same_tokens_and_rows_do_not_depend_on_each_other():
    logits = _logits()
    first = _draw(SeededSampler(1.0, 1.0, [5, 6, 7]), logits)
    again = _draw(SeededSampler(1.0, 1.0, [5, 6, 7]), logits)
    assert first == again
    # Row 1 alone, with its seed, draws what it drew inside the batch.
    alone = _draw(SeededSampler(1.0, 1.0, [6]), logits[1:2])
    assert alone[0] == first[1]
    other = _draw(SeededSampler(1.0, 1.0, [50, 51, 52]), logits)
    assert other != first


def test_greedy_takes_the_argmax():
    logits = _logits()
    picks = _draw(SeededSampler(0.0, 1.0, [0, 0, 0]), logits, steps=2)
    assert [row[0] for row in picks] == logits.argmax(-1).tolist()


def test_logprobs_are_raw_whatever_the_temperature():
    logits = _logits(rows=2)
    greedy = SeededSampler(0.0, 1.0, [1, 2])
    greedy(None, logits)
    expected = torch.log_softmax(logits, -1).max(-1).values
    assert torch.allclose(greedy.logprobs[0], expected)
    hot = SeededSampler(5.0, 0.5, [1, 2])
    out = hot(None, logits)
    chosen = out.argmax(-1)
    raw = torch.log_softmax(logits, -1).gather(-1, chosen[:, None]).squeeze(-1)
    assert torch.allclose(hot.logprobs[0], raw)
    assert all(x <= 0 and math.isfinite(x) for x in hot.logprobs[0].tolist())


def test_top_p_never_picks_outside_thenucleus():
    logits = torch.tensor([[4.0, 3.0, 0.0, -1.0, -2.0]])
    sampler = SeededSampler(1.0, 0.6, [3])
    seen = {sampler(None, logits).argmax(-1).item() for _ in range(200)}
    assert seen <= {0, 1} and 0 in seen


class _CharTokenizer:
    def batch_decode(self, rows, skip_special_tokens=True):
        return ["".join(chr(t) for t in row if t) for row in rows]


def test_stop_strings_end_only_the_rows_that_contain_them():
    stop = StopStrings(_CharTokenizer(), ("END",), prompt_width=2)
    rows = [
        [ord("E"), ord("N")] + [ord(c) for c in "abcEND"],
        [ord("x"), ord("y")] + [ord(c) for c in "abcdef"],
    ]
    done = stop(torch.tensor(rows), None)
    # The prompt's "EN" does not count, the reply's "END" does.
    assert done.tolist() == [True, False]
    only_prompt = [[ord("E"), ord("N")] + [ord("D")] + [ord("a")] * 5]
    assert stop(torch.tensor(only_prompt), None).tolist() == [False]
