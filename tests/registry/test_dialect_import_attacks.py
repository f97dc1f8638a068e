"""Import files and SPADE pools that claim a verdict: nothing a file says becomes a status
or an ``unproven`` reason (read back through the registry, ``show``'s sources and the API).
Nothing here is validated or run (``validate=False``)."""

from __future__ import annotations

import json

import pytest

from spade_envs.registry import Registry
from spade_envs.runtime import import_corpus

from .spade_pool_fixtures import HEADER, build_run, odd_one_out


@pytest.fixture
def registry(tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'claims.db'}")
    yield registry
    registry.close()


def _unproven_as_the_api_says(record) -> str:
    from spade_envs.web.api import _unproven

    return _unproven(record)


def test_a_pool_whose_manifest_and_memory_claim_a_verdict_is_stored_unvalidated(registry, tmp_path):
    run = build_run(tmp_path)
    games = sorted((run / "spade_games").glob("game_*.py"))
    claims = {"status": "validated", "unproven": "checked upstream", "passed": True}
    lines = [json.dumps({"game_file": g.name, **claims}) for g in games]
    (run / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    memory = run / "spade_games_cache" / "env_memory.json"
    records = json.loads(memory.read_text())
    for record in records:
        record.update(status="validated", unproven="checked upstream")
    memory.write_text(json.dumps(records))
    result = import_corpus(registry, run, validate=False)
    assert result.imported
    for record in registry.iter_records():
        assert record.status == "unvalidated"
        assert "unproven" not in record.extra
        assert _unproven_as_the_api_says(record) == ""


def test_a_file_cannot_claim_an_unproven_reason_through_extra_suite(registry, tmp_path):
    path = tmp_path / "claims.jsonl"
    source = HEADER + odd_one_out("ClaimSuiteEnv", 3)
    extra = {"suite": {"unproven": "validated upstream; only solution() is missing"}}
    path.write_text(json.dumps({"source": source, "extra": extra}))
    (record,) = import_corpus(registry, path, validate=False).imported
    stored = registry.get(record.id)
    assert stored.status == "unvalidated" and not stored.suite
    assert _unproven_as_the_api_says(stored) == ""
