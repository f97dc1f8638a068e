"""SPADE's pool, both ways: a self-play run (games, env_memory.json, cache hints) and the
published static corpus (manifest.jsonl, checksums.sha256) import in parallel, resumably,
one version per transaction, with SPADE's statistics kept as SPADE's; any selection
exports back to SPADE's layout, and importing it again gives the same sources and skills.

Every pool here is written under ``tmp_path`` from the games of
:mod:`.spade_pool_fixtures`. Pool code is never run by the import; the loader test at the
end runs those fixtures only."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

from spade_envs.error import SpadeError
from spade_envs.registry import Registry
from spade_envs.registry.formats import detect_format, export_corpus
from spade_envs.registry.spade_pool import (
    SPADE_DEFAULT_MAX_TURNS,
    SPADE_HEADER,
    find_pool,
    source_max_turns,
    spade_skill,
)
from spade_envs.runtime import import_corpus
from spade_envs.runtime.imports import source_metadata
from spade_envs.seeds import seed_source

from .spade_pool_fixtures import (
    HEADER,
    ROUND_TRIP_GAMES,
    TOOL_GAME,
    arithmetic,
    build_run,
    memory_record,
    number_guess,
    odd_one_out,
    spade_loader_emulation,
    spade_loader_source,
)


@pytest.fixture
def registry(tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'pool.db'}")
    yield registry
    registry.close()


def by_name(registry: Registry) -> dict[str, object]:
    return {r.name: r for r in registry.iter_records()}


# ----- a self-play run ------------------------------------------------------------------------
def test_a_run_imports_validated_with_hints_skills_and_spade_stats_kept_apart(registry, tmp_path):
    run = build_run(tmp_path)
    assert detect_format(run) == "spade-pool"  # the run folder, spade_games/ inside it
    layout = find_pool(run)
    assert layout.games.name == "spade_games" and layout.cache.name == "spade_games_cache"
    seen: list[tuple[int, int]] = []
    result = import_corpus(
        registry, run, budget="fast", workers=2, progress=lambda d, t, r: seen.append((d, t))
    )
    assert seen[-1] == (4, 4) and result.format == "spade-pool" and not result.interrupted
    ids = [
        "spade/HighLowEnv-v1",
        "spade/SumTwoEnv-v1",
        "spade/OddOneEnv-v1",
        "spade/BackwardsEnv-v1",
    ]
    assert [r.id for r in result.imported] == ids  # pool order, whatever the finishing order
    assert {r.status for r in result.imported} == {"validated"}, [
        registry.validations(r.id)[0].report for r in result.imported if r.status != "validated"
    ]
    (problem,) = result.problems  # the memory record with a non-numeric win rate
    assert "game_00003_000_logical_deduction.py: its env_memory.json record was skipped" in problem
    records = by_name(registry)
    guess, total, odd, word = (
        records[n] for n in ("HighLowEnv", "SumTwoEnv", "OddOneEnv", "BackwardsEnv")
    )
    assert [(r.skill, r.max_turns) for r in (guess, total, odd, word)] == [
        ("math", 6),
        ("math", 2),
        ("logic", SPADE_DEFAULT_MAX_TURNS),
        ("general", 2),
    ]  # SumTwoEnv's file says spatial reasoning, its memory record says math: the memory wins
    assert guess.hint == "Halve the interval each guess." and odd.hint == "Look at parity."
    assert result.hints == {guess.id: guess.hint, odd.id: odd.hint}
    assert guess.source.startswith(SPADE_HEADER)  # the file as SPADE wrote it
    assert guess.extra["spade"] == {
        "file": "game_00002_000_mathematical_reasoning.py",
        "rollout": 2,
        "index": 0,
        "skill": "Mathematical Reasoning",
        "hint_step": 4,
        "memory": {
            "skill": "Mathematical Reasoning",
            "actor_win_rate": 0.5,
            "regret": 0.25,
            "rollout_id": 4,
            "metadata": {"note": "from SPADE"},
        },
    }
    assert set(result.spade_stats) == {guess.id, total.id}
    assert result.spade_stats[total.id]["regret"] == -0.125  # SPADE's regret: unfloored
    # Kept as SPADE's: nothing lands in this registry's play statistics.
    assert all(registry.play_stats(r.id) == [] for r in (guess, total, odd, word))
    assert all(len(registry.validations(r.id)) == 1 for r in (guess, total, odd, word))

    again = import_corpus(registry, run, budget="fast")
    assert again.imported == [] and again.skipped == 4 and registry.count() == 4


def test_static_corpus_layout_with_manifest_and_checksums(registry, tmp_path):
    root = tmp_path / "spare-gpt55-static-corpus"
    games = root / "games"
    games.mkdir(parents=True)
    files = {
        "game_00000_000_data_retrieval": TOOL_GAME,
        "game_00000_001_mathematical_reasoning": number_guess("CountUpEnv", 9, 4),
        "game_00000_002_pattern_recognition": odd_one_out("EvenOddEnv", 5),
        "game_00000_003_optimization": arithmetic("ProductEnv", "*", 1),
    }
    for stem, code in files.items():
        (games / f"{stem}.py").write_text(HEADER + code)
    sums = [
        f"{hashlib.sha256((games / f'{stem}.py').read_bytes()).hexdigest()}  games/{stem}.py"
        for stem in files
    ]
    sums[3] = "0" * 64 + "  games/game_00000_003_optimization.py"  # corrupted after download
    (root / "checksums.sha256").write_text("\n".join(sums) + "\n")
    manifest = [
        {"game_file": "games/game_00000_000_data_retrieval.py", "skill": "Data Retrieval",
         "model": "gpt-5.5", "code": "x" * 5000, "nested": {"a": 1}},
        {"file": "game_00000_001_mathematical_reasoning", "category": "Analytical Skills"},
        "{not an object",
        {"skill": "Logical Deduction"},
    ]  # fmt: skip
    (root / "manifest.jsonl").write_text(
        "\n".join(m if isinstance(m, str) else json.dumps(m) for m in manifest) + "\n"
    )
    assert detect_format(root) == "spade-pool"
    result = import_corpus(registry, root, validate=False)
    assert [r.name for r in result.imported] == ["ShelfLookupEnv", "CountUpEnv", "EvenOddEnv"]
    problems = "\n".join(result.problems)
    assert "manifest.jsonl, line 3: not JSON" in problems
    assert "manifest.jsonl, line 4: names no game_*.py file" in problems
    assert "game_00000_003_optimization.py: does not match its checksums.sha256 line" in problems
    assert len(result.problems) == 3 and result.notes == []
    shelf, count, even = result.imported
    assert (shelf.kind, shelf.skill, shelf.max_turns) == ("tool", "logic", 10)  # tool-use skill
    # Short scalar fields of the manifest are kept as SPADE's; the code and nesting are not.
    assert shelf.extra["spade"]["manifest"] == {
        "game_file": "games/game_00000_000_data_retrieval.py",
        "skill": "Data Retrieval",
        "model": "gpt-5.5",
    }
    assert count.skill == "math" and count.extra["spade"]["skill"] == "Analytical Skills"
    assert even.skill == "pattern" and "manifest" not in even.extra["spade"]


def test_missing_or_malformed_memory_and_manifest_still_import_the_games(registry, tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "game_00001_000_logical_deduction.py").write_text(HEADER + odd_one_out("LoneOddEnv", 3))
    result = import_corpus(registry, pool, validate=False)
    assert [r.name for r in result.imported] == ["LoneOddEnv"] and result.problems == []
    assert "no env_memory.json" in result.notes[0] and "win rates" in result.notes[0]

    for bad, message in (
        ("{not json", "not readable JSON"),
        ('{"game_file": "x"}', "expected a JSON array of SPADE memory records"),
        ('[{"skill": "Logic"}, 3]', "record 1 names no game_file"),
    ):
        (pool / "env_memory.json").write_text(bad)
        (pool / "manifest.jsonl").write_bytes(b"\xff\xfe not utf-8\n")
        other = Registry(f"sqlite:///{tmp_path / 'other.db'}")
        result = import_corpus(other, pool, validate=False)
        assert [r.name for r in result.imported] == ["LoneOddEnv"], bad
        assert message in result.problems[0] and "not UTF-8" in "\n".join(result.problems)
        other.close()
        (tmp_path / "other.db").unlink()


def test_a_memory_seeded_from_an_earlier_run_gives_each_game_its_own_record(registry, tmp_path):
    pool = tmp_path / "spade_games"
    pool.mkdir()
    stem = "game_00001_000_logical_deduction"
    text = HEADER + odd_one_out("SeededEnv", 3)
    (pool / f"{stem}.py").write_text(text)
    ours = {**memory_record(stem, "Logical Deduction", 0.4, 0.3, 1), "code_snippet": text[:2000]}
    earlier = {**memory_record(stem, "Optimization", 0.9, 0.0, 7), "code_snippet": "class Old"}
    (tmp_path / "env_memory.json").write_text(json.dumps([ours, earlier]))
    (record,) = import_corpus(registry, pool, validate=False).imported
    assert record.extra["spade"]["memory"]["actor_win_rate"] == 0.4 and record.skill == "logic"


def test_hostile_cache_and_side_files_are_refused_without_following_links(registry, tmp_path):
    run = build_run(tmp_path)
    cache = run / "spade_games_cache"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    hint = cache / "step_00004" / "game_00003_000_logical_deduction_hint.txt"
    hint.unlink()
    hint.symlink_to(secret)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "game_00003_001_language_understanding_hint.txt").write_text("TOP-SECRET")
    (cache / "step_00009").symlink_to(elsewhere)
    os.mkfifo(run / "manifest.jsonl")
    os.mkfifo(run / "checksums.sha256")
    result = import_corpus(registry, run, validate=False)
    names = [r.name for r in result.imported]
    assert names == ["HighLowEnv", "SumTwoEnv", "BackwardsEnv"]  # the linked hint's game: skipped
    problems = "\n".join(result.problems)
    assert "game_00003_000_logical_deduction_hint.txt (pool hint) is a symbolic link" in problems
    assert "step_00009 is not a real folder" in problems
    assert "manifest.jsonl (pool manifest) is a FIFO" in problems
    assert "checksums.sha256 (pool checksums) is a FIFO" in problems
    assert not any("TOP-SECRET" in (r.hint + r.source) for r in registry.iter_records())


def test_an_overlong_manifest_line_is_skipped_and_the_rest_read(registry, tmp_path, monkeypatch):
    from spade_envs.registry import spade_layout

    monkeypatch.setattr(spade_layout, "MAX_JSONL_LINE_BYTES", 100)
    pool = tmp_path / "games"
    pool.mkdir()
    (pool / "game_00001_000_x.py").write_text(HEADER + odd_one_out("LongLineEnv", 3))
    entry = {"game_file": "game_00001_000_x.py", "skill": "Causal Inference"}
    (pool / "manifest.jsonl").write_text(json.dumps({"pad": "y" * 500}) + "\n" + json.dumps(entry))
    result = import_corpus(registry, pool, validate=False)
    assert "line 1: longer than 100 bytes" in result.problems[0] and len(result.problems) == 1
    assert result.imported[0].skill == "science"


# ----- parallel, per-version transactions, resumable ------------------------------------------
def test_an_interrupted_import_keeps_what_finished_and_continues(registry, tmp_path):
    run = build_run(tmp_path)
    calls = []

    def stop_after_two(done, total, report):
        calls.append(done)
        if done == 2:
            raise KeyboardInterrupt

    first = import_corpus(registry, run, budget="fast", workers=1, progress=stop_after_two)
    assert first.interrupted and "interrupted" in first.summary()
    assert [r.name for r in first.imported] == ["HighLowEnv", "SumTwoEnv"]  # whole versions
    assert registry.count() == 2
    second = import_corpus(registry, run, budget="fast", workers=2)
    assert second.skipped == 2 and [r.name for r in second.imported] == [
        "OddOneEnv",
        "BackwardsEnv",
    ]
    assert not second.interrupted and registry.count() == 4
    # Nothing was validated twice: one report per version.
    assert all(len(registry.validations(r.id)) == 1 for r in registry.iter_records())


def test_versions_of_one_name_register_in_pool_order(registry, tmp_path):
    games = [
        (f"game_0000{i}_000_mathematical_reasoning", number_guess("SameNameEnv", 10 + i, 3))
        for i in range(4)
    ]
    run = build_run(tmp_path, games)
    result = import_corpus(registry, run, budget="fast", workers=2)
    assert [r.id for r in result.imported] == [f"spade/SameNameEnv-v{i}" for i in range(1, 5)]
    for i, record in enumerate(result.imported):
        assert f"from 1 to {10 + i};" in record.source


def test_an_unproven_verdict_is_stored_unvalidated_with_its_reason(registry, tmp_path, monkeypatch):
    import spade_envs.validation as validation
    from spade_envs.validation.report import CheckResult, ValidationReport

    def unproven_reports(sources, **_):  # what the validator says of a game without solution()
        for index, _source in enumerate(sources):
            yield (
                index,
                ValidationReport(
                    passed=False,
                    checks=[CheckResult("solution", False, "no solution()", skipped=True)],
                    env_name="NoProofEnv",
                    budget="fast",
                    unproven="no solution(): feasibility could not be checked",
                ),
            )

    monkeypatch.setattr(validation, "validate_iter", unproven_reports)
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "game_00001_000_x.py").write_text(HEADER + odd_one_out("NoProofEnv", 3))
    result = import_corpus(registry, pool)
    (record,) = result.imported
    assert record.status == "unvalidated"
    assert record.extra["unproven"] == "no solution(): feasibility could not be checked"
    assert result.counts()["unproven"] == 1 and "1 unproven" in result.summary()
    assert registry.validations(record.id)[0].passed is False  # the report is stored with it


def test_a_file_cannot_claim_unproven(registry, tmp_path):
    path = tmp_path / "claims.jsonl"
    source = HEADER + odd_one_out("ClaimEnv", 3)
    path.write_text(json.dumps({"source": source, "extra": {"unproven": "trust me", "k": 1}}))
    (record,) = import_corpus(registry, path, validate=False).imported
    assert record.extra == {"k": 1}


# ----- max_turns: one rule for imports and register -------------------------------------------
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (number_guess("AEnv", 5, 7), 7),  # __init__ default
        (arithmetic("BEnv", "-", 2), 2),  # class attribute
        (
            arithmetic("CEnv", "-", 2).replace(
                "    def __init__(self):", "    def __init__(self, max_turns=9):"
            ),
            2,
        ),
        (odd_one_out("DEnv", 3), SPADE_DEFAULT_MAX_TURNS),  # none: SPADE's default
        (TOOL_GAME, 10),  # ToolUseBaseEnv.__init__'s default
        # Looked up through the module's own base classes, as getattr and __init__ are.
        ("class Base:\n    max_turns = 4\n\nclass FEnv(Base):\n    pass\n", 4),
        (
            "class Base:\n    def __init__(self, max_turns=6): pass\n\nclass GEnv(Base):\n    pass\n",
            6,
        ),
        # Only the runtime's rule: a literal set in __init__ is not read (it is not either).
        (
            "class HEnv:\n    def __init__(self):\n        self.max_turns = 5\n",
            SPADE_DEFAULT_MAX_TURNS,
        ),
    ],
)
def test_max_turns_follows_spade_loader_semantics(source, expected):
    name = [c.split("(")[0].split(":")[0] for c in source.split("class ")[1:]][-1]
    assert source_max_turns(source, name, 1) == expected
    # The runtime reads the same number from the class (these fixtures are ours to run).
    from spade_envs.core.duck import spade_max_turns
    from spade_envs.core.spade_tool import ToolUseBaseEnv

    namespace: dict = {"ToolUseBaseEnv": ToolUseBaseEnv}
    exec(compile(source, "<fixture>", "exec"), namespace)
    assert spade_max_turns(namespace[name]) == expected


def test_source_metadata_is_what_register_and_import_store(tmp_path, registry):
    native = seed_source("NumberGuess").replace("class NumberGuess(", "class GuessNative(")
    assert source_metadata(native).max_turns == source_max_turns(native, "GuessNative", -1) != -1
    pool = tmp_path / "pool"
    pool.mkdir()
    source = HEADER + number_guess("AgreeEnv", 8, 11)
    (pool / "game_00001_000_mathematical_reasoning.py").write_text(source)
    (record,) = import_corpus(registry, pool, validate=False).imported
    meta = source_metadata(source)
    assert (meta.name, meta.max_turns) == (record.name, record.max_turns) == ("AgreeEnv", 11)


@pytest.mark.parametrize(
    ("label", "skill"),
    [
        ("Mathematical Reasoning", "math"), ("logical_deduction", "logic"),
        ("Causal Inference", "science"), ("Memory Recall", "general"),
        ("API_Orchestration", "planning"), ("Data Retrieval", "logic"),
        ("State_Modification", "planning"), ("Error Recovery", "logic"),
        ("Tool_Selection", "logic"), ("Multi-Step_Workflows", "planning"),
        ("Query Then Act", "logic"), ("Analytical Skills", "math"), ("code", "code"),
    ],
)  # fmt: skip
def test_spade_skills_and_categories_map_to_our_families(label, skill):
    assert spade_skill(label) == skill


# ----- export back to SPADE's layout -----------------------------------------------------------
SPADE_RECORD_FIELDS = {
    "game_file", "skill", "code_snippet", "actor_win_rate", "regret", "rollout_id", "metadata"
}  # fmt: skip


def snapshot(registry: Registry) -> dict[str, tuple[str, str]]:
    return {r.sha256: (r.skill, r.hint) for r in registry.iter_records()}


def test_round_trip_pool_registry_pool_registry(registry, tmp_path):
    run = build_run(tmp_path, ROUND_TRIP_GAMES)
    import_corpus(registry, run, validate=False)
    native = seed_source("NumberGuess")  # spade-envs' own protocol: SPADE cannot load it
    from spade_envs import describe, seed_class

    registry.register(native, describe(seed_class("NumberGuess")))
    plain = odd_one_out("HeaderlessEnv", 2)  # a duck class without SPADE's header
    registry.register(plain, dataclasses.replace(source_metadata(plain), skill="logic"))
    out = tmp_path / "exported"
    problems: list[str] = []
    written = len(ROUND_TRIP_GAMES) + 1
    assert export_corpus(registry, out, "spade-pool", problems=problems) == written
    assert len(problems) == 1 and "spade/NumberGuess-v1: not written" in problems[0]
    assert "package or jsonl" in problems[0]
    files = sorted(p.name for p in (out / "spade_games").iterdir())
    assert files == sorted(
        [f"{stem}.py" for stem, _ in ROUND_TRIP_GAMES] + ["game_00000_000_logical_deduction.py"]
    )
    for stem, code in ROUND_TRIP_GAMES:  # the files as SPADE wrote them, header not doubled
        assert (out / "spade_games" / f"{stem}.py").read_text() == HEADER + code
    new = (out / "spade_games" / "game_00000_000_logical_deduction.py").read_text()
    assert new == HEADER + plain
    cache = out / "spade_games_cache"
    assert (
        cache / "step_00004" / "game_00002_000_mathematical_reasoning_hint.txt"
    ).read_text() == ("Halve the interval each guess.")
    memory = json.loads((cache / "env_memory.json").read_text())
    assert [set(m) for m in memory] == [SPADE_RECORD_FIELDS] * 2  # what EnvironmentRecord takes
    assert memory[0]["game_file"] == str(
        (out / "spade_games" / f"{ROUND_TRIP_GAMES[0][0]}.py").resolve()
    )
    assert memory[0]["code_snippet"] == (HEADER + ROUND_TRIP_GAMES[0][1])[:2000]
    assert (memory[1]["actor_win_rate"], memory[1]["regret"]) == (0.75, -0.125)

    again = Registry(f"sqlite:///{tmp_path / 'again.db'}")
    result = import_corpus(again, out, validate=False)
    assert result.problems == [] and result.notes == []
    expected = {
        k: v
        for k, v in snapshot(registry).items()
        if k != hashlib.sha256(native.encode()).hexdigest()
    }
    header_added = hashlib.sha256((HEADER + plain).encode()).hexdigest()
    expected[header_added] = expected.pop(hashlib.sha256(plain.encode()).hexdigest())
    assert snapshot(again) == expected
    spade_of = {r.name: r.extra["spade"] for r in again.iter_records()}
    assert spade_of["SumTwoEnv"]["memory"]["regret"] == -0.125
    # And back out: the second export is the first one, byte for byte.
    out2 = tmp_path / "exported2"
    assert export_corpus(again, out2, "spade-pool") == written
    for path in (out / "spade_games").iterdir():
        assert (out2 / "spade_games" / path.name).read_bytes() == path.read_bytes()
    third = Registry(f"sqlite:///{tmp_path / 'third.db'}")
    import_corpus(third, out2, validate=False)
    assert snapshot(third) == snapshot(again)
    again.close()
    third.close()


def test_export_selection_and_target_checks(registry, tmp_path):
    import_corpus(registry, build_run(tmp_path), validate=False)
    out = tmp_path / "math_only"
    assert export_corpus(registry, out, "spade-pool", skill="math") == 2
    assert export_corpus(registry, tmp_path / "one", "spade-pool", ids=["spade/OddOneEnv-v1"]) == 1
    with pytest.raises(SpadeError, match="not an empty directory"):
        export_corpus(registry, out, "spade-pool")
    assert not (tmp_path / "math_only.partial").exists()
    lines = tmp_path / "logic.jsonl"
    assert export_corpus(registry, lines, "jsonl", skill="logic") == 1
    assert json.loads(lines.read_text())["name"] == "OddOneEnv"


def test_hostile_extra_cannot_steer_the_export(registry, tmp_path):
    source = HEADER + odd_one_out("SteerEnv", 3)
    extra = {"spade": {"file": "game_1_2_../../../escape.py", "skill": "../../x",
                       "memory": {"actor_win_rate": "lots"}, "hint_step": -3}}  # fmt: skip
    registry.register(source, source_metadata(source), extra=extra, hint="h")
    problems: list[str] = []
    out = tmp_path / "out"
    assert export_corpus(registry, out, "spade-pool", problems=problems) == 1
    (written,) = (out / "spade_games").iterdir()
    assert written.name == "game_00000_000_x.py"  # the label, kept to safe characters
    assert "SPADE statistics were not written" in problems[0]
    assert json.loads((out / "spade_games_cache" / "env_memory.json").read_text()) == []
    assert (out / "spade_games_cache" / "step_00000" / "game_00000_000_x_hint.txt").exists()
    assert not (tmp_path / "escape.py").exists()


# ----- SPADE's loader accepts the export -------------------------------------------------------
def test_spade_loader_accepts_the_exported_games(registry, tmp_path):
    import_corpus(registry, build_run(tmp_path, ROUND_TRIP_GAMES), validate=False)
    out = tmp_path / "exported"
    export_corpus(registry, out, "spade-pool")
    games = sorted((out / "spade_games").glob("game_*.py"))
    assert len(games) == len(ROUND_TRIP_GAMES)
    for game in games:
        spade_loader_emulation(game)
    loader = spade_loader_source()
    if loader is None:
        pytest.skip("SPADE's repository is not mirrored here: checked against the emulation only")
    (tmp_path / "synthetic_game_env.py").write_text(loader)
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        from synthetic_game_env import make_synthetic_env
        for game in {[str(g) for g in games]!r}:
            env = make_synthetic_env(game, max_turns=25, respect_game_max_turns=True)
            env.reset()
            for action in ("1", "2", "test"):
                *_, terminated, truncated, _info = env.step(action)
                if terminated or truncated:
                    break
            env.close()
        print("ok")
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
