"""Environment cards over real HTTP: description, example episode (played in the sandbox),
knobs, tags, licence and origin, the snippet, version history with diffs, and the
single-environment package."""

from __future__ import annotations

import html
import io
import json
import re
import subprocess
import sys
import threading
import time
import zipfile

import pytest

from spade_envs import seed_class
from spade_envs.core.metadata import EnvMetadata
from spade_envs.web.examples import WAIT_S, ExampleEpisodes, examples_of
from spade_envs.web.pages_card import CLONE_INSTALL, install_line

from .conftest import Client

RAISES = """from spade_envs import TextEnv, boxed


class SolutionRaises(TextEnv):
    skill = "logic"
    description = "Its reference solution raises."
    max_turns = 2

    def _reset(self) -> str:
        return "Say <b>anything</b>."

    def _step(self, action: str):
        return "ok", 1.0, True

    def solution(self) -> list[str]:
        raise ValueError("no way <script>window.__pwned = 20</script>")
"""

LOSES = """from spade_envs import TextEnv, boxed


class SolutionLoses(TextEnv):
    skill = "logic"
    description = "Its reference solution gives the wrong answer."
    max_turns = 2

    def _reset(self) -> str:
        return "Answer \\\\boxed{yes}."

    def _step(self, action: str):
        return "wrong", 0.0, True

    def solution(self) -> list[str]:
        return [boxed("no")]
"""

LOOPS = """from spade_envs import TextEnv


class ResetLoops(TextEnv):
    skill = "logic"
    description = "Its reset never returns."
    max_turns = 2

    def _reset(self) -> str:
        while True:
            pass

    def _step(self, action: str):
        return "ok", 1.0, True

    def solution(self) -> list[str]:
        return ["x"]
"""

TWO_VERSIONS = """from spade_envs import TextEnv, boxed


class CardDiff(TextEnv):
    skill = "logic"
    description = "Answer yes."
    max_turns = {turns}
    knobs = {{"level": {level}, "strict": True}}

    def _reset(self) -> str:
        return "Answer \\\\boxed{{yes}}."

    def _step(self, action: str):
        return "done", 1.0, True

    def solution(self) -> list[str]:
        return [boxed("yes")]
"""


def _meta(name: str, **changes) -> EnvMetadata:
    fields = dict(
        name=name,
        kind="text",
        skill="logic",
        description=f"{name}: a test environment.",
        max_turns=2,
        reward_range=(0.0, 1.0),
        origin="designer",
    )
    fields.update(changes)
    return EnvMetadata(**fields)


@pytest.fixture(scope="module")
def registered(server):
    """Extra versions: two of CardDiff, failing examples, an imported suite task."""
    registry = server.app.registry
    ids = {}
    ids["CardDiff1"] = registry.register(
        TWO_VERSIONS.format(turns=3, level=1), _meta("CardDiff"), status="validated"
    ).id
    ids["CardDiff2"] = registry.register(
        TWO_VERSIONS.format(turns=5, level=2), _meta("CardDiff"), status="candidate"
    ).id
    for name, source in (("SolutionRaises", RAISES), ("SolutionLoses", LOSES)):
        ids[name] = registry.register(source, _meta(name), status="candidate").id
    suite_source = TWO_VERSIONS.format(turns=1, level=0).replace("CardDiff", "RlveCardTask")
    ids["RlveCardTask"] = registry.register(
        suite_source,
        _meta("RlveCardTask", origin="imported", max_turns=1),
        status="validated",
        suite="rlve",
        extra={
            "suite": {
                "id": "rlve",
                "licence": "MIT",
                "task": "card",
                "homepage": "https://github.com/Zhiyuan-Zeng/RLVE",
            }
        },
    ).id
    server.app.catalog.refresh()
    return ids


@pytest.fixture(scope="module")
def client(server):
    return Client(server.url)


@pytest.fixture(scope="module", autouse=True)
def patient(server):
    """Pages wait for their example episode (the default is a short wait, then a reload)."""
    examples = examples_of(server.app)
    examples.wait_s = 30.0
    yield examples
    examples.wait_s = WAIT_S


def section(text: str, ident: str) -> str:
    """The element with ``id=ident`` (up to the end of its first enclosing block)."""
    start = text.index(f'id="{ident}"')
    end = min(i for i in (text.find("</section>", start), text.find("</table>", start)) if i != -1)
    return text[start:end]


def pre_text(text: str, ident: str) -> str:
    found = re.search(rf'<pre id="{ident}">(.*?)</pre>', text, re.S)
    assert found, ident
    return html.unescape(found.group(1))


def example_rows(text: str) -> list[tuple[str, str, str, str]]:
    """(turn, action, observation, reward) of each row of the example table, unescaped."""
    table = text.split('id="example"', 1)[1].split("</table>", 1)[0]
    rows = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>", 1)[1], re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        plain = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells]
        if len(plain) == 4:
            rows.append(tuple(plain))
    return rows


def test_the_card_shows_description_knobs_tags_licence_and_the_snippet(client, server):
    status, _, text = client.get("/env/NumberGuess-v1")
    assert status == 200
    description = seed_class("NumberGuess").description
    assert html.unescape(re.search(r'id="description">(.*?)</div>', text, re.S).group(1)) == (
        " ".join(description.split())
    )
    knobs = section(text, "knobs")
    assert "<td><code>upper</code></td><td><code>100</code></td><td>int</td>" in knobs
    tags = section(text, "tags")
    for href in ("/envs?kind=text", "/envs?skill=math", "/envs?origin=seed"):
        assert f'href="{href}"' in tags
    assert "multi-turn (≤ 8)" in tags
    licence = section(text, "licence")
    assert (
        'id="licence-name">Apache-2.0<' in licence and "a seed packaged with spade-envs" in licence
    )
    assert 'id="origin">seed<' in licence
    # spade-envs is not on PyPI: the card says how to install it from the repository.
    assert pre_text(text, "snippet-install") == install_line() == CLONE_INSTALL
    assert pre_text(text, "snippet-install").startswith("pip install -e .   # in a clone of")
    assert pre_text(text, "snippet") == (
        "import gymnasium as gym, spade_envs\n\n"
        'env = gym.make("spade/NumberGuess-v1")\n'
        "observation, info = env.reset(seed=0)\n"
        '# difficulty knobs (defaults): gym.make("spade/NumberGuess-v1", upper=100)'
    )
    assert 'data-copy="snippet"' in text and 'data-copy="snippet-install"' in text
    assert 'href="/env/NumberGuess-v1/package.zip"' in text
    assert 'id="snippet-package"' not in text  # a seed needs no package


def test_a_designer_version_and_a_suite_task_say_where_they_come_from(client, registered):
    _, _, text = client.get("/env/NumberGuessHarder-v1")
    licence = section(text, "licence")
    assert 'id="licence-name">not recorded<' in licence and "tiny-model" in licence
    assert 'id="origin">designer<' in licence
    assert pre_text(text, "snippet-package") == (
        "import gymnasium as gym, spade_corpus_numberguessharder_v1\n\n"
        'env = gym.make("spade/NumberGuessHarder-v1")'
    )
    assert "pip install spade-corpus-numberguessharder-v1.zip" in text
    assert "grounded" in section(text, "tags")
    history = section(text, "history")
    assert 'vs its parent <a href="/env/NumberGuess-v1">spade/NumberGuess-v1</a>' in history
    assert '<span class="added">+1</span> <span class="removed">−1</span>' in history
    _, _, text = client.get("/env/RlveCardTask-v1")
    licence = section(text, "licence")
    assert 'id="licence-name">MIT<' in licence and "the rlve suite" in licence
    assert '<a href="https://github.com/Zhiyuan-Zeng/RLVE">' in licence
    tags = section(text, "tags")
    assert 'href="/envs?suite=rlve"' in tags and 'href="/envs?origin=imported"' in tags
    assert "single-turn" in tags
    knobs = section(text, "knobs")
    assert "<code>level</code></td><td><code>0</code></td><td>int</td>" in knobs
    assert "<code>strict</code></td><td><code>true</code></td><td>bool</td>" in knobs


def test_the_example_episode_of_a_seed_is_its_solution_winning_in_the_sandbox(client, server):
    examples = examples_of(server.app)
    _, _, text = client.get("/env/NumberGuess-v1")
    rows = example_rows(text)
    # What the trusted seed does in this process from seed 0, step by step.
    env = seed_class("NumberGuess")()
    opening, _ = env.reset(seed=0)
    expected = [("0", "reset(seed=0)", opening, "")]
    for turn, action in enumerate(env.solution(), 1):
        observation, reward, terminated, truncated, _ = env.step(action)
        expected.append((str(turn), action, observation, f"{reward:g}"))
        if terminated or truncated:
            break
    assert rows == expected and len(rows) > 2
    assert re.search(r'id="example-return">1<', text)
    outcome = section(text, "example-outcome")
    assert "won" in outcome and "not won" not in outcome and "terminated" in outcome
    assert 'id="example-failure"' not in text
    record = server.app.registry.get("spade/NumberGuess-v1")
    kept = examples.cached(record)
    assert kept is not None and kept.won and "bubblewrap" in kept.isolation  # a sandbox worker
    played = examples.played
    again = client.get("/env/NumberGuess-v1")[2]
    assert examples.played == played  # the second view is served from the cache
    assert example_rows(again) == rows


def test_a_game_example_is_played_from_seat_zero(client):
    _, _, text = client.get("/env/Nim-v1")
    rows = example_rows(text)
    assert len(rows) >= 2 and rows[0][1] == "reset(seed=0)"
    assert re.search(r'id="example-return">1<', text) and 'id="example-failure"' not in text


def test_the_example_of_model_written_markup_stays_escaped(client):
    from .test_app import parse_tags

    _, _, text = client.get("/env/EvilMarkup-v1")
    example = text.split('id="example"', 1)[1].split("</table>", 1)[0]
    assert "&lt;script&gt;window.__pwned = 3&lt;/script&gt;&lt;img src=x onerror=" in example
    assert "&lt;b onmouseover=&#34;window.__pwned = 5&#34;&gt;won&lt;/b&gt;" in example
    rows = example_rows(text)
    assert rows[1][1] == "\\boxed{ok}" and rows[1][3] == "1"
    assert (
        rows[1][2] == '<b onmouseover="window.__pwned = 5">won</b><svg onload="window.__pwned=6">'
    )
    tags = parse_tags(text)
    assert not [t for t, _ in tags if t in ("img", "iframe", "object", "embed")]
    assert not [a for _, a in tags if any(name.startswith("on") for name in a)]
    assert [a.get("src") for t, a in tags if t == "script"] == ["/static/app.js"]


def test_an_example_that_fails_shows_its_failure(client, registered):
    status, _, text = client.get("/env/SolutionRaises-v1")
    assert status == 200
    failure = section(text, "example-failure")
    assert '<b class="kind">error</b> during solution' in failure
    assert "ValueError: no way &lt;script&gt;window.__pwned = 20&lt;/script&gt;" in failure
    assert example_rows(text) == [("0", "reset(seed=0)", "Say <b>anything</b>.", "")]
    assert 'id="example-return"' not in text  # no outcome for an episode that never ran
    status, _, text = client.get("/env/SolutionLoses-v1")
    assert '<b class="kind">lost</b>' in section(text, "example-failure")
    assert re.search(r'id="example-return">0<', text)
    assert "not won" in section(text, "example-outcome")


def test_an_example_has_a_bounded_time_and_one_run_per_version(server):
    registry = server.app.registry
    record = registry.register(LOOPS, _meta("ResetLoops"), status="candidate")
    examples = ExampleEpisodes(server.app.sessions.sandbox, budget_s=1.5, max_entries=2)
    try:
        example = examples.get(record, wait_s=30)
        # Ended by its own 1.5 s budget (the outcome and message say which limit), not by
        # the 30 s this caller would wait.
        assert example.failure == "timeout" and example.phase == "reset"
        assert "1.5 s" in example.message
        quick = registry.get("spade/Mastermind-v1")
        results = []
        threads = [
            threading.Thread(target=lambda: results.append(examples.get(quick, wait_s=30)))
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(results) == 4 and all(r.won for r in results)
        assert examples.played == 2  # the loop once, Mastermind once for four requests
        examples.get(registry.get("spade/Nim-v1"), wait_s=30)
        assert len(examples) == 2 and examples.cached(record) is None  # least recent went
    finally:
        examples.close()


def test_version_history_and_the_diff_between_consecutive_versions(client, registered):
    status, _, text = client.get("/env/CardDiff-v2")
    assert status == 200
    history = section(text, "history")
    assert "v2 vs spade/CardDiff-v1" in history
    assert '<span class="added">+2</span> <span class="removed">−2</span>' in history
    assert 'href="/env/CardDiff-v1">v1</a>' in history and "<b>v2</b>" in history
    assert history.index("<b>v2</b>") < history.index(">v1</a>")  # newest first
    assert 'href="/env/CardDiff-v2/diff"' in history
    status, _, diff = client.get("/env/CardDiff-v2/diff")
    assert status == 200
    body = re.search(r'<pre class="diff" id="diff">(.*?)</pre>', diff, re.S).group(1)
    lines = re.findall(r'<span class="dl (\w+)">(.*?)</span>', body)
    assert lines[0] == ("file", "--- spade/CardDiff-v1") and lines[1] == (
        "file",
        "+++ spade/CardDiff-v2",
    )
    assert ("del", "-    max_turns = 3") in lines and ("add", "+    max_turns = 5") in lines
    assert (
        "del",
        "-    knobs = {&#34;level&#34;: 1, &#34;strict&#34;: True}",
    ) in lines
    assert sum(kind == "add" for kind, _ in lines) == 2
    assert sum(kind == "del" for kind, _ in lines) == 2
    assert any(kind == "hunk" for kind, _ in lines)
    assert '+2</span> <span class="removed">−2</span> lines' in diff
    status, _, first = client.get("/env/CardDiff-v1")
    assert "The first version of CardDiff." in section(first, "history")


def test_the_diff_of_a_child_is_against_its_parent_and_against_is_checked(client, registered):
    status, _, diff = client.get("/env/NumberGuessHarder-v1/diff")
    assert status == 200
    lines = re.findall(r'<span class="dl (\w+)">(.*?)</span>', diff)
    assert ("file", "--- spade/NumberGuess-v1") in lines
    assert ("del", "-class NumberGuess(TextEnv):") in lines
    assert ("add", "+class NumberGuessHarder(TextEnv):") in lines
    assert sum(kind in ("add", "del") for kind, _ in lines) == 2
    status, _, diff = client.get("/env/CardDiff-v1/diff?against=NumberGuess-v1")
    assert status == 200 and "+class CardDiff(TextEnv):" in diff
    status, _, diff = client.get("/env/CardDiff-v2/diff?against=2")
    assert status == 200 and 'id="nodiff"' in diff and "have the same source" in diff
    status, _, diff = client.get("/env/Mastermind-v1/diff")
    assert status == 200 and "nothing to compare it with" in diff
    assert client.get("/env/CardDiff-v2/diff?against=9")[0] == 404
    assert client.get("/env/CardDiff-v2/diff?against=not-a-version")[0] == 400
    assert client.get("/env/CardDiff-v2/diff?agianst=1")[0] == 400


def test_the_package_download_is_this_version_alone_and_imports(
    client, server, tmp_path, monkeypatch
):
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # the server runs in this process
    record = server.app.registry.get("spade/NumberGuessHarder-v1")
    status, headers, body = client.request("/env/NumberGuessHarder-v1/package.zip")
    assert list(scratch.iterdir()) == []  # nothing left behind
    assert status == 200 and headers["Content-Type"] == "application/zip"
    stem = "spade-corpus-numberguessharder-v1"
    assert headers["Content-Disposition"] == f'attachment; filename="{stem}.zip"'
    package = "spade_corpus_numberguessharder_v1"
    with zipfile.ZipFile(io.BytesIO(body)) as zipped:
        names = set(zipped.namelist())
        assert f"{stem}/pyproject.toml" in names
        source = zipped.read(f"{stem}/{package}/envs/NumberGuessHarder_v1.py")
        manifest = json.loads(zipped.read(f"{stem}/{package}/manifest.json"))
        zipped.extractall(tmp_path)
    assert source.decode() == record.source
    assert [e["id"] for e in manifest["envs"]] == ["spade/NumberGuessHarder-v1"]
    from spade_envs.registry.package_export import read_package

    rows = read_package(tmp_path / stem)
    assert [r.source for r in rows] == [record.source]
    # What the card's snippet says: import the package, then gym.make finds the version.
    original = tmp_path / "original.py"
    original.write_text(record.source)
    probe = (
        f"import gymnasium as gym, {package}\n"
        "print(gym.spec('spade/NumberGuessHarder-v1').entry_point)\n"
        f"print({package}.source('spade/NumberGuessHarder-v1') == open({str(original)!r}).read())"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path / stem,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "SPADE_REGISTRY_URL": "sqlite://"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"{package}:make_env", "True"]
    assert client.get("/env/NumberGuessHarder-v1/package.zip?x=1")[0] == 400
    assert client.get("/env/NumberGues-v1/package.zip")[0] == 404


def test_a_card_does_not_wait_for_a_slow_example_and_reloads_until_it_is_there(
    client, server, patient, monkeypatch
):
    from spade_envs.web import examples as examples_module

    # The example is held until the first view is read: on a loaded machine the request
    # thread could lose its core after queueing it for as long as the example takes.
    first_view_read = threading.Event()
    play_example = examples_module.play_example

    def held(record, *args, **kwargs):
        if record.name == "CardLater":
            first_view_read.wait(30)
        return play_example(record, *args, **kwargs)

    monkeypatch.setattr(examples_module, "play_example", held)
    registry = server.app.registry
    source = TWO_VERSIONS.format(turns=2, level=7).replace("CardDiff", "CardLater")
    registry.register(source, _meta("CardLater"), status="candidate")
    server.app.catalog.refresh()
    patient.wait_s = 0.0
    try:
        status, _, text = client.get("/env/CardLater-v1")
        first_view_read.set()
        assert status == 200
        assert 'id="example-playing"' in text and 'id="example"' not in text
        assert '<meta http-equiv="refresh" content="2">' in text
        assert "<code>level</code></td><td><code>7</code>" in section(text, "knobs")  # the source
        deadline = time.monotonic() + 30
        while 'id="example-playing"' in text and time.monotonic() < deadline:
            time.sleep(0.2)
            text = client.get("/env/CardLater-v1")[2]
    finally:
        first_view_read.set()
        patient.wait_s = 30.0
    assert 'id="example-playing"' not in text and 'http-equiv="refresh"' not in text
    assert re.search(r'id="example-return">1<', text)
    assert "read in the sandbox" in text.split('id="knobs"')[1].split("</section>")[0]


def test_the_install_line_uses_a_repository_the_package_metadata_names(monkeypatch):
    import importlib.metadata

    class Metadata:
        def __init__(self, urls):
            self.urls = urls

        def get_all(self, key):
            return self.urls if key == "Project-URL" else None

    def installed(urls):
        monkeypatch.setattr(importlib.metadata, "metadata", lambda name: Metadata(urls))
        install_line.cache_clear()
        return install_line()

    try:
        assert installed(["Repository, https://example.org/spade/spade-envs"]) == (
            'pip install "git+https://example.org/spade/spade-envs"'
        )
        assert installed(["Homepage, https://example.org"]) == CLONE_INSTALL  # not the code
        assert installed(['Source, https://x.org/a" && rm -rf ~ "']) == CLONE_INSTALL
        assert installed([]) == CLONE_INSTALL
    finally:
        install_line.cache_clear()
