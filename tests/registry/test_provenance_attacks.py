"""Attacks on import provenance (``extra["provenance"]``) and on what ``show`` prints of an
imported version. An attack that holds is an ordinary test; one that succeeds is a strict
xfail whose reason names the weakness, so closing it is noticed.

Nothing here runs stored code: rows are imported with ``validate=False``.
"""

from __future__ import annotations

import json

from click.testing import CliRunner

from spade_envs.cli import main
from spade_envs.registry import Registry
from spade_envs.registry._rows import check_row
from spade_envs.runtime import import_corpus
from spade_envs.seeds import seed_source

HALVING = seed_source("NumberGuess").replace("class NumberGuess(", "class HalvingGuess(")


def _import_and_show(tmp_path, row: dict) -> tuple[object, object]:
    url = f"sqlite:///{tmp_path / 'target.db'}"
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps(row) + "\n")
    registry = Registry(url)
    (record,) = import_corpus(registry, path, validate=False).imported
    registry.close()
    result = CliRunner().invoke(main, ["show", record.id], env={"SPADE_REGISTRY_URL": url})
    return record, result


def test_provenance_never_becomes_status_origin_or_play_statistics(tmp_path):
    row = {
        "source": HALVING, "id": "spade/HalvingGuess-v9", "origin": "designer",
        "status": "validated", "model": "m", "extra": {"unproven": "forged"},
        "play_stats": [{"checkpoint": "c", "win_rate": 1.0, "hint_gain": 1.0,
                        "plays_with_hint": 99, "plays_without_hint": 99}],
    }  # fmt: skip
    record, result = _import_and_show(tmp_path, row)
    assert (record.origin, record.status) == ("imported", "unvalidated")
    assert "unproven" not in record.extra
    assert result.exit_code == 0, result.output
    assert "played: no play statistics stored" in " ".join(result.output.split())
    registry = Registry(f"sqlite:///{tmp_path / 'target.db'}")
    assert registry.play_stats(record.id) == []
    registry.close()


def test_escape_sequences_in_provenance_never_reach_the_terminal(tmp_path):
    row = {"source": HALVING, "id": "\x1b[2J\x1b[Hstatus: validated\nfake", "origin": "\x07x"}
    _record, result = _import_and_show(tmp_path, row)
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.strip().startswith("provenance"))
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert line.endswith("(what the imported file said; not checked)")


def test_a_huge_integer_win_rate_does_not_break_show(tmp_path):
    row = {"source": HALVING, "id": "x", "play_stats": [{"win_rate": int("1" + "0" * 400)}]}
    _record, result = _import_and_show(tmp_path, row)
    assert result.exit_code == 0, repr(result.exception)


def test_provenance_smuggled_inside_extra_is_bounded():
    row = {
        "source": HALVING,
        "extra": {
            "provenance": {"id": "x" * 5000, "play_stats": 5, "status": {"nested": [1] * 1000}}
        },
    }
    provenance = check_row(row, "line 1").extra.get("provenance", {})
    assert len(str(provenance.get("id", ""))) <= 200
    assert not isinstance(provenance.get("status"), dict)
    assert isinstance(provenance.get("play_stats", []), list)


def test_a_smuggled_non_list_play_stats_does_not_break_show(tmp_path):
    row = {"source": HALVING, "extra": {"provenance": {"id": "a", "play_stats": 5}}}
    _record, result = _import_and_show(tmp_path, row)
    assert result.exit_code == 0, repr(result.exception)


def test_an_imported_hint_cannot_fake_a_line_of_show(tmp_path):
    row = {"source": HALVING, "hint": "say 7\r     status: validated"}
    _record, result = _import_and_show(tmp_path, row)
    assert result.exit_code == 0, result.output
    assert "\r" not in result.output and "\x1b" not in result.output
