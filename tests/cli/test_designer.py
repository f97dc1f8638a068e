"""``spade-envs generate`` through the CLI runner, against a real OpenAI-compatible HTTP
server on 127.0.0.1 (the package's own server, serving a scripted model)."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from spade_envs.cli import main
from spade_envs.llm import serve
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.registry import Registry

from ..generator.test_pipeline import FENCED, VALID


class Scripted(ChatModel):
    """Writes a valid module for designer prompts and a leak-free hint for hint prompts."""

    name = "scripted"

    def generate(self, conversations, params=None):
        out = []
        for messages in conversations:
            if "You write hints" in messages[-1]["content"]:
                out.append(Completion("Halve the remaining range with every guess."))
            elif "Write a NEW environment" in messages[-1]["content"]:
                out.append(Completion(FENCED.format(VALID)))
            else:
                out.append(Completion("No."))
        return out


def test_generate_through_an_http_server(tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'gen.db'}")
    with serve(Scripted()) as server:
        result = CliRunner().invoke(
            main,
            [
                "generate",
                "--model",
                f"openai:{server.url}",
                "--n",
                "3",
                "--skill",
                "math",
                "--embedder",
                "hashing",
                "--hints",
                "--seed",
                "3",
            ],
        )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "registered spade/OrbitGuess-v1" in out
    assert "hint for spade/OrbitGuess-v1: stored" in out
    # The same module three times: one registered, the other two are not novel.
    assert "not novel" in out and re.search(r"^\s+registered\s+1$", out, re.M)
    registry = Registry()
    record = registry.get("spade/OrbitGuess-v1")
    assert record.hint == "Halve the remaining range with every guess."
    assert record.model == "scripted"  # the name the server reports


def test_generate_with_an_unreachable_server_reports_and_exits_non_zero(tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'gen.db'}")
    result = CliRunner().invoke(
        main,
        ["generate", "--model", "openai:http://127.0.0.1:9#m", "--n", "2", "--embedder", "hashing"],
    )
    # Nothing was designed at all: the table, then a non-zero exit saying why.
    assert result.exit_code == 1, result.output
    assert "model error" in result.output
    assert re.search(r"^\s+generated\s+0$", result.output, re.M)
    assert "failed attempts: 2 model_error of 2" in result.output
    assert "Error: Every one of the 2 attempts failed before any code could be judged" in (
        result.output
    )


class Filler(ChatModel):
    """Answers scaffold prompts with a filling that moves the range (a new value each time)."""

    name = "filler"

    def __init__(self):
        self.upper = 20
        self.schemas = []

    def generate(self, conversations, params=None):
        out = []
        for messages in conversations:
            self.schemas.append(params.json_schema if params else None)
            assert "Reply with JSON only" in messages[-1]["content"]
            self.upper += 17
            out.append(Completion(json.dumps({"knobs": {"upper": self.upper}})))
        return out


def test_generate_in_scaffold_mode_through_an_http_server(tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'gen.db'}")
    args = ["--mode", "scaffold", "--parent", "spade/NumberGuess-v1", "--embedder", "hashing"]
    with serve(Filler()) as server:
        result = CliRunner().invoke(
            main, ["generate", "--model", f"openai:{server.url}", "--n", "2", *args]
        )
    assert result.exit_code == 0, result.output
    assert "mode scaffold" in result.output and re.search(
        r"^\s+registered\s+2$", result.output, re.M
    )
    children = [r for r in Registry().list(origin="designer") if r.name.startswith("NumberGuessX")]
    assert len(children) == 2 and all(c.parents == ("spade/NumberGuess-v1",) for c in children)


def test_generate_sends_the_fillings_schema_unless_told_free(tmp_path, monkeypatch):
    args = ["--mode", "scaffold", "--parent", "spade/NumberGuess-v1", "--embedder", "hashing"]
    seen = {}
    for switch in ("--constrained", "--free"):
        monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / (switch + '.db')}")
        filler = Filler()
        with serve(filler) as server:
            result = CliRunner().invoke(
                main, ["generate", "--model", f"openai:{server.url}", "--n", "2", switch, *args]
            )
        assert result.exit_code == 0, result.output
        seen[switch] = filler.schemas
    # Constrained (the default): each request carried the parent's filling schema, which
    # the server honoured as response_format; free: none.
    assert len(seen["--constrained"]) == 2
    for schema in seen["--constrained"]:
        assert "upper" in schema["properties"]["knobs"]["properties"]
        assert schema["additionalProperties"] is False
    assert seen["--free"] == [None, None]


def test_generate_refuses_a_parent_without_holes_before_loading_a_model(tmp_path, monkeypatch):
    from spade_envs.validation.static import static_metadata

    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'gen.db'}")
    plain = "\n".join(line for line in VALID.splitlines() if "# hole" not in line) + "\n"
    Registry().register(plain, static_metadata(plain, origin="imported"), status="validated")
    result = CliRunner().invoke(
        main,
        ["generate", "--model", "openai:http://127.0.0.1:9#m", "--parent", "spade/OrbitGuess-v1"],
    )
    assert result.exit_code == 2, result.output
    assert "spade/OrbitGuess-v1 declares no holes" in result.output
    assert "loading" not in result.output  # refused before any model
    edit = CliRunner().invoke(
        main, ["generate", "--mode", "edit", "--parent", "spade/NumberGuess-v1"]
    )
    assert edit.exit_code == 2 and "--parent is for --mode scaffold" in edit.output
