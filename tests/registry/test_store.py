from __future__ import annotations

import dataclasses

import pytest

from spade_envs import describe, seed_class
from spade_envs.error import SpadeError, UnknownEnvironmentError
from spade_envs.registry import Registered, Registry, env_id, parse_env_id
from spade_envs.seeds import seed_source


def meta(name="NumberGuess"):
    return describe(seed_class(name))


def test_ids_round_trip_and_reject_bad_ones():
    assert parse_env_id(env_id("NumberGuess", 3)) == ("NumberGuess", 3)
    for bad in ("NumberGuess-v1", "spade/NumberGuess-v0", "spade/Number Guess-v1", "gym/X-v1"):
        with pytest.raises(SpadeError, match="is not an environment ID"):
            parse_env_id(bad)
    with pytest.raises(SpadeError, match="cannot be an environment name"):
        env_id("lowercase", 1)


def test_versions_are_immutable_and_identical_code_is_a_no_op(registry_url):
    registry = Registry(registry_url)
    # A seed's name is reserved for the seed's own code: changes go under another name.
    source = seed_source("NumberGuess").replace("class NumberGuess(", "class OrbitGuess(")
    orbit = dataclasses.replace(meta(), name="OrbitGuess")
    first = registry.register(source, orbit, status="validated")
    assert first.id == "spade/OrbitGuess-v1" and first.status == "validated"
    assert registry.register(source, orbit) == first
    changed = source + "\n# a comment changes the code\n"
    second = registry.register(changed, orbit)
    assert second.id == "spade/OrbitGuess-v2" and second.source == changed
    assert registry.get("spade/OrbitGuess-v1").source == source
    assert registry.versions("OrbitGuess") == ["spade/OrbitGuess-v1", "spade/OrbitGuess-v2"]
    assert registry.count() == 2
    registry.close()


def test_unknown_ids_name_what_exists(registry_url):
    registry = Registry(registry_url)
    registry.register(seed_source("NumberGuess"), meta())
    with pytest.raises(
        UnknownEnvironmentError, match=r"NumberGuess-v7.*Did you mean 'spade/NumberGuess-v1'"
    ):
        registry.get("spade/NumberGuess-v7")
    with pytest.raises(UnknownEnvironmentError, match="Did you mean 'NumberGuess'"):
        registry.get("spade/NumberGues-v1")
    registry.close()


def test_list_filters_and_retire(registry_url):
    registry = Registry(registry_url)
    for name in ("NumberGuess", "Mastermind", "Nim"):
        registry.register(seed_source(name), dataclasses.replace(meta(name), origin="seed"))
    assert {r.name for r in registry.list(skill="math")} == {"NumberGuess", "Nim"}
    assert [r.name for r in registry.list(kind="game")] == ["Nim"]
    retired = registry.retire("spade/Nim-v1")
    assert retired.status == "retired"
    assert [r.name for r in registry.list(status="retired")] == ["Nim"]
    with pytest.raises(SpadeError, match="status must be one of"):
        registry.set_status("spade/Nim-v1", "deleted")
    registry.close()


def test_count_takes_the_filters_of_list(registry_url):
    registry = Registry(registry_url)
    for name in ("NumberGuess", "Mastermind", "Nim"):
        registry.register(seed_source(name), meta(name), status="validated")
    registry.retire("spade/Nim-v1")
    assert registry.count() == 3  # every version, retired ones too, as before
    assert registry.count(include_retired=False) == len(registry.list()) == 2
    assert registry.count(skill="math") == 2
    assert registry.count(skill="math", include_retired=False) == 1
    assert registry.count(status="retired", include_retired=False) == 1
    assert registry.count(kind="game", status="validated") == 0
    registry.close()


def test_retired_versions_are_hidden_from_list_unless_asked(registry_url):
    registry = Registry(registry_url)
    for name in ("NumberGuess", "Nim"):
        registry.register(seed_source(name), meta(name), status="validated")
    registry.retire("spade/Nim-v1")
    assert [r.id for r in registry.list(sort="name")] == ["spade/NumberGuess-v1"]
    assert [r.id for r in registry.list(sort="name", include_retired=True)] == [
        "spade/Nim-v1",
        "spade/NumberGuess-v1",
    ]
    assert [r.id for r in registry.list(status="retired")] == ["spade/Nim-v1"]
    assert registry.list(kind="game") == []  # filters combine with the hiding
    assert [r.id for r in registry.list(kind="game", include_retired=True)] == ["spade/Nim-v1"]
    assert registry.count() == 2  # still stored, still counted
    registry.set_status("spade/Nim-v1", "validated")
    assert [r.id for r in registry.list(kind="game")] == ["spade/Nim-v1"]
    registry.close()


def test_register_with_outcome_tells_new_versions_from_identical_code(registry_url):
    registry = Registry(registry_url)
    source = seed_source("NumberGuess").replace("class NumberGuess(", "class OrbitGuess(")
    orbit = dataclasses.replace(meta(), name="OrbitGuess")
    first = registry.register_with_outcome(source, orbit, status="validated")
    assert isinstance(first, Registered) and first.new
    assert first.id == first.record.id == "spade/OrbitGuess-v1"
    again = registry.register_with_outcome(source, orbit, status="candidate", model="other")
    assert again == Registered(first.record, new=False)  # nothing changed, status included
    # Identical code under another name is the existing version too.
    renamed = registry.register_with_outcome(source, dataclasses.replace(orbit, name="Orbit2"))
    assert (renamed.new, renamed.id) == (False, "spade/OrbitGuess-v1")
    second = registry.register_with_outcome(source + "\n# changed\n", orbit)
    assert (second.new, second.id) == (True, "spade/OrbitGuess-v2")
    # register keeps returning the bare record, for new and identical code alike.
    assert registry.register(source, orbit) == first.record
    assert registry.count() == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.new = False  # type: ignore[misc]
    registry.close()


def test_schema_from_a_newer_version_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    Registry(url).close()
    import sqlite3

    with sqlite3.connect(tmp_path / "r.db") as conn:
        conn.execute("UPDATE spade_schema SET version = 99")
    with pytest.raises(SpadeError, match="schema version 99, newer than"):
        Registry(url)


def test_corrupt_database_file_is_a_clear_error(tmp_path):
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(SpadeError, match="not a usable database"):
        Registry(f"sqlite:///{path}")
    assert path.read_bytes().startswith(b"this is not a database")  # nothing overwritten


def test_unreachable_postgres_is_a_clear_error():
    with pytest.raises(SpadeError, match="Cannot open the registry"):
        Registry("postgresql+psycopg://postgres@127.0.0.1:1/nowhere?connect_timeout=2")
