"""Shared pieces of the corpus browser's tests: a registry with seeds, lineage, play
statistics, a validation report, embeddings and a model-written environment full of
markup; a real server on 127.0.0.1; a small HTTP client that keeps cookies."""

from __future__ import annotations

import dataclasses
import http.cookiejar
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from spade_envs import describe, seed_class
from spade_envs.core.metadata import EnvMetadata
from spade_envs.seeds import seed_source
from spade_envs.validation.report import CheckResult, ValidationReport

#: Seeds registered by :func:`fill_registry` (name, status, origin).
SEEDS = (
    ("NumberGuess", "validated", "seed"),
    ("Mastermind", "validated", "seed"),
    ("MazeExplore", "validated", "seed"),
    ("Nim", "validated", "seed"),
    ("CodeTrace", "validated", "designer"),
    ("LightsOut", "candidate", "imported"),
    ("BankTransfers", "retired", "seed"),
    ("KnapsackPick", "rejected", "designer"),
)

EVIL_DESCRIPTION = (
    "Says <script>window.__pwned = 1; alert('description')</script> and "
    '<img src=x onerror="window.__pwned = 2"> & "quotes".'
)
EVIL_SOURCE = '''"""A model-written environment whose text is full of markup."""

from spade_envs import TextEnv, boxed, extract_answer


class EvilMarkup(TextEnv):
    skill = "logic"
    description = (
        "Says <script>window.__pwned = 1; alert('description')</script> and "
        '<img src=x onerror="window.__pwned = 2"> & "quotes".'
    )
    max_turns = 3

    def _reset(self) -> str:
        return (
            "<script>window.__pwned = 3</script><img src=x onerror=\\"window.__pwned = 4\\"> "
            "Answer \\\\boxed{ok}."
        )

    def _step(self, action: str):
        if extract_answer(action) == "ok":
            return '<b onmouseover="window.__pwned = 5">won</b><svg onload="window.__pwned=6">', 1.0, True
        return '<iframe src="javascript:window.__pwned = 7"></iframe>', 0.0, False

    def hint(self) -> str:
        return "<script>window.__pwned = 8</script>say ok"

    def solution(self) -> list[str]:
        return [boxed("ok")]
'''


def report(passed: bool = True) -> ValidationReport:
    return ValidationReport(
        passed=passed,
        checks=[
            CheckResult("syntax", True, "", 0.001),
            CheckResult("solution", passed, "" if passed else "the solution lost on seed 3", 0.2),
            CheckResult("fuzz", True, "", 1.5, details={"examples": 200, "note": "<b>bold?</b>"}),
        ],
        env_name="NumberGuess",
        budget="fast",
        timings={"total": 1.7},
    )


def fill_registry(registry) -> dict[str, str]:
    """Register the seeds, a child version, the markup environment and their evidence."""
    ids = {}
    document = registry.add_document(
        "A grounding text about <b>guessing</b> numbers.", source="docs/<guess>.txt"
    )
    for name, status, origin in SEEDS:
        meta = dataclasses.replace(describe(seed_class(name)), origin=origin)
        kwargs = {"report": report()} if name == "NumberGuess" else {}
        if name == "CodeTrace":
            kwargs["document_id"] = document
        ids[name] = registry.register(seed_source(name), meta, status=status, **kwargs).id
    child_meta = dataclasses.replace(
        describe(seed_class("NumberGuess")),
        name="NumberGuessHarder",
        origin="designer",
        parents=(ids["NumberGuess"],),
        description="Guess a hidden number in a wider range (derived from NumberGuess).",
    )
    source = seed_source("NumberGuess").replace("class NumberGuess(", "class NumberGuessHarder(")
    ids["NumberGuessHarder"] = registry.register(
        source, child_meta, status="validated", document_id=document, model="tiny-model"
    ).id
    evil = EnvMetadata(
        name="EvilMarkup",
        kind="text",
        skill="logic",
        description=EVIL_DESCRIPTION,
        max_turns=3,
        reward_range=(0.0, 1.0),
        origin="designer",
        parents=("<script>window.__pwned = 9</script>",),
    )
    ids["EvilMarkup"] = registry.register(
        EVIL_SOURCE,
        evil,
        status="validated",
        hint='<img src=x onerror="window.__pwned = 10">',
        extra={"note": "<script>window.__pwned = 11</script>"},
        document_id=registry.add_document("<script>window.__pwned = 12</script>", source="<x>"),
    ).id
    stats = {
        "NumberGuess": [("ckpt-0", 0.5, 0.25, 0.25), ("ckpt-1", 0.9, 0.4, 0.4)],
        "Mastermind": [("ckpt-1", 0.3, 0.1, 0.1)],
        "MazeExplore": [("ckpt-1", 0.6, 0.6, 0.6)],
        "EvilMarkup": [("ckpt-1", 0.2, 0.5, 0.5)],
    }
    for name, rows in stats.items():
        for checkpoint, with_hint, without, win in rows:
            registry.record_play_stats(
                ids[name],
                checkpoint,
                plays_with_hint=8,
                plays_without_hint=8,
                mean_return_with_hint=with_hint,
                mean_return_without_hint=without,
                win_rate=win,
            )
    registry.add_validation(ids["NumberGuess"], report(passed=False))
    return ids


def embed(registry) -> None:
    from spade_envs.memory import Memory, MemoryConfig

    Memory(registry, MemoryConfig(embedder="hashing", index="exact")).sync()


def write_run(directory: Path, iterations: int = 6) -> Path:
    """A self-play run directory as the trainer writes it."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "metrics.jsonl").open("w") as out:
        for i in range(iterations):
            row = {
                "iteration": i,
                "designer_yield": 0.1 * i,
                "mean_regret": 0.05 * i,
                "agent_return_with_hint": 0.4 + 0.05 * i,
                "agent_return_without_hint": 0.2 + 0.03 * i,
                "eval_return": 0.3,
                "tokens_per_s": 100 + i,
                "model": "smollm2",  # not a number: not a series
            }
            out.write(json.dumps(row) + "\n")
    (directory / "config.json").write_text('{"preset": "<tiny>"}')
    return directory


class Client:
    """urllib with a cookie jar and no redirect surprises: returns (status, headers, text)."""

    def __init__(self, base: str, follow: bool = True):
        self.base = base.rstrip("/")
        self.jar = http.cookiejar.CookieJar()
        handlers: list = [urllib.request.HTTPCookieProcessor(self.jar)]
        if not follow:
            handlers.append(_NoRedirect())
        self.opener = urllib.request.build_opener(*handlers)

    def request(self, path: str, data: dict | None = None, headers: dict | None = None):
        body = None if data is None else urllib.parse.urlencode(data).encode()
        req = urllib.request.Request(self.base + path, data=body, headers=headers or {})
        try:
            with self.opener.open(req, timeout=60) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, exc.read()

    def get(self, path: str, **kw):
        status, headers, body = self.request(path, **kw)
        return status, headers, body.decode("utf-8", "replace")

    def post(self, path: str, data: dict, **kw):
        status, headers, body = self.request(path, data=data, **kw)
        return status, headers, body.decode("utf-8", "replace")

    def csrf(self) -> str:
        for cookie in self.jar:
            if cookie.name == "spade_csrf":
                return cookie.value
        self.get("/")
        return self.csrf()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def start(config, registry):
    """A real server on 127.0.0.1 in a thread; returns (server, thread)."""
    from spade_envs.web.server import make_server

    server = make_server(config, registry=registry)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
    )
    thread.start()
    return server, thread


def stop(server, thread) -> None:
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def web_registry(tmp_path_factory):
    """A SQLite registry filled by :func:`fill_registry`, embedded with the hashing embedder."""
    from spade_envs.registry import Registry

    path = tmp_path_factory.mktemp("web-registry") / "registry.db"
    registry = Registry(f"sqlite:///{path}")
    ids = fill_registry(registry)
    embed(registry)
    registry.ids = ids
    yield registry
    registry.close()


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    write_run(root / "run-a")
    write_run(root / "run-b", iterations=3)
    return root


@pytest.fixture(scope="module")
def server(web_registry, runs_dir):
    """The browser on a free port of 127.0.0.1 over :func:`web_registry`."""
    from spade_envs.web.config import ServeConfig

    config = ServeConfig(port=0, runs_dir=str(runs_dir), quiet=True, embedder="hashing")
    srv, thread = start(config, web_registry)
    srv.app.catalog.refresh()
    srv.app.vectors.refresh(force=True)
    srv.app.vectors.wait_for_novelty()
    yield srv
    stop(srv, thread)


def artifacts_dir(tmp_path_factory) -> Path:
    """Where screenshots go: $SPADE_TEST_ARTIFACTS, else a temporary directory."""
    chosen = os.environ.get("SPADE_TEST_ARTIFACTS")
    path = Path(chosen) / "web" if chosen else tmp_path_factory.mktemp("web-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


#: Directories screenshots were saved to in this session (named in the summary).
SCREENSHOT_DIRS: list[Path] = []


def pytest_terminal_summary(terminalreporter):
    for path in SCREENSHOT_DIRS:
        terminalreporter.write_line(f"corpus browser screenshots: {path}")
