"""An export carries each version's origin, status, run and play statistics; an import
keeps them as provenance (shown by ``show``), never as its own status or origin, bounded,
and one step back for a version exported again after an import."""

from __future__ import annotations

import importlib
import json
import os

import pytest
from click.testing import CliRunner

from spade_envs import describe, seed_class
from spade_envs.cli import main
from spade_envs.error import SpadeError
from spade_envs.registry import Registry
from spade_envs.registry._rows import check_row
from spade_envs.registry.formats import export_corpus
from spade_envs.runtime import import_corpus
from spade_envs.seeds import seed_source

HALVING = seed_source("NumberGuess").replace("class NumberGuess(", "class HalvingGuess(")


def _require_pyarrow() -> None:
    """pyarrow (the [parquet] extra); in CI, where it is installed, missing it fails."""
    if os.environ.get("CI"):
        importlib.import_module("pyarrow")
    else:
        pytest.importorskip("pyarrow")


def _designed(registry: Registry) -> str:
    meta = describe(seed_class("NumberGuess"))
    meta = type(meta)(**{**meta.__dict__, "name": "HalvingGuess", "origin": "designer"})
    record = registry.register(HALVING, meta, status="validated", model="m-7")
    registry.record_play_stats(
        record.id, "run-7/iter-0002", plays_with_hint=8, plays_without_hint=8,
        mean_return_with_hint=0.75, mean_return_without_hint=0.25, win_rate=0.25,
    )  # fmt: skip
    return record.id


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_an_import_keeps_origin_status_and_statistics_as_provenance(registry_url, tmp_path, fmt):
    if fmt == "parquet":
        _require_pyarrow()
    source = Registry(registry_url)
    env_id = _designed(source)
    out = tmp_path / f"corpus.{fmt}"
    assert export_corpus(source, out, fmt, origin="designer") == 1
    target = Registry(f"sqlite:///{tmp_path / 'target.db'}")
    (record,) = import_corpus(target, out, validate=False).imported
    # The importing registry decides status and origin ...
    assert (record.origin, record.status) == ("imported", "unvalidated")
    # ... and keeps what the exporting one said, as provenance.
    provenance = record.extra["provenance"]
    assert provenance["id"] == env_id and provenance["origin"] == "designer"
    assert provenance["status"] == "validated" and provenance["model"] == "m-7"
    (stats,) = provenance["play_stats"]
    assert stats["win_rate"] == 0.25 and stats["hint_gain"] == 0.5
    assert stats["checkpoint"] == "run-7/iter-0002"
    # Exported again and imported elsewhere: the step before is kept too.
    again = tmp_path / f"again.{fmt}"
    export_corpus(target, again, fmt)
    third = Registry(f"sqlite:///{tmp_path / 'third.db'}")
    (record,) = import_corpus(third, again, validate=False).imported
    assert record.extra["provenance"]["origin"] == "imported"
    assert record.extra["provenance"]["earlier"]["origin"] == "designer"
    source.close(), target.close(), third.close()


def test_show_prints_the_provenance_and_says_it_is_not_checked(tmp_path, monkeypatch):
    source = Registry(f"sqlite:///{tmp_path / 'source.db'}")
    _designed(source)
    export_corpus(source, tmp_path / "c.jsonl", "jsonl")
    target_url = f"sqlite:///{tmp_path / 'target.db'}"
    (record,) = import_corpus(Registry(target_url), tmp_path / "c.jsonl", validate=False).imported
    monkeypatch.setenv("SPADE_REGISTRY_URL", target_url)
    result = CliRunner().invoke(main, ["show", record.id])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.strip().startswith("provenance"))
    assert "exported as spade/HalvingGuess-v1 (origin designer, status validated)" in line
    assert "1 play statistics there: latest win rate 0.25, hint gain +0.50" in line
    assert line.endswith("(what the imported file said; not checked)")


def test_provenance_in_a_file_is_bounded_and_checked():
    row = {
        "source": HALVING, "id": "x" * 1000, "origin": "designer", "status": 3,
        "play_stats": [{"win_rate": 0.5, "evil": "y" * 10, "hint_gain": True}] * 80,
    }  # fmt: skip
    provenance = check_row(row, "line 1").extra["provenance"]
    assert len(provenance["id"]) == 200 and "status" not in provenance  # not a string
    assert len(provenance["play_stats"]) == 50
    assert provenance["play_stats"][0] == {"win_rate": 0.5}  # unknown keys, booleans dropped
    with pytest.raises(SpadeError, match="play_stats is not JSON"):
        check_row({"source": HALVING, "play_stats": "{not json"}, "row 2")
    assert "provenance" not in check_row({"source": HALVING}, "row 3").extra


def test_export_filters_by_suite(tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    _designed(registry)
    assert export_corpus(registry, tmp_path / "none.jsonl", "jsonl", suite="rlve") == 0
    assert json.loads((tmp_path / "none.jsonl").read_text() or "null") is None
    result = CliRunner().invoke(
        main, ["export", str(tmp_path / "s.jsonl"), "--suite", "rlve"],
        env={"SPADE_REGISTRY_URL": f"sqlite:///{tmp_path / 'r.db'}"},
    )  # fmt: skip
    assert result.exit_code == 0 and "exported 0 environment version(s)" in result.output


def test_a_reference_the_database_does_not_hold_is_named_not_blamed_on_other_writers(tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    meta = describe(seed_class("NumberGuess"))
    meta = type(meta)(**{**meta.__dict__, "name": "HalvingGuess"})
    with pytest.raises(SpadeError, match=r"refused it 20 times .*FOREIGN KEY"):
        registry.register(HALVING, meta, run_id="no-such-run")
