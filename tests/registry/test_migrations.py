"""Upgrading a registry written by the first schema, in place, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from spade_envs import describe, seed_class
from spade_envs.error import SpadeError
from spade_envs.registry import SCHEMA_VERSION, Registry
from spade_envs.registry.migrations import MIGRATIONS, schema_version
from spade_envs.seeds import seed_source

DATA = Path(__file__).parent / "data"

V1_ROW = (
    "INSERT INTO environments (name, version, sha256, source, class_name, kind, skill, "
    "description, max_turns, origin, status, parents_json, model, created_at) VALUES "
    "('NumberGuess', 1, :sha, :source, 'NumberGuess', 'text', 'math', 'old row', 8, 'seed', "
    "'validated', '[]', 'm1', '2026-01-01 00:00:00')"
)


def make_v1(url: str) -> None:
    """A database exactly as schema version 1 created it, with one environment."""
    dialect = "postgresql" if url.startswith("postgresql") else "sqlite"
    script = (DATA / f"schema_v1_{dialect}.sql").read_text()
    engine = create_engine(url)
    with engine.begin() as conn:
        for statement in script.split(";\n"):
            lines = [ln for ln in statement.splitlines() if not ln.startswith("--")]
            if "".join(lines).strip():
                conn.execute(text("\n".join(lines)))
        conn.execute(text(V1_ROW), {"sha": "a" * 64, "source": seed_source("NumberGuess")})
    engine.dispose()


def test_first_schema_is_upgraded_in_place_keeping_every_row(registry_url):
    make_v1(registry_url)
    registry = Registry(registry_url)
    assert schema_version(registry.engine) == SCHEMA_VERSION == MIGRATIONS[-1].version
    old = registry.get("spade/NumberGuess-v1")
    assert (old.description, old.model, old.max_turns) == ("old row", "m1", 8)
    assert (old.hint, old.prompt_sha256, old.extra) == ("", "", {})
    # The new columns work for old and new rows alike.
    assert registry.set_hint(old.id, "guess the middle").hint == "guess the middle"
    new = registry.register(
        seed_source("NumberGuess"),  # the seed itself (its name is reserved for its code)
        describe(seed_class("NumberGuess")),
        prompt_sha256="b" * 64,
        extra={"note": 1},
    )
    assert new.id == "spade/NumberGuess-v2" and new.extra == {"note": 1}
    registry.close()
    Registry(registry_url).close()  # opening an up-to-date database changes nothing


def test_sqlite_upgrade_keeps_a_backup_of_the_old_file(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    make_v1(url)
    Registry(url).close()
    backup = tmp_path / "old.db.v1.bak"
    with sqlite3.connect(backup) as conn:
        assert conn.execute("SELECT version FROM spade_schema").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM environments").fetchone() == (1,)


def test_a_failed_upgrade_leaves_the_old_version_intact(tmp_path, monkeypatch):
    from spade_envs.registry import migrations

    url = f"sqlite:///{tmp_path / 'old.db'}"
    make_v1(url)
    broken = migrations.Migration(
        2, "breaks halfway", (MIGRATIONS[0].statements[0], "ALTER TABLE nowhere ADD COLUMN x INT")
    )
    monkeypatch.setattr(migrations, "MIGRATIONS", (broken,))
    with pytest.raises(SpadeError, match="nowhere"):
        Registry(url)
    with sqlite3.connect(tmp_path / "old.db") as conn:
        assert conn.execute("SELECT version FROM spade_schema").fetchone() == (1,)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(environments)")]
    assert "prompt_sha256" not in columns  # the first statement was rolled back too
    monkeypatch.undo()
    assert Registry(url).get("spade/NumberGuess-v1").description == "old row"


def test_a_foreign_database_is_refused(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE environments (x INT)")
    with pytest.raises(SpadeError, match="not a spade-envs registry"):
        Registry(f"sqlite:///{path}")
