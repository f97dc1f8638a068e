"""The TextArena adapter against the real package: plans and unavailable games, episodes
(determinism, rewards, invalid moves, solvers), the worker's import, and a small import
validated in the real sandbox then played through the door, by rollouts in self-play and
through the CLI."""

from __future__ import annotations

import random
import subprocess
import sys
import types

import pytest
from click.testing import CliRunner

from spade_envs.cli import main
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.registry import Registry
from spade_envs.suites import plan
from spade_envs.suites.importer import import_suite

#: One game of each kind of unavailability, and the words its reason must say.
UNAVAILABLE = {
    "Wordle-v0": "nltk.download('words')",
    "Hangman-v0": "nltk.download",
    "Debate-v0": "LLM over the network",
    "Chess-v0": "fails to import on Python",
    "Taboo-v0": "only one- and two-player games",
    "UsedCar-v0-balanced": "is missing from textarena 0.7.4",
}
#: One-player games with a solver: the solution wins from every seed. (ThreeCardMonte's
#: solver wins too, but TextArena 0.7.4 crashes on its invalid moves: see the docs.)
SOLVED = ["TowerOfHanoi-v0", "Sudoku-v0-very-easy", "Mastermind-v0", "FrozenLake-v0"]


def _class(spec):
    module = types.ModuleType(spec.name)
    exec(compile(spec.source, "<test>", "exec"), module.__dict__)
    return getattr(module, spec.name)


def _one(task):
    (spec,), missing = plan("textarena", [task])
    assert not missing, missing
    return spec


def test_game_ids_become_versions_and_unavailable_games_say_why():
    specs, missing = plan("textarena", ["TicTacToe-v0", "TowerOfHanoi-v0", *UNAVAILABLE])
    assert [s.name for s in specs] == ["TaTicTacToeV0", "TaTowerOfHanoiV0"]
    reasons = {m.task: m.reason for m in missing}
    for task, words in UNAVAILABLE.items():
        assert words in reasons[task], (task, reasons[task])
    assert "nothing may download" in reasons["Wordle-v0"]
    game, task = specs
    assert (game.meta.kind, game.meta.players, game.meta.max_turns) == ("game", 2, 200)
    # TextArena's 14 turns, with room for one retried invalid move each.
    assert (task.meta.kind, task.meta.players, task.meta.max_turns) == ("text", 1, 30)
    assert "from spade_envs import TextArenaGame\n" in game.source
    assert game.extra["suite"] == {
        "id": "textarena",
        "task": "TicTacToe-v0",
        "level": "0",
        "version": "0.7.4",
        "distribution": "textarena",
        "licence": "MIT",
        "homepage": "https://github.com/LeonGuertler/TextArena",
        "game": "TicTacToe",
        "players": 2,
    }
    env = _class(task)()
    assert (env.module, env.env_class, env.config) == (
        "textarena.envs.TowerOfHanoi.env",
        "TowerOfHanoiEnv",
        {"num_disks": 3, "max_turns": 14},
    )
    _, levels = plan("textarena", ["Nim-v0"], ["0", "3"])
    assert [m.level for m in levels] == ["3"] and "no levels" in levels[0].reason


@pytest.mark.parametrize("task", ["TicTacToe-v0", "TowerOfHanoi-v0"])
def test_only_the_importer_may_store_a_game_without_a_hint(task):
    from spade_envs.validation.budget import get_budget
    from spade_envs.validation.static import static_checks

    spec = _one(task)
    checks, info = static_checks(spec.source, get_budget("fast"), suite_import=True)
    assert all(c.passed for c in checks) and info.suite_task
    assert info.kind == spec.meta.kind and not info.has_hint
    checks, _ = static_checks(spec.source, get_budget("fast"))
    refused = {c.name: c.reason for c in checks if not c.passed}
    assert "declared like a suite task" in refused["env_class"]


@pytest.mark.parametrize("task", SOLVED)
def test_solutions_win_and_two_invalid_moves_lose(task):
    env = _class(_one(task))()
    for seed in (0, 7, 12345):
        env.reset(seed=seed)
        solution = env.solution()
        steps = [env.step(action) for action in solution]
        assert sum(s[1] for s in steps) == 1.0 and env.won, (seed, solution)
        assert all(s[4]["action_parsed"] for s in steps)  # every move taken as a move
        env.reset(seed=seed)
        *_, info = env.step("nonsense")  # TextArena reports it and lets the player retry
        assert info["action_parsed"] is False
        _, reward, terminated, _, info = env.step("more nonsense")
        assert terminated and reward < 1.0 and not env.won
        assert info["textarena_reward"] <= 0.0 and info["action_parsed"] is False


def test_a_seed_fixes_the_episode_and_the_global_rngs_are_left_alone():
    env = _class(_one("ThreeCardMonte-v0"))()
    random.seed(5)
    before = random.getstate()
    first = [env.reset(seed=s)[0] for s in range(6)]
    assert random.getstate() == before
    assert [env.reset(seed=s)[0] for s in range(6)] == first
    assert len(set(first)) > 1  # the shuffles follow the seed
    other = _class(_one("ThreeCardMonte-v0"))()
    assert other.reset(seed=3)[0] == first[3]


def test_two_player_rewards_turns_and_invalid_moves_follow_textarena():
    cls = _class(_one("TicTacToe-v0"))
    game = cls()
    game.reset(seed=1)
    assert game.agent_selection == "player_0" and "[4]" in game.observe("player_0")
    for move in ["[4]", "[0]", "[8]", "[2]"]:
        game.step(move)
        assert game.infos[game.possible_agents[0 if move in ("[4]", "[8]") else 1]]["action_parsed"]
    game.step("no move here")  # invalid: player_0 is told why and moves again
    assert game.agent_selection == "player_0"
    assert game.infos["player_0"]["action_parsed"] is False
    assert "attempted an invalid move" in game.observe("player_0")
    game.step("[1]")  # blocks; player_1's turn
    assert game.agent_selection == "player_1" and game.infos["player_0"]["action_parsed"]
    seen = game.observe("player_1")
    assert "[Player 0] [1]" in seen and "[Player 1]" not in seen  # no echo of its own moves
    game.step("oops")
    game.step("oops again")  # a second invalid move in a row loses, as TextArena rules
    assert all(game.terminations.values())
    assert game.infos["player_1"]["action_parsed"] is False
    assert game.rewards == {"player_0": 1.0, "player_1": 0.0}
    draw = cls()
    draw.reset(seed=2)
    for move in ["[4]", "[0]", "[2]", "[6]", "[3]", "[5]", "[1]", "[7]", "[8]"]:
        draw.step(move)
    assert draw.rewards == {"player_0": 0.5, "player_1": 0.5}
    with pytest.raises(NotImplementedError, match="no reference player"):
        cls().best_move("player_0")
    kuhn = _class(_one("KuhnPoker-v0"))()
    kuhn.reset(seed=0)  # TextArena opens KuhnPoker's first round with Player 1
    assert kuhn.agent_selection == "player_1"
    assert "You are Player 1" in kuhn.observe("player_1")


def test_nim_has_a_perfect_player():
    from spade_envs import GameSeatEnv

    cls = _class(_one("Nim-v0"))
    for opponent in ("best", "random"):
        for seed in range(4):
            planner, player = GameSeatEnv(cls(), 0, opponent), GameSeatEnv(cls(), 0, opponent)
            planner.reset(seed=seed)
            player.reset(seed=seed)
            assert sum(player.step(move)[1] for move in planner.solution()) == 1.0


def test_a_worker_imports_only_the_games_module():
    spec = _one("TowerOfHanoi-v0")
    code = (
        "import sys, types\n"
        f"m = types.ModuleType('m'); exec({spec.source!r}, m.__dict__)\n"
        f"env = m.{spec.name}(); env.reset(seed=3)\n"
        "assert env.step(env.solution()[0])[1] == 0.0\n"
        "loaded = [n for n in ('textarena', 'nltk', 'scipy') if n in sys.modules]\n"
        "assert not loaded, loaded\n"
        "import textarena\n"  # a later import gets the whole real package
        "assert callable(textarena.make) and 'TicTacToe-v0' in textarena.envs.registration.ENV_REGISTRY\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


# ----- a real import, validated in the sandbox -----------------------------------------------
@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    """``(url, result)``: TowerOfHanoi, Nim, TicTacToe and Wordle imported at the fast budget."""
    url = f"sqlite:///{tmp_path_factory.mktemp('textarena') / 'registry.db'}"
    registry = Registry(url)
    result = import_suite(
        registry,
        "textarena",
        tasks=["TowerOfHanoi-v0", "Nim-v0", "TicTacToe-v0", "Wordle-v0"],
        seed=7,
        workers=1,
        progress=False,
    )
    registry.close()
    return url, result


def test_the_gate_validates_solved_games_and_stores_the_others_unproven(arena):
    url, result = arena
    statuses = {e.task: (e.status, e.reason) for e in result.envs}
    assert statuses["TowerOfHanoi-v0"] == ("validated", "")
    assert statuses["Nim-v0"] == ("validated", "")  # the first player wins Nim [3, 4, 5]
    status, reason = statuses["TicTacToe-v0"]
    assert status == "unvalidated" and "TextArena offers no reference player" in reason
    assert [(u.task, u.level) for u in result.unavailable] == [("Wordle-v0", "0")]
    registry = Registry(url)
    record = registry.get("spade/TaTicTacToeV0-v1")
    assert record.kind == "game" and record.suite == "textarena"
    assert "no reference player" in record.extra["suite"]["unproven"]
    assert registry.validations("spade/TaNimV0-v1")[0].passed


def test_textarena_is_an_evaluation_set_and_a_training_pool(arena):
    from spade_envs.suites.evaluation import eval_set, suite_pool

    url, _ = arena
    registry = Registry(url)
    try:
        pool = suite_pool("textarena", registry)  # validated versions only
        assert pool == ["spade/TaNimV0-v1", "spade/TaTowerOfHanoiV0-v1"]
        every = eval_set("textarena", registry)  # unproven ones are played too
        assert [t.env_id for t in every.tasks] == [*pool[:1], "spade/TaTicTacToeV0-v1", pool[1]]
    finally:
        registry.close()


def test_self_play_through_the_door(arena, monkeypatch):
    import gymnasium as gym

    from spade_envs.registry.trust import UnvalidatedEnvWarning
    from spade_envs.runtime import open_id

    url, _ = arena
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    with pytest.warns(UnvalidatedEnvWarning):  # unproven: played all the same, sandboxed
        game = open_id("spade/TaTicTacToeV0-v1", seat=None)  # the whole game: both seats
    try:
        game.reset(seed=11)
        for move in ["[0]", "[3]", "[1]", "[4]", "[2]"]:
            assert "Available Moves" in game.observe(game.agent_selection)
            game.step(move)
        assert game.rewards == {"player_0": 1.0, "player_1": 0.0}
    finally:
        game.close()
    env = gym.make("spade/TaNimV0-v1")  # seat 0 against TextArena-Nim's perfect player
    try:
        obs, _ = env.reset(seed=4)
        assert "Welcome to Nim" in obs
        for move in env.unwrapped.solution():
            *_, info = env.step(move)
        assert info["success"]
    finally:
        env.close()


class _Mover(ChatModel):
    """Answers every turn with a cell it has not taken yet (deterministic)."""

    name = "mover"

    def generate(self, conversations, params=None):
        out = []
        for conversation in conversations:
            moves = sum(m["role"] == "assistant" for m in conversation)
            text = f"[{(moves * 2 + len(conversation[0]['content'])) % 9}]"
            out.append(Completion(text=text, token_ids=(1,), logprobs=(-0.1,)))
        return out


def test_rollouts_play_an_imported_game_in_self_play(arena):
    from spade_envs.agent import RolloutConfig, rollout

    url, _ = arena
    config = RolloutConfig(opponent="self", max_turns=12, seed=3, audit_share=None)
    episodes = rollout(
        _Mover(), ["spade/TaTicTacToeV0-v1"], plays=2, config=config, registry=Registry(url)
    )
    for episode in episodes:
        assert set(episode.messages) == {"player_0", "player_1"}
        assert [t.seat for t in episode.turns[:2]] == ["player_0", "player_1"]
        assert not episode.failed, episode.outcome
        assert sorted(episode.seat_returns.values()) in ([0.0, 1.0], [0.5, 0.5], [0.0, 0.0])


def test_the_cli_imports_textarena_and_lists_what_is_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    runner = CliRunner()
    listed = runner.invoke(main, ["import", "--suite", "textarena", "--list-tasks"])
    names = listed.output.split()
    assert listed.exit_code == 0 and "TicTacToe-v0" in names
    assert not any(n.endswith(("-raw", "-train")) for n in names)
    result = runner.invoke(
        main, ["import", "--suite", "textarena", "--tasks", "Mastermind-v0,Hangman-v0"]
    )
    assert result.exit_code == 0, result.output
    assert "textarena: 1 environments planned" in result.output and "1 validated" in result.output
    assert "unavailable: Hangman-v0 level 0: its code calls nltk.download" in result.output
    shown = runner.invoke(main, ["show", "spade/TaMastermindV0-v1"])
    assert "suite: textarena 0.7.4 task Mastermind-v0 level 0 (MIT" in shown.output


def test_the_trainer_trains_on_an_imported_game_in_self_play(arena, tmp_path, monkeypatch):
    import shutil

    from spade_envs.agent import RolloutEngine
    from spade_envs.trainer.config_io import load_config
    from spade_envs.trainer.loop import SelfPlayTrainer

    from ..model_support import torch_threads
    from ..trainer.trainer_support import RESUME_SETTINGS, save_tiny_llama

    url, _ = arena
    registry_file = tmp_path / "registry.db"
    shutil.copy(url[len("sqlite:///") :], registry_file)
    config = load_config(
        "cpu-test",
        [
            f"model.spec={save_tiny_llama(tmp_path / 'model')}",
            *RESUME_SETTINGS,
            "iterations=1",
            "mode=fixed-pool",
            "agent.fixed_pool=spade/TaTicTacToeV0-v1",
            "agent.opponent=self",
            "agent.max_turns=4",
            "agent.pool_envs=0",
            "eval.every=0",
            f"registry_url=sqlite:///{registry_file}",
        ],
    )
    played = []
    run = RolloutEngine.run

    def recording(self, *args, **kwargs):
        episodes = run(self, *args, **kwargs)
        played.extend(episodes)
        return episodes

    monkeypatch.setattr(RolloutEngine, "run", recording)
    with torch_threads(1):
        trainer = SelfPlayTrainer(config, tmp_path / "run")
        [record] = trainer.run()
    # An unproven game may be named in a fixed pool (suite pools take validated ones only).
    assert trainer.parts.fixed_pool == ["spade/TaTicTacToeV0-v1"]
    assert record["plays"] == 2 and record["plays_failed"] == 0
    assert record["tokens_agent"] > 0
    # Played in self-play: the random model's two invalid moves lose player_0 the game
    # before player_1 speaks, as TextArena rules.
    assert [e.opponent for e in played] == ["self", "self"]
    assert all(e.seat_returns == {"player_0": 0.0, "player_1": 1.0} for e in played)
