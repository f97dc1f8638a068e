"""The README and docs stay true: their Python examples run, their commands exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spade_envs.cli import main
from spade_envs.seeds import seed_names

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code_blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_python_examples_run(path, tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'docs.db'}")
    monkeypatch.chdir(tmp_path)
    for block in code_blocks(path, "python"):
        exec(compile(block, str(path), "exec"), {"__name__": "__docs__"})


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_cli_commands_in_docs_exist(path):
    commands = set(main.commands)
    for block in code_blocks(path, "bash"):
        for used in re.findall(r"spade-envs ([a-z][a-z-]*)", block):
            assert used in commands, f"{path.name} uses unknown command `spade-envs {used}`"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_cli_options_in_docs_exist(path):
    for block in code_blocks(path, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            for name, rest in re.findall(r"spade-envs ([a-z][a-z-]*)([^#|&;]*)", line):
                command = main.commands.get(name)
                if command is None:
                    continue  # reported by test_cli_commands_in_docs_exist
                known = {"--help"} | {
                    opt for param in command.params for opt in (*param.opts, *param.secondary_opts)
                }
                for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest):
                    assert option in known, f"{path.name}: `spade-envs {name}` has no {option}"


def test_readme_lists_every_seed():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [name for name in seed_names() if f"`{name}`" not in readme]
    assert missing == []
