"""Batches of similar prompt lengths: every prompt once, full batches, bounded padding."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spade_envs.llm.transformers_backend import length_chunks


def _todo(lengths):
    return [(i, [7] * n) for i, n in enumerate(lengths)]


def test_similar_lengths_share_a_batch_and_outliers_get_their_own():
    chunks = length_chunks(_todo([300, 310, 1200, 305, 1190, 295]), batch_size=32)
    assert [[i for i, _ in chunk] for chunk in chunks] == [[5, 0, 3, 1], [4, 2]]


def test_batch_size_caps_each_batch():
    chunks = length_chunks(_todo([100] * 10), batch_size=4)
    assert [len(c) for c in chunks] == [4, 4, 2]


@given(
    st.lists(st.integers(1, 2000), max_size=60),
    st.integers(1, 40),
    st.floats(0.0, 2.0),
)
def test_every_prompt_once_and_padding_within_the_slack(lengths, batch_size, slack):
    chunks = length_chunks(_todo(lengths), batch_size, padding_slack=slack)
    assert sorted(i for chunk in chunks for i, _ in chunk) == list(range(len(lengths)))
    for chunk in chunks:
        assert 1 <= len(chunk) <= batch_size
        sizes = [len(ids) for _, ids in chunk]
        padded, real = max(sizes) * len(sizes), sum(sizes)
        # A batch of one has no padding; a bigger one stays within the slack.
        assert len(chunk) == 1 or padded <= (1 + slack) * real + 1e-9
