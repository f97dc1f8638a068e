"""The designer's memory over a real registry (SQLite and PostgreSQL)."""

from __future__ import annotations

import dataclasses

import pytest

from spade_envs import describe, seed_class
from spade_envs.error import SpadeError
from spade_envs.memory import HashingEmbedder, Memory, MemoryConfig
from spade_envs.memory.summary import embedding_text
from spade_envs.registry import Registry
from spade_envs.seeds import seed_names, seed_source

NAMES = [
    "NumberGuess",
    "MazeExplore",
    "SupplierLookup",
    "FlightBooking",
    "Nim",
    "TicTacToe",
    "CodeTrace",
    "LightsOut",
    "OhmsLawCircuit",
    "BankTransfers",
]


@pytest.fixture
def registry(registry_url):
    registry = Registry(registry_url)
    for name in NAMES:
        registry.register(seed_source(name), describe(seed_class(name)), status="validated")
    yield registry
    registry.close()


@pytest.fixture
def memory(registry):
    memory = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
    assert memory.sync() == len(NAMES)
    return memory


def test_sync_embeds_each_version_once_and_sees_other_writers(registry, memory):
    assert len(memory) == len(NAMES) and memory.sync() == 0
    extra = registry.register(seed_source("Mastermind"), describe(seed_class("Mastermind")))
    other = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
    assert other.sync() == 1  # another process embeds the new version...
    assert memory.search("Mastermind", k=len(NAMES) + 1)  # ...and this one picks it up
    assert len(memory) == len(NAMES) + 1
    assert extra.key in {h.record.key for h in memory.search("code breaking pegs", k=20)}


def test_similar_finds_the_environment_a_text_describes(memory):
    top = memory.similar("book a flight: search flights, then book the cheapest seat", k=3)
    assert top[0].record.name == "FlightBooking"
    assert top[0].score >= top[1].score >= top[2].score
    games = memory.similar("heaps of stones, take the last stone", k=2, skill="math")
    assert games[0].record.name == "Nim" and all(h.record.skill == "math" for h in games)
    with pytest.raises(SpadeError, match="k must be at least 1"):
        memory.similar("x", k=0)


def test_novelty_catches_a_renamed_copy_but_not_a_new_idea(memory):
    copy = seed_source("MazeExplore").replace("MazeExplore", "LabyrinthWalk")
    near = memory.novelty(copy)
    assert near.nearest.record.name == "MazeExplore" and near.score < 0.1
    fresh = memory.novelty(seed_source("CounterfeitCoin"))
    assert fresh.score > near.score + 0.2


def test_statuses_filter_and_rejected_code_never_counts_as_known(registry, memory):
    registry.set_status("spade/Nim-v1", "rejected")
    assert "Nim" not in [h.record.name for h in memory.similar("stones heaps", k=10)]
    assert memory.novelty(seed_source("Nim")).nearest.record.name != "Nim"
    assert "Nim" in [h.record.name for h in memory.search("stones heaps", k=10)]


def test_hint_gain_seeds_and_negative_examples_come_from_play_stats(registry, memory):
    def play(name, with_hint, without, win):
        registry.record_play_stats(
            f"spade/{name}-v1",
            "c",
            plays_with_hint=8,
            plays_without_hint=8,
            mean_return_with_hint=with_hint,
            mean_return_without_hint=without,
            win_rate=win,
        )

    play("NumberGuess", 0.9, 0.4, 0.4)
    play("LightsOut", 0.6, 0.5, 0.5)
    play("CodeTrace", 1.0, 1.0, 1.0)
    play("TicTacToe", 0.0, 0.0, 0.0)
    play("MazeExplore", 1.0, 0.0, 0.0)  # gain 1, but never won alone: outside the band
    play("SupplierLookup", 0.2, 0.3, 0.3)  # the hint hurts: a negative gain ranks last
    ranked = [r.name for r, _ in memory.high_hint_gain(k=5)]
    assert ranked == ["NumberGuess", "LightsOut", "SupplierLookup"]
    assert [r.name for r, _ in memory.high_hint_gain(skill="math", k=5)] == ["NumberGuess"]
    with pytest.warns(DeprecationWarning, match="use Memory.high_hint_gain"):
        assert [r.name for r, _ in memory.high_regret(k=5)] == ranked
    assert [r.name for r, _ in memory.too_easy(k=5)] == ["CodeTrace"]
    assert [r.name for r, _ in memory.too_hard(k=5)] == ["TicTacToe"]


def test_auto_index_switches_to_ivf_on_a_large_corpus(registry):
    config = MemoryConfig(index="auto", ivf_threshold=5)
    memory = Memory(registry, config, embedder=HashingEmbedder())
    memory.sync()
    assert memory.index_kind == "ivf"
    assert memory.similar("book a flight", k=1)[0].record.name == "FlightBooking"
    small = Memory(registry, dataclasses.replace(config, ivf_threshold=1000), HashingEmbedder())
    small.sync()
    assert small.index_kind == "exact"


def test_bad_config_is_refused(registry):
    with pytest.raises(SpadeError, match="index must be auto, exact or ivf"):
        Memory(registry, MemoryConfig(index="hnsw"), embedder=HashingEmbedder())


def test_embedding_text_summarises_what_tells_environments_apart():
    text = embedding_text(seed_source("SupplierLookup"))
    assert "supplier lookup" in text and "tools: list tables" in text
    assert "def " not in text and len(text) <= 2000
    assert embedding_text("not python (((") == "not python ((("
    assert all(embedding_text(seed_source(n)) for n in seed_names())
