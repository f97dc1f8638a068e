"""Upgrading a registry written by an older schema, in place, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from spade_envs import describe, seed_class
from spade_envs.error import SpadeError
from spade_envs.registry import SCHEMA_VERSION, Registry
from spade_envs.registry.migrations import MIGRATIONS, schema_version
from spade_envs.registry.tables import PlayStatsRow
from spade_envs.seeds import seed_source

DATA = Path(__file__).parent / "data"

V1_ROW = (
    "INSERT INTO environments (name, version, sha256, source, class_name, kind, skill, "
    "description, max_turns, origin, status, parents_json, model, created_at) VALUES "
    "('NumberGuess', 1, :sha, :source, 'NumberGuess', 'text', 'math', 'old row', 8, 'seed', "
    "'validated', '[]', 'm1', '2026-01-01 00:00:00')"
)

#: Schema version 3 added columns without server defaults (a fresh database's tables).
V3_ROW = V1_ROW.replace(
    "model, created_at)", "model, created_at, prompt_sha256, hint, extra_json, suite)"
).replace("'2026-01-01 00:00:00')", "'2026-01-01 00:00:00', '', '', '{}', '')")

#: Play statistics as schema versions 1-3 stored them: ``regret`` was the unfloored hint
#: gain (with minus without), so a hint that hurt was stored negative.
OLD_STATS = (
    "INSERT INTO play_stats (environment_id, checkpoint, plays_with_hint, plays_without_hint, "
    "mean_return_with_hint, mean_return_without_hint, win_rate, regret, updated_at) VALUES "
    "(1, :checkpoint, 4, 4, :with_hint, :without, 0.5, :regret, :updated)"
)


def make_old(url: str, version: int = 1, stats: tuple[tuple[str, float, float], ...] = ()) -> None:
    """A database exactly as schema ``version`` created it, with one environment and
    ``stats`` as (checkpoint, mean with hint, mean without) play statistics of it."""
    dialect = "postgresql" if url.startswith("postgresql") else "sqlite"
    script = (DATA / f"schema_v{version}_{dialect}.sql").read_text()
    engine = create_engine(url)
    with engine.begin() as conn:
        for statement in script.split(";\n"):
            lines = [ln for ln in statement.splitlines() if not ln.startswith("--")]
            if "".join(lines).strip():
                conn.execute(text("\n".join(lines)))
        row = V1_ROW if version < 3 else V3_ROW
        conn.execute(text(row), {"sha": "a" * 64, "source": seed_source("NumberGuess")})
        for i, (checkpoint, with_hint, without) in enumerate(stats):
            values = {"checkpoint": checkpoint, "with_hint": with_hint, "without": without}
            values.update(regret=with_hint - without, updated=f"2026-01-0{i + 2} 00:00:00")
            conn.execute(text(OLD_STATS), values)
    engine.dispose()


def make_v1(url: str) -> None:
    """A database exactly as schema version 1 created it, with one environment."""
    make_old(url, 1)


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


@pytest.mark.parametrize("version", [1, 3])
def test_regret_column_becomes_hint_gain_keeping_its_values(registry_url, version):
    stats = (("ckpt-hurt", 0.25, 0.75), ("ckpt-helped", 0.875, 0.25))
    make_old(registry_url, version, stats)
    registry = Registry(registry_url)
    assert schema_version(registry.engine) == SCHEMA_VERSION
    by_checkpoint = {s.checkpoint: s for s in registry.play_stats("spade/NumberGuess-v1")}
    # Values come through unchanged: a negative (hint hurt) gain stays negative.
    assert by_checkpoint["ckpt-hurt"].hint_gain == pytest.approx(-0.5)
    assert by_checkpoint["ckpt-helped"].hint_gain == pytest.approx(0.625)
    assert by_checkpoint["ckpt-helped"].mean_return_with_hint == pytest.approx(0.875)
    # The renamed column and its index work: ranking, the memory's query, new writes.
    assert [r.id for r in registry.list(sort="hint_gain")] == ["spade/NumberGuess-v1"]
    assert [s.checkpoint for _, s in registry.played(limit=2)] == ["ckpt-helped", "ckpt-hurt"]
    updated = registry.record_play_stats(
        "spade/NumberGuess-v1",
        "ckpt-hurt",
        plays_with_hint=2,
        plays_without_hint=2,
        mean_return_with_hint=1.0,
        mean_return_without_hint=0.0,
        win_rate=0.0,
    )
    assert updated.hint_gain == 1.0 and len(registry.play_stats("spade/NumberGuess-v1")) == 2
    # An upgraded database has the columns and index names a fresh one gets.
    found = inspect(registry.engine)
    columns = {c["name"] for c in found.get_columns("play_stats")}
    assert columns == {c.name for c in PlayStatsRow.__table__.columns}
    assert "regret" not in columns
    # (PostgreSQL also lists the unique constraint's own index; it is not ours to name.)
    indexes = {
        i["name"] for i in found.get_indexes("play_stats") if not i.get("duplicates_constraint")
    }
    assert indexes == {i.name for i in PlayStatsRow.__table__.indexes}
    registry.close()
    Registry(registry_url).close()  # opening it again changes nothing


def test_an_sqlite_library_too_old_to_rename_a_column_is_refused_before_any_change(
    tmp_path, monkeypatch
):
    import sqlite3.dbapi2  # the module SQLAlchemy's SQLite dialect runs on

    url = f"sqlite:///{tmp_path / 'old.db'}"
    make_old(url, 3, (("ckpt", 0.5, 0.25),))
    monkeypatch.setattr(sqlite3.dbapi2, "sqlite_version_info", (3, 24, 0))
    with pytest.raises(SpadeError, match=r"needs SQLite 3\.25\.0 or newer; .* is 3\.24\.0"):
        Registry(url)
    assert not (tmp_path / "old.db.v3.bak").exists()  # refused before the backup, too
    with sqlite3.connect(tmp_path / "old.db") as conn:
        assert conn.execute("SELECT version FROM spade_schema").fetchone() == (3,)
        assert conn.execute("SELECT regret FROM play_stats").fetchone() == (0.25,)
    monkeypatch.undo()
    assert Registry(url).play_stats("spade/NumberGuess-v1")[0].hint_gain == 0.25


@pytest.mark.xfail(
    strict=True,
    reason="schema_version() does int(row[0]) outside _upgrade's try: a non-integer version "
    "escapes as a bare ValueError instead of a SpadeError naming the registry",
)
def test_a_registry_with_a_garbled_version_is_refused_with_a_clear_error(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    make_old(url, 3)
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute("UPDATE spade_schema SET version = '3; DROP TABLE environments'")
    with pytest.raises(SpadeError):
        Registry(url)


def test_an_old_registry_that_lost_its_version_row_is_refused_not_stamped_newest(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    make_old(url, 3, stats=(("c", 1.0, 0.5),))
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute("DELETE FROM spade_schema")
    with pytest.raises(
        SpadeError,
        match=r"lost its schema version record .*older than this spade-envs \(no "
        r"play_stats\.hint_gain, spade_schema\.seeds_json\)",
    ):
        Registry(url)
    with sqlite3.connect(tmp_path / "old.db") as conn:  # nothing was stamped or created
        assert conn.execute("SELECT count(*) FROM spade_schema").fetchone() == (0,)
