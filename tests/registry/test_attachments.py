"""Validation reports, play statistics, documents, embeddings, sorting and bulk writes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from spade_envs import describe, seed_class
from spade_envs.error import SpadeError
from spade_envs.registry import Registry
from spade_envs.seeds import seed_source
from spade_envs.validation.report import CheckResult, ValidationReport


def meta(name):
    return describe(seed_class(name))


def register(registry, name, **kw):
    return registry.register(seed_source(name), meta(name), status="validated", **kw)


def test_a_validation_report_is_stored_with_the_new_version(registry_url):
    registry = Registry(registry_url)
    report = ValidationReport(
        passed=True,
        checks=[CheckResult("static", True, "", 0.01)],
        env_name="NumberGuess",
        budget="fast",
        timings={"total": 1.5},
    )
    record = register(registry, "NumberGuess", report=report)
    [stored] = registry.validations(record.id)
    assert stored.passed and stored.budget == "fast" and stored.duration_s == 1.5
    assert ValidationReport.from_dict(stored.report).checks[0].name == "static"
    registry.add_validation(record.id, dataclasses.replace(report, budget="thorough"))
    assert [v.budget for v in registry.validations(record.id)] == ["fast", "thorough"]
    registry.close()


def test_play_stats_are_upserted_and_hint_gain_is_derived_unfloored(registry_url):
    registry = Registry(registry_url)
    record = register(registry, "NumberGuess")
    common = dict(plays_with_hint=8, plays_without_hint=8, win_rate=0.25)
    first = registry.record_play_stats(
        record.id, "ckpt-1", mean_return_with_hint=0.75, mean_return_without_hint=0.25, **common
    )
    assert first.hint_gain == pytest.approx(0.5)
    registry.record_play_stats(
        record.id, "ckpt-1", mean_return_with_hint=0.25, mean_return_without_hint=0.75, **common
    )
    [stats] = registry.play_stats(record.id)
    # A hint that hurts is stored as it is: only the designer's regret reward is floored.
    assert stats.hint_gain == pytest.approx(-0.5) and stats.checkpoint == "ckpt-1"
    with pytest.warns(DeprecationWarning, match="use PlayStats.hint_gain"):
        assert stats.regret == stats.hint_gain
    with pytest.raises(SpadeError, match="win_rate must lie in"):
        registry.record_play_stats(
            record.id,
            "c",
            mean_return_with_hint=0,
            mean_return_without_hint=0,
            plays_with_hint=1,
            plays_without_hint=1,
            win_rate=1.5,
        )
    registry.close()


def test_memory_queries_rank_by_hint_gain_and_find_extremes(registry_url):
    registry = Registry(registry_url)
    rates = {
        "NumberGuess": (0.9, 0.5, 0.5),
        "Mastermind": (0.3, 0.2, 0.2),
        "Nim": (1.0, 0.95, 0.95),
        "LightsOut": (0.05, 0.0, 0.0),
    }
    for name, (with_hint, without, win) in rates.items():
        record = register(registry, name)
        registry.record_play_stats(
            record.id,
            "c",
            plays_with_hint=4,
            plays_without_hint=4,
            mean_return_with_hint=with_hint,
            mean_return_without_hint=without,
            win_rate=win,
        )
    register(registry, "Chomp")  # never played
    top = registry.played(min_win_rate=0.15, max_win_rate=0.85)
    assert [r.name for r, _ in top] == ["NumberGuess", "Mastermind"]
    assert [r.name for r, _ in registry.played(min_win_rate=0.9)] == ["Nim"]
    too_hard = registry.played(max_win_rate=0.1, max_return_with_hint=0.1, order="-win_rate")
    assert [r.name for r, _ in too_hard] == ["LightsOut"]
    by_gain = [r.name for r in registry.list(sort="hint_gain")]
    assert by_gain[:2] == ["NumberGuess", "Mastermind"] and by_gain[-1] == "Chomp"
    # The old name of the order still works, and says what to use instead.
    with pytest.warns(DeprecationWarning, match="use sort='hint_gain'"):
        assert [r.name for r in registry.list(sort="regret")] == by_gain
    with pytest.warns(DeprecationWarning, match="use order='hint_gain'"):
        assert registry.played(order="regret") == registry.played(order="hint_gain")
    with pytest.raises(SpadeError, match="sort must be one of"):
        registry.list(sort="random")
    assert registry.counts()["skill"] == {
        s: sum(1 for n in [*rates, "Chomp"] if meta(n).skill == s)
        for s in {meta(n).skill for n in [*rates, "Chomp"]}
    }
    registry.close()


def test_documents_are_stored_once(registry_url):
    registry = Registry(registry_url)
    first = registry.add_document("The Rhine flows north.", source="wiki.jsonl#3")
    assert registry.add_document("The Rhine flows north.") == first
    assert registry.document(first).source == "wiki.jsonl#3"
    record = registry.register(seed_source("NumberGuess"), meta("NumberGuess"), document_id=first)
    assert record.document_id == first
    with pytest.raises(SpadeError, match="No grounding document with id 999"):
        registry.document(999)
    registry.close()


def test_embeddings_are_replaced_and_read_incrementally(registry_url):
    registry = Registry(registry_url)
    a, b = register(registry, "NumberGuess"), register(registry, "Nim")
    assert [r.id for r in registry.without_embedding("m")] == [a.id, b.id]
    vec = np.arange(4, dtype=np.float32)
    registry.put_embeddings("m", [(a.key, vec.tobytes(), 4, "x")])
    assert [r.id for r in registry.without_embedding("m")] == [b.id]
    registry.put_embeddings(
        "m", [(a.key, (vec * 2).tobytes(), 4, "y"), (b.key, vec.tobytes(), 4, "z")]
    )
    rows = registry.embeddings("m")
    assert [(key, digest) for _, key, _, digest in rows] == [(a.key, "y"), (b.key, "z")]
    assert np.frombuffer(rows[0][2], dtype=np.float32).tolist() == [0, 2, 4, 6]
    assert registry.embeddings("m", after=rows[0][0])[0][1] == b.key
    assert registry.by_keys([b.key, 10**9]) == {b.key: registry.get(b.id)}
    registry.close()


def test_register_many_is_one_transaction_in_order(registry_url):
    registry = Registry(registry_url)
    source = seed_source("NumberGuess").replace("class NumberGuess(", "class OrbitGuess(")
    orbit = dataclasses.replace(meta("NumberGuess"), name="OrbitGuess")
    items = [(source + f"\n# {i}\n", orbit) for i in range(5)]
    items.append(items[0])  # the same code twice in one batch is one version
    records = registry.register_many(items)
    assert [r.version for r in records] == [1, 2, 3, 4, 5, 1]
    bad = dataclasses.replace(meta("Nim"), kind="nonsense")
    with pytest.raises(SpadeError, match="kind must be in"):
        registry.register_many([(seed_source("Nim"), meta("Nim")), (seed_source("Nim"), bad)])
    assert registry.count() == 5  # nothing of the bad batch was written
    registry.close()
