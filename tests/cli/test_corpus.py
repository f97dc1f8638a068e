"""``spade-envs export`` and ``import`` through Click's runner."""

from __future__ import annotations

import json

import pytest

from spade_envs.cli import main
from spade_envs.seeds import seed_source

from .conftest import ORBIT


def test_export_import_round_trip_and_malformed_files(runner, tmp_path, monkeypatch):
    from spade_envs import describe, seed_class
    from spade_envs.registry import Registry

    registry = Registry()
    for name in ("NumberGuess", "Nim"):
        registry.register(seed_source(name), describe(seed_class(name)), status="validated")
    out = tmp_path / "corpus.jsonl"
    assert "exported 2" in runner.invoke(main, ["export", str(out)]).output
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'other.db'}")
    imported = runner.invoke(main, ["import", str(out), "--budget", "fast"])
    assert imported.exit_code == 0 and "imported 2" in imported.output, imported.output
    assert "validated 2/2" in imported.output  # the progress line (stderr)
    copy = Registry()
    assert sorted(r.id for r in copy.list()) == ["spade/Nim-v1", "spade/NumberGuess-v1"]
    assert copy.get("spade/Nim-v1").source == seed_source("Nim")
    for record in copy.list():  # validated here: the status is the stored report's verdict
        (report,) = copy.validations(record.id)
        assert record.status == ("validated" if report.passed else "rejected")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(out.read_text().splitlines()[0] + "\n{not json}\n")
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'third.db'}")
    result = runner.invoke(main, ["import", str(bad)])
    assert result.exit_code == 1 and "line 2: not JSON" in result.stderr
    assert "is empty" in runner.invoke(main, ["list"]).output  # nothing half-written


def test_import_no_validate_stores_unvalidated_then_gym_make_warns_and_revalidate(runner, tmp_path):
    import gymnasium as gym

    from spade_envs.registry import Registry, UnvalidatedEnvWarning

    path = tmp_path / "lies.jsonl"
    path.write_text(
        json.dumps({"name": "Orbit", "source": ORBIT, "status": "validated", "kind": "game"}) + "\n"
    )
    result = runner.invoke(main, ["import", str(path), "--no-validate"])
    assert result.exit_code == 0, result.output
    assert "imported 1 environment version(s) (1 unvalidated)" in result.output
    assert "spade-envs revalidate --status unvalidated" in result.output
    record = Registry().get("spade/OrbitGuess-v1")
    assert (record.status, record.kind) == ("unvalidated", "text")
    with pytest.warns(UnvalidatedEnvWarning, match="never|without validation"):
        gym.make("spade/OrbitGuess-v1").close()
    again = runner.invoke(main, ["revalidate", "--status", "unvalidated", "--budget", "fast"])
    status = Registry().get("spade/OrbitGuess-v1").status
    assert f"spade/OrbitGuess-v1: {status}" in again.output
    assert again.exit_code == (0 if status == "validated" else 1)
    assert len(Registry().validations("spade/OrbitGuess-v1")) == 1


def test_import_reports_rows_it_refuses(runner, tmp_path):
    path = tmp_path / "mixed.jsonl"
    squat = seed_source("Nim").replace("class Nim(", "class NumberGuess(")
    path.write_text(
        json.dumps({"source": "def broken(:", "status": "validated"})
        + "\n"
        + json.dumps({"source": squat, "status": "validated"})
        + "\n"
    )
    result = runner.invoke(main, ["import", str(path), "--no-validate"])
    assert result.exit_code == 0, result.output
    assert "line 1: not imported: no environment class could be read" in result.output
    assert "line 2: not imported: 'NumberGuess' is the name of the packaged seed" in result.output
    assert "imported 0 environment version(s), 2 skipped with problems" in result.output


def test_import_of_an_unknown_format_names_the_accepted_ones(runner, tmp_path):
    path = tmp_path / "corpus.xml"
    path.write_text("<corpus/>")
    result = runner.invoke(main, ["import", str(path)])
    assert result.exit_code == 2
    assert result.output.startswith("Usage: main import [OPTIONS] [PATH]\n")
    assert " ".join(result.output.split()).endswith(
        f"Error: Invalid value for PATH: Unknown format 'xml' (the suffix of {path}): use one "
        "of jsonl, parquet, package, spade-pool (.jsonl and .parquet are recognized by name; "
        "otherwise pass --format)."
    )
    flag = runner.invoke(main, ["import", str(path), "--format", "xml"])
    assert flag.exit_code == 2 and flag.output.endswith(
        "Error: Invalid value for '--format': Unknown format 'xml'. Use one of jsonl, parquet, "
        "package, spade-pool.\n"
    )
    folder = runner.invoke(main, ["import", str(tmp_path)])
    assert folder.exit_code == 2 and "Cannot tell the format of the directory" in folder.output


def test_import_formats_are_the_registrys():
    from spade_envs.cli.corpus import IMPORT_FORMATS
    from spade_envs.cli.options import STATUSES
    from spade_envs.registry import STATUSES as REGISTRY_STATUSES
    from spade_envs.registry.formats import IMPORT_FORMATS as REGISTRY_FORMATS

    assert IMPORT_FORMATS == REGISTRY_FORMATS and STATUSES == REGISTRY_STATUSES
