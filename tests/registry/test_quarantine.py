"""Quarantined versions: the evidence record, its storage on SQLite and PostgreSQL, the
upgrade from schema version 5, the warning, and that nothing picks them to play."""

from __future__ import annotations

import dataclasses
import warnings

import pytest
from sqlalchemy import inspect, text

from spade_envs import describe, seed_class
from spade_envs.error import SpadeError, UnknownEnvironmentError
from spade_envs.registry import (
    STATUSES,
    QuarantinedEnvWarning,
    QuarantineEvidence,
    Registry,
    warn_quarantined,
)
from spade_envs.registry.migrations import SCHEMA_VERSION, schema_version
from spade_envs.registry.records import EVIDENCE_TEXT_CHARS
from spade_envs.seeds import seed_source

NIM = "spade/Nim-v1"


def evidence(env_id: str = NIM, **changes) -> QuarantineEvidence:
    values = dict(
        env_id=env_id,
        seed=7,
        step=2,
        field="reward",
        played="1.0",
        replayed="0.0",
        detail="action 'take 2'",
        at="2026-03-01T12:00:00+00:00",
    )
    return QuarantineEvidence(**{**values, **changes})


def seeded(url: str, *names: str) -> Registry:
    registry = Registry(url)
    for name in names:
        registry.register(seed_source(name), describe(seed_class(name)), status="validated")
    return registry


# ----- the record ---------------------------------------------------------------------------
def test_evidence_round_trips_through_a_dict():
    original = evidence(seed=2**63 - 1, step=0, field="observation")
    assert QuarantineEvidence.from_dict(original.to_dict()) == original
    assert original.to_dict()["seed"] == 2**63 - 1


@pytest.mark.parametrize(
    "data",
    [
        None,
        "seed 7",
        [1, 2],
        {},
        {"env_id": NIM, "seed": "7", "step": 2, "field": "reward"},  # a string seed
        {"env_id": NIM, "seed": 7, "step": -1, "field": "reward"},
        {"env_id": NIM, "seed": True, "step": 1, "field": "reward"},
        {"env_id": NIM, "seed": 7, "step": 1, "field": "<script>"},
        {"env_id": NIM, "seed": 2**64, "step": 1, "field": "reward"},
        {"env_id": 3, "seed": 7, "step": 1, "field": "reward"},
        {"seed": 7, "step": 1, "field": "reward"},
    ],
)
def test_malformed_stored_evidence_reads_as_none_never_an_exception(data):
    assert QuarantineEvidence.from_dict(data) is None


def test_from_dict_fills_missing_texts_and_stringifies_odd_ones():
    found = QuarantineEvidence.from_dict(
        {"env_id": NIM, "seed": 1, "step": 3, "field": "error", "played": {"a": 1}}
    )
    assert found == QuarantineEvidence(NIM, 1, 3, "error", "{'a': 1}", "", "", "")


def test_bad_evidence_is_refused_with_what_to_fix():
    with pytest.raises(SpadeError, match=r"field must be one of reward, terminated, .* got 'rew'"):
        evidence(field="rew")
    with pytest.raises(SpadeError, match=r"step must be an integer in \[0, 2\*\*63\), got '-1'"):
        evidence(step=-1)
    with pytest.raises(SpadeError, match=r"seed must be an integer .* got '1.5'"):
        evidence(seed=1.5)


def test_summary_is_one_shortened_line():
    hostile = evidence(played="a\nb\x1b[2J" + "x" * 500, step=0)
    line = hostile.summary(width=30)
    assert "\n" not in line and "\x1b" not in line
    assert line.startswith("seed 7, the reset: reward played 'a b[2J") and "…" in line
    assert len(line) < 120


# ----- storage ------------------------------------------------------------------------------
def test_quarantine_stores_the_evidence_and_the_status(registry_url):
    registry = seeded(registry_url, "Nim", "NumberGuess")
    assert "quarantined" in STATUSES
    stored = evidence(seed=2**40, played="<b>" + "p" * (EVIDENCE_TEXT_CHARS + 50), at="")
    record = registry.quarantine(NIM, stored)
    assert record.status == "quarantined" and registry.get(NIM).status == "quarantined"
    found = registry.quarantine_evidence(NIM)
    assert found is not None
    assert (found.env_id, found.seed, found.step, found.field) == (NIM, 2**40, 2, "reward")
    assert found.played == stored.played[:EVIDENCE_TEXT_CHARS]  # capped, not refused
    assert (found.replayed, found.detail) == ("0.0", "action 'take 2'")
    assert found.at.endswith("+00:00") and found.at[:2] == "20"  # recorded now, in UTC
    assert registry.quarantine_evidence("spade/NumberGuess-v1") is None
    # A second audit replaces what is shown; both stay in the history.
    registry.quarantine(NIM, evidence(field="terminated", played="False", replayed="True"))
    assert registry.quarantine_evidence(NIM).field == "terminated"
    assert [e.field for e, cleared in registry.quarantine_history(NIM)] == [
        "reward",
        "terminated",
    ]
    registry.close()
    reopened = Registry(registry_url)  # stored, not cached
    assert reopened.quarantine_evidence(NIM).field == "terminated"
    reopened.close()


def test_clearing_keeps_the_evidence_as_history(registry_url):
    registry = seeded(registry_url, "Nim")
    registry.quarantine(NIM, evidence())
    record = registry.clear_quarantine(NIM)
    assert record.status == "validated" and registry.quarantine_evidence(NIM) is None
    [(old, cleared)] = registry.quarantine_history(NIM)
    assert old == evidence() and cleared is not None
    with pytest.raises(SpadeError, match=r"spade/Nim-v1 is not quarantined .*'validated'"):
        registry.clear_quarantine(NIM)
    registry.close()


def test_a_seed_version_can_be_quarantined_and_mistakes_are_refused(tmp_path):
    registry = seeded(f"sqlite:///{tmp_path / 'r.db'}", "Nim")
    assert registry.get(NIM).origin == "seed"
    assert registry.quarantine(NIM, evidence()).status == "quarantined"
    with pytest.raises(SpadeError, match=r"evidence is about 'spade/Nim-v2', not 'spade/Nim-v1'"):
        registry.quarantine(NIM, evidence("spade/Nim-v2"))
    with pytest.raises(SpadeError, match="needs a QuarantineEvidence, got dict"):
        registry.quarantine(NIM, evidence().to_dict())
    with pytest.raises(UnknownEnvironmentError, match="Did you mean 'spade/Nim-v1'"):
        registry.quarantine("spade/Nim-v9", evidence("spade/Nim-v9"))
    with pytest.raises(SpadeError, match=r"call Registry\.quarantine\('spade/Nim-v1'"):
        registry.set_status(NIM, "quarantined")
    source = seed_source("Nim").replace("class Nim(", "class NimTwo(")
    meta = dataclasses.replace(describe(seed_class("Nim")), name="NimTwo")
    with pytest.raises(SpadeError, match="cannot be registered quarantined"):
        registry.register(source, meta, status="quarantined")
    registry.close()


def test_a_hand_written_bad_row_shows_as_no_evidence(tmp_path):
    registry = seeded(f"sqlite:///{tmp_path / 'r.db'}", "Nim")
    registry.quarantine(NIM, evidence())
    with registry.engine.begin() as conn:
        conn.execute(text("UPDATE quarantines SET field = 'bogus'"))
    assert registry.get(NIM).status == "quarantined"
    assert registry.quarantine_evidence(NIM) is None
    assert registry.quarantine_history(NIM) == []
    registry.close()


def test_a_schema_5_registry_is_upgraded_and_keeps_its_rows(registry_url):
    registry = seeded(registry_url, "Nim")
    # Version 6 only added the quarantines table: without it, this is a version 5 registry.
    with registry.engine.begin() as conn:
        conn.execute(text("DROP TABLE quarantines"))
        conn.execute(text("UPDATE spade_schema SET version = 5 WHERE id = 1"))
    registry.close()
    upgraded = Registry(registry_url)
    assert schema_version(upgraded.engine) == SCHEMA_VERSION == 6
    assert inspect(upgraded.engine).has_table("quarantines")
    assert upgraded.get(NIM).status == "validated"
    upgraded.quarantine(NIM, evidence())
    assert upgraded.quarantine_evidence(NIM) == evidence()
    upgraded.close()


# ----- the warning --------------------------------------------------------------------------
def test_warn_quarantined_gives_the_evidence_and_the_way_out():
    with pytest.warns(
        QuarantinedEnvWarning,
        match=r"spade/Nim-v1 is quarantined: a replay audit diverged .* Evidence: seed 7, step 2: "
        r"reward played '1\.0', replayed '0\.0' \(recorded 2026-03-01T12:00:00\+00:00\)\. .*"
        r"`spade-envs revalidate spade/Nim-v1`",
    ):
        warn_quarantined(NIM, evidence())
    with pytest.warns(QuarantinedEnvWarning, match="No readable evidence is stored"):
        warn_quarantined(NIM, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_quarantined(NIM, evidence(played="x\n" * 10_000))
    [message] = [str(w.message) for w in caught]
    assert "\n" not in message and len(message) < 800


# ----- nothing picks them -------------------------------------------------------------------
def test_quarantined_versions_leave_what_picks_environments(tmp_path):
    from spade_envs.memory import Memory, MemoryConfig

    registry = seeded(f"sqlite:///{tmp_path / 'r.db'}", "Nim", "NumberGuess")
    for env in (NIM, "spade/NumberGuess-v1"):
        registry.record_play_stats(
            env,
            "ckpt",
            plays_with_hint=4,
            plays_without_hint=4,
            mean_return_with_hint=0.8,
            mean_return_without_hint=0.2,
            win_rate=0.5,
        )
    memory = Memory(registry, MemoryConfig(embedder="hashing", index="exact"))
    memory.sync()
    nim_text = registry.get(NIM).source
    assert NIM in [h.record.id for h in memory.similar(nim_text, k=2)]
    assert memory.novelty(nim_text + "\n# near copy\n").nearest.record.id == NIM
    registry.quarantine(NIM, evidence())
    # The trainer's pool, the designer's parents and references: status == validated.
    assert [r.id for r in registry.list(status="validated")] == ["spade/NumberGuess-v1"]
    # The designer's memory: played examples, references and the novelty check.
    assert [r.id for r, _ in registry.played()] == ["spade/NumberGuess-v1"]
    assert [r.id for r, _ in memory.high_hint_gain(k=5)] == ["spade/NumberGuess-v1"]
    assert NIM not in [h.record.id for h in memory.similar(nim_text, k=2)]
    near = memory.novelty(nim_text + "\n# near copy\n").nearest
    assert near is None or near.record.id != NIM
    # Still listed (people must see it), and still searchable by meaning.
    assert NIM in [r.id for r in registry.list()]
    assert NIM in [h.record.id for h in memory.search(nim_text, k=2)]
    registry.close()


def test_a_quarantined_fixed_pool_environment_is_not_trained_on(tmp_path):
    from spade_envs.trainer.config_io import load_config
    from spade_envs.trainer.setup import _frozen_pool

    registry = seeded(f"sqlite:///{tmp_path / 'r.db'}", "Nim", "NumberGuess")
    config = load_config("cpu-tiny", ["agent.fixed_pool=Nim,NumberGuess", "eval.envs=Mastermind"])
    assert sorted(_frozen_pool(config, registry)) == [NIM, "spade/NumberGuess-v1"]
    registry.quarantine(NIM, evidence())
    assert _frozen_pool(config, registry) == ["spade/NumberGuess-v1"]
    only = load_config("cpu-tiny", ["agent.fixed_pool=Nim", "eval.envs=Mastermind"])
    with pytest.raises(
        SpadeError, match=r"Every fixed-pool environment is quarantined \(spade/Nim"
    ):
        _frozen_pool(only, registry)
    registry.close()
