"""Seeded sampling, truncation properties, and recording documents in the registry."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.corpus import CorpusError, count_words, open_corpus, record, truncate_words
from spade_envs.corpus.document import truncation_marker

SIZE = 40


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("sampling") / "docs.jsonl"
    lines = [json.dumps({"text": f"document {i} " + "word " * (20 + 7 * i)}) for i in range(SIZE)]
    path.write_text("\n".join(lines) + "\n")
    return open_corpus(path, max_words=100)


seeds = st.integers(min_value=0, max_value=2**63)


@given(n=st.integers(min_value=0, max_value=3 * SIZE), seed=seeds)
def test_same_seed_same_documents(corpus, n, seed):
    first = corpus.sample(n, seed=seed)
    assert len(first) == n
    assert first == corpus.sample(n, seed=seed)
    assert first == corpus.sample(n, seed=random.Random(seed))


@given(n=st.integers(min_value=1, max_value=SIZE), seed=seeds)
def test_without_replacement_when_n_fits(corpus, n, seed):
    ids = [d.doc_id for d in corpus.sample(n, seed=seed)]
    assert len(set(ids)) == n


@given(n=st.integers(min_value=SIZE + 1, max_value=4 * SIZE), seed=seeds)
def test_with_replacement_when_n_exceeds(corpus, n, seed):
    ids = [d.doc_id for d in corpus.sample(n, seed=seed)]
    assert len(ids) == n and set(ids) <= set(corpus.ids())
    assert len(set(ids)) < n  # pigeonhole: repeats are certain


@given(seed=seeds)
def test_sampler_streams_are_reproducible(corpus, seed):
    a, b = corpus.sampler(seed), corpus.sampler(seed)
    assert [next(a).doc_id for _ in range(30)] == [next(b).doc_id for _ in range(30)]


@given(seed=seeds)
def test_shuffled_sampler_covers_each_pass(corpus, seed):
    stream = corpus.sampler(seed, shuffle=True)
    for _ in range(2):
        assert {next(stream).doc_id for _ in range(SIZE)} == set(corpus.ids())


def test_sampling_is_uniform(corpus):
    """Counts of 20,000 draws over 40 documents stay within 5 standard deviations."""
    draws = 20_000
    expected = draws / SIZE
    stream = corpus.sampler(seed=123)
    counts = Counter(next(stream).doc_id for _ in range(draws))
    assert len(counts) == SIZE
    spread = (expected * (1 - 1 / SIZE)) ** 0.5
    assert all(abs(c - expected) < 5 * spread for c in counts.values()), counts
    # One-document samples over many seeds: chi-square under its 0.999 quantile
    # (73.4 for 39 degrees of freedom).
    seeds_used = 6_000
    firsts = Counter(corpus.sample(1, seed=s)[0].doc_id for s in range(seeds_used))
    chi2 = sum((firsts[i] - seeds_used / SIZE) ** 2 / (seeds_used / SIZE) for i in corpus.ids())
    assert chi2 < 73.4


def test_sample_errors(corpus, tmp_path):
    with pytest.raises(CorpusError, match="n >= 0"):
        corpus.sample(-1, seed=0)
    with pytest.raises(CorpusError, match="seed must be an int"):
        corpus.sample(1, seed="zero")  # type: ignore[arg-type]
    path = tmp_path / "short.jsonl"
    path.write_text(json.dumps({"text": "only three words"}) + "\n")
    empty = open_corpus(path)
    assert len(empty) == 0 and empty.sample(0, seed=1) == []
    with pytest.raises(CorpusError, match="no documents to sample.*1 too short.*Lower min_words"):
        empty.sample(1, seed=1)
    with pytest.raises(CorpusError, match="no documents to sample"):
        next(empty.sampler(1))
    with pytest.raises(IndexError):
        corpus[SIZE]
    assert corpus[-1].doc_id == f"docs#{SIZE - 1}"


def test_unknown_ids_suggest(corpus):
    with pytest.raises(CorpusError, match="Did you mean 'docs'"):
        corpus.get("doc#1")
    with pytest.raises(CorpusError, match="for example 'docs#0'"):
        corpus.get("docs#999")


text_with_space = st.text(
    alphabet=st.sampled_from(list("ab \n\t\u00a0\u2003\r\x0bé")), max_size=300
)


@given(text=text_with_space, max_words=st.integers(min_value=1, max_value=40))
def test_truncation_keeps_at_most_max_words_and_marker(text, max_words):
    out, cut = truncate_words(text, max_words)
    if count_words(text) <= max_words:
        assert (out, cut) == (text, False)
        return
    assert cut
    body, marker = out.rsplit("\n", 1)
    assert marker == truncation_marker(max_words)
    assert count_words(body) == max_words
    assert text.startswith(body) and body.split() == text.split()[:max_words]


@given(seed=seeds)
def test_corpus_documents_respect_max_words(corpus, seed):
    for doc in corpus.sample(5, seed=seed):
        marker_words = count_words(truncation_marker(corpus.max_words))
        assert doc.words <= corpus.max_words + (marker_words if doc.truncated else 0)
        assert doc.truncated == (count_words(doc.text) > corpus.max_words)


def test_record_into_sqlite_registry(corpus, tmp_path):
    from spade_envs.registry import Registry

    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    first, second = corpus.sample(2, seed=9)
    first_id = record(registry, first)
    assert isinstance(first_id, int)
    assert record(registry, first) == first_id  # identical text is stored once
    second_id = record(registry, second)
    assert second_id != first_id
    stored = registry.document(first_id)
    assert stored.text == first.text and stored.source == first.doc_id
    # A truncated document is recorded as the designer saw it.
    long_doc = corpus.get(f"docs#{SIZE - 1}")
    assert long_doc.truncated
    assert registry.document(record(registry, long_doc)).text == long_doc.text
