"""The registry's bulk light rows (SQLite and PostgreSQL) and its one URL resolver."""

from __future__ import annotations

import dataclasses
import math
import time

import pytest

from spade_envs import describe, seed_class
from spade_envs.registry import LightRow, PlayRow, Registry, default_url, resolve_url
from spade_envs.registry.light import to_epoch
from spade_envs.seeds import seed_source

NAMES = ("NumberGuess", "Mastermind", "MazeExplore", "Nim", "LightsOut")


@pytest.fixture
def filled(registry_url):
    registry = Registry(registry_url)
    ids = {}
    for name in NAMES:
        status = "rejected" if name == "Nim" else "validated"
        ids[name] = registry.register(
            seed_source(name),
            describe(seed_class(name)),
            status=status,
            suite="" if name != "Mastermind" else "rlve",
        ).id
    child = dataclasses.replace(
        describe(seed_class("NumberGuess")), name="NumberGuessB", parents=(ids["NumberGuess"],),
        description="",
    )  # fmt: skip
    source = seed_source("NumberGuess").replace("class NumberGuess(", "class NumberGuessB(")
    ids["NumberGuessB"] = registry.register(source, child, status="candidate").id
    yield registry, ids
    registry.close()


def test_light_rows_walk_every_version_in_key_order_without_the_source(filled):
    registry, ids = filled
    before = time.time()
    first = registry.light_rows(0, 4)
    rest = registry.light_rows(first[-1].key, 100)
    rows = first + rest
    assert len(first) == 4 and len(rows) == len(NAMES) + 1 == registry.count()
    assert [r.key for r in rows] == sorted(r.key for r in rows)
    assert all(isinstance(r, LightRow) for r in rows)
    by_name = {r.name: r for r in rows}
    guess = by_name["NumberGuess"]
    record = registry.get(ids["NumberGuess"])
    assert (guess.key, guess.version, guess.kind, guess.skill, guess.origin, guess.status) == (
        record.key, 1, record.kind, record.skill, record.origin, "validated"
    )  # fmt: skip
    assert guess.description == record.description and guess.parents == ()
    assert abs(guess.created_at - record.created_at.timestamp()) < 1.0
    assert guess.created_at <= before + 1
    assert by_name["NumberGuessB"].parents == (ids["NumberGuess"],)
    assert by_name["NumberGuessB"].description == ""
    assert by_name["Mastermind"].suite == "rlve" and guess.suite == ""
    assert "source" not in LightRow._fields
    assert registry.light_rows(rows[-1].key, 10) == []


def test_statuses_counts_play_rows_and_embedding_models(filled):
    registry, ids = filled
    statuses = dict(registry.statuses())
    assert statuses[registry.get(ids["Nim"]).key] == "rejected" and len(statuses) == 6
    assert registry.status_counts() == {"validated": 4, "rejected": 1, "candidate": 1}
    empty = registry.play_signature()
    assert registry.play_rows() == []
    for checkpoint, with_hint in (("a", 0.75), ("b", 0.5)):
        registry.record_play_stats(
            ids["Mastermind"], checkpoint, plays_with_hint=4, plays_without_hint=4,
            mean_return_with_hint=with_hint, mean_return_without_hint=0.25, win_rate=0.25,
        )  # fmt: skip
    signature = registry.play_signature()
    assert signature != empty and signature[0] == 2
    rows = registry.play_rows()
    key = registry.get(ids["Mastermind"]).key
    assert rows == [
        PlayRow(key, "a", 0.5, 0.25, 0.75, 0.25),
        PlayRow(key, "b", 0.25, 0.25, 0.5, 0.25),
    ]
    registry.record_play_stats(
        ids["Mastermind"], "a", plays_with_hint=4, plays_without_hint=4,
        mean_return_with_hint=1.0, mean_return_without_hint=0.25, win_rate=0.5,
    )  # fmt: skip
    assert registry.play_signature() != signature  # a replaced row changes it too
    assert registry.play_rows()[-1].checkpoint == "a"  # the newest update comes last
    assert registry.embedding_models() == {}
    registry.put_embeddings("m1", [(key, b"\0" * 8, 2, "")])
    registry.put_embeddings("m2", [(k, b"\0" * 8, 2, "") for k in statuses])
    assert registry.embedding_models() == {"m1": 1, "m2": 6}


def test_to_epoch_reads_naive_aware_and_text_timestamps():
    import datetime as dt

    aware = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    assert to_epoch(aware) == aware.timestamp()
    assert to_epoch(aware.replace(tzinfo=None)) == aware.timestamp()  # naive means UTC
    assert to_epoch("2024-01-02 03:04:05") == aware.timestamp()
    assert math.isnan(to_epoch(None))


def test_one_resolver_turns_paths_urls_and_the_environment_into_urls(tmp_path, monkeypatch):
    from spade_envs.web.config import registry_url

    monkeypatch.delenv("SPADE_REGISTRY_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert resolve_url() == f"sqlite:///{tmp_path / 'data' / 'spade-envs' / 'registry.db'}"
    assert default_url() == resolve_url(None) == resolve_url("")
    assert resolve_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert resolve_url(tmp_path / "r.db") == f"sqlite:///{tmp_path / 'r.db'}"
    monkeypatch.chdir(tmp_path)
    assert resolve_url("rel.db") == f"sqlite:///{tmp_path / 'rel.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", "env.db")  # a path in the variable works too
    assert default_url() == f"sqlite:///{tmp_path / 'env.db'}"
    # the browser's configuration and Registry() use the same resolver
    assert registry_url("rel.db") == resolve_url("rel.db") and registry_url(None) is None
    registry = Registry("other.db")
    assert registry.url == f"sqlite:///{tmp_path / 'other.db'}"
    registry.close()
    assert Registry().url == f"sqlite:///{tmp_path / 'env.db'}"
