"""Registry environments in verifiers 0.4, the real package in ``.venv-verifiers``: plays
through ``load_environment`` and verifiers' ``Env.run_episode``, an exported package under
verifiers' own ``vf-eval``, failures as errored episodes, the status gate, the hint, and a
real model (SmolLM2 over our OpenAI-compatible server).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_envs.agent.policy import with_hint
from spade_envs.cli import main as cli
from spade_envs.core.metadata import EnvMetadata
from spade_envs.error import SpadeError
from spade_envs.runtime import open_record, register_seed

from ..agent.conftest import guess_reply
from ..play_support import door_episode
from .test_trl import CRASH_STEP
from .verifiers_support import (
    VF_BIN,
    VF_PYTHON,
    PlanModel,
    require_verifiers_venv,
    run_verifiers,
    serve_model,
    vf_environ,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "verifiers_eval.py"


@pytest.fixture
def registry(tmp_path, monkeypatch):
    from spade_envs.registry import Registry

    url = f"sqlite:///{tmp_path / 'registry.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    reg = Registry(url)
    reg.ids = {"NumberGuess": register_seed(reg, "NumberGuess")}
    meta = EnvMetadata("CrashStep", "text", "logic", "raises", 3, (0.0, 1.0), origin="designer")
    reg.ids["CrashStep"] = reg.register(CRASH_STEP, meta, status="validated").id
    yield reg
    reg.close()


def test_a_missing_verifiers_names_its_venv(monkeypatch):
    monkeypatch.delitem(sys.modules, "spade_envs.integrations.verifiers", raising=False)
    monkeypatch.setitem(sys.modules, "verifiers", None)
    with pytest.raises(SpadeError, match=r"needs verifiers 0\.4.*make \.venv-verifiers"):
        import spade_envs.integrations.verifiers  # noqa: F401


def test_a_failed_play_is_an_errored_episode_never_a_zero(registry):
    model = PlanModel()
    model.plan = ["\\boxed{1}"]
    with serve_model(model) as server:
        episodes, counts, refusal = run_verifiers(
            {
                "registry": registry.url,
                "envs": [registry.ids["CrashStep"]],
                "base_url": f"{server.url}/v1",
                "model": model.name,
            }
        )
    assert refusal is None
    (episode,) = episodes
    # The trace itself is errored: verifiers' averages leave it out, not count it as 0.
    assert not episode["ok"] and episode["trace_ok"] is False
    assert any("the play failed (env_error)" in e for e in episode["errors"]), episode["errors"]
    assert "episode_return" not in episode["rewards"]  # no score at all, not a zero
    assert episode["spade"]["failure"] == "env_error"
    assert counts["spade/failed_env_error"] == 1 and counts["spade/plays"] == 1


def test_the_status_gate_and_the_hint(registry):
    meta = EnvMetadata("CandidateOne", "text", "logic", "new", 3, (0.0, 1.0), origin="designer")
    candidate = registry.register(
        CRASH_STEP.replace("CrashStep", "CandidateOne"), meta, status="candidate"
    ).id
    model = PlanModel()
    model.plan = ["\\boxed{50}"]
    with serve_model(model) as server:
        base = {"registry": registry.url, "base_url": f"{server.url}/v1", "model": model.name}
        _, _, refusal = run_verifiers({**base, "envs": [candidate]})
        assert refusal is not None and "is candidate, not validated" in refusal["error"]
        episodes, _, refusal = run_verifiers(
            {**base, "envs": [candidate], "allow_unvalidated": True}
        )
        assert refusal is None and len(episodes) == 1
        # A query, not IDs: the newest validated math version of each name (NumberGuess).
        # One turn: the hint is in the prompt, and the model's every further turn starts
        # verifiers' chat program again (a second each) for nothing asserted here.
        hinted, _, _ = run_verifiers(
            {
                **base,
                "query": {"skill": "math", "kind": "text"},
                "seeds": [4],
                "hint": True,
                "max_turns": 1,
            }
        )
        _, _, nothing = run_verifiers({**base, "query": {"skill": "chemistry"}})
    assert "No stored version matches" in nothing["error"]
    env = open_record(registry.get(registry.ids["NumberGuess"]))
    first, _ = env.reset(seed=4)
    hint = env.hint()
    env.close()
    (episode,) = hinted
    assert episode["task"]["env_id"] == registry.ids["NumberGuess"]
    assert hint and with_hint(str(first), hint) in episode["prompt"]


def _vf_eval(package_dir, args, *, server, out):
    return subprocess.run(
        [
            str(VF_BIN / "vf-eval"),
            *args,
            "-m",
            "scripted",
            "--client.base-url",
            f"{server.url}/v1",
            "--client.api-key-var",
            "SPADE_TEST_KEY",
            "--no-push",
            "--no-rich",
            "-o",
            str(out),
        ],
        env=vf_environ(PYTHONPATH=str(package_dir), SPADE_VERIFIERS_CACHE=str(out / "cache")),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_an_exported_package_runs_under_vf_eval(registry, tmp_path):
    require_verifiers_venv()
    env_id = registry.ids["NumberGuess"]
    result = CliRunner().invoke(
        cli, ["export", str(tmp_path / "games"), "--format", "verifiers", "--id", env_id]
    )
    assert result.exit_code == 0, result.output
    assert "vf-eval spade-verifiers-games" in result.output
    installed = tmp_path / "site"
    pip = subprocess.run(
        [str(VF_PYTHON), "-m", "pip", "install", "-q", "--no-deps", "--target", str(installed)]
        + [str(tmp_path / "games")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    model = PlanModel(fallback=guess_reply)
    with serve_model(model) as server:
        ran = _vf_eval(
            installed,
            ["spade-verifiers-games", "-n", "2", "-r", "1", "--env.taskset.num-seeds", "2"],
            server=server,
            out=tmp_path / "out",
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert "validating 1 packaged version(s)" in ran.stdout + ran.stderr
        typo = _vf_eval(
            installed,
            ["spade-verifiers-games", "-n", "1", "--env.taskset.envs", '["spade/NumberGues-v1"]'],
            server=server,
            out=tmp_path / "out2",
        )
    assert typo.returncode != 0 and "Did you mean" in typo.stdout + typo.stderr
    (traces,) = (tmp_path / "out").rglob("traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    assert len(episodes) == 2 and all(e["ok"] for e in episodes)
    sha = registry.get(env_id).sha256
    for episode in episodes:
        (trace,) = episode["traces"]
        spade = trace["info"]["spade"]
        assert spade["sha256"] == sha and spade["env_id"] == env_id
        # What the model said, replayed through the door, gives the rewards verifiers got.
        replies = [
            n["message"]["content"] for n in trace["nodes"] if n["message"]["role"] == "assistant"
        ]
        _, rewards = door_episode(registry, env_id, spade["seed"], replies)
        assert spade["rewards"] == rewards
        assert trace["rewards"]["episode_return"]["score"] == sum(rewards)


@pytest.mark.slow
def test_the_example_evaluates_smollm2_through_verifiers(registry):
    """examples/verifiers_eval.py, a real model (SmolLM2 served by our server)."""
    from spade_envs.llm import load_model

    require_verifiers_venv()
    with load_model("smollm2") as model, serve_model(model) as server:
        # 32 tokens a reply: room for a \boxed{} answer. The model's tokens on CPU are most
        # of this test's time, and no assertion is about how long its replies are.
        ran = subprocess.run(
            [str(VF_PYTHON), str(EXAMPLE), registry.ids["NumberGuess"], "--registry"]
            + [registry.url, "--base-url", f"{server.url}/v1", "--model", model.name]
            + ["--seeds", "2", "--max-turns", "3", "--max-tokens", "32", "--json"],
            env=vf_environ(),
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = ran.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    assert summary["episodes"] == 2 and summary["spade/plays"] == 2
    # A 135M model plays badly, but every play is scored or failed by kind, and said so.
    assert summary["mean_return"] is not None or summary["spade/failed"] == 2
    assert sum("#seed=" in line for line in lines[:-1]) == 2
    assert 0 < summary["env_share"] < 0.5


def test_the_docs_python_example_runs_in_the_verifiers_venv(registry):
    """docs/verifiers.md's ``py`` block (test_docs runs ``python`` blocks in .venv; this
    one needs verifiers), against a served model named as the page names it."""
    require_verifiers_venv()
    page = (Path(__file__).resolve().parents[2] / "docs" / "verifiers.md").read_text()
    (block,) = re.findall(r"```py\n(.*?)```", page, flags=re.S)
    model = PlanModel(fallback=guess_reply)
    model.name = "smollm2"
    with serve_model(model) as server:
        ran = subprocess.run(
            [str(VF_PYTHON), "-c", block.replace("http://127.0.0.1:8000/v1", f"{server.url}/v1")],
            env=vf_environ(SPADE_REGISTRY_URL=registry.url, OPENAI_API_KEY="unused"),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = ran.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines[:2]] == ["True", "True"]
    assert "'spade/plays': 2.0" in lines[-1]


def test_an_old_verifiers_is_refused_with_the_tested_release(monkeypatch):
    import types

    monkeypatch.delitem(sys.modules, "spade_envs.integrations.verifiers", raising=False)
    monkeypatch.setitem(sys.modules, "verifiers", types.SimpleNamespace(__version__="0.3.1"))
    with pytest.raises(SpadeError, match=r"verifiers 0\.3\.1 is installed; .*tested with 0\.4\.x"):
        import spade_envs.integrations.verifiers  # noqa: F401


def test_a_model_server_that_fails_is_a_model_error_never_a_zero(registry):
    """The model's server answers 500 to every request: the play is counted as a
    model_error and not scored."""

    class Failing(PlanModel):
        def generate(self, conversations, params=None):
            from spade_envs.llm.base import Completion

            return [Completion(text="", error="the GPU caught fire") for _ in conversations]

    model = Failing()
    with serve_model(model) as server:
        episodes, counts, refusal = run_verifiers(
            {
                "registry": registry.url,
                "envs": [registry.ids["NumberGuess"]],
                "base_url": f"{server.url}/v1",
                "model": model.name,
            },
            timeout=300,
        )
    assert refusal is None
    (episode,) = episodes
    assert not episode["ok"] and episode["trace_ok"] is False
    assert "episode_return" not in episode["rewards"]
    assert counts["spade/failed_model_error"] == 1 and counts["spade/plays"] == 1
