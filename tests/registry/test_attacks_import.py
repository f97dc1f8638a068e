"""Attacks on the import path of environments: gym IDs, seeding, registry URLs, the cards'
knobs. Attacks that hold are ordinary tests; attacks that succeed are strict xfails.

The adversary writes the registry's rows (names, versions, sources, ``seeds_json``)
directly in the SQLite file. Anything that could run stored code runs in a child process
under resource limits (2 GB of memory, 10 s of CPU) and a wall-clock timeout; the stored
"payload" only writes a marker file.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from spade_envs import describe, seed_class
from spade_envs.registry import Registry, RegistryLocationError, resolve_url
from spade_envs.registry.seeding import recorded_seeds
from spade_envs.seeds import seed_names, seed_source

SEEDS = len(seed_names())
TOKEN = "SPADE_ATTACK_TOKEN_7f3a"

_LIMITS = textwrap.dedent("""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (10, 10))
""")


def run_child(script: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    full = {**os.environ, "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run(
        [sys.executable, "-c", _LIMITS + textwrap.dedent(script)],
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def tampered(tmp_path):
    """A SQLite registry with the seeds, and a function that inserts hand-written rows."""
    db = tmp_path / "reg.db"
    url = f"sqlite:///{db}"
    Registry(url, seeds=True).close()
    marker = tmp_path / "PWNED"
    conn = sqlite3.connect(db)
    cols = [c[1] for c in conn.execute("PRAGMA table_info(environments)")]
    nim = conn.execute("SELECT * FROM environments WHERE name = 'Nim'").fetchone()
    template = dict(zip(cols, nim))
    template.pop("id")
    payload = f"open({str(marker)!r}, 'w').write('ran')  # {TOKEN}\n" + str(template["source"])

    def insert(name: object, version: object, source: str = payload, status="validated"):
        row = dict(template)
        row.update(name=name, version=version, source=source, class_name=str(name),
                   status=status, sha256=os.urandom(32).hex())  # fmt: skip
        conn.execute(
            f"INSERT INTO environments ({','.join(row)}) VALUES ({','.join('?' * len(row))})",
            list(row.values()),
        )
        conn.commit()

    insert.url, insert.marker, insert.conn, insert.db = url, marker, conn, db  # type: ignore[attr-defined]
    yield insert
    conn.close()


# ----- gym_ids: stored names never steer an entry point, never run stored code -----------
_LOOKUPS = """
    import contextlib, io, os, sys, warnings
    warnings.simplefilter("ignore")
    seen = []
    def hook(event, args):
        if event in ("compile", "exec") and args and "{token}" in repr(args[0])[:100000]:
            seen.append(event)
    sys.addaudithook(hook)
    import gymnasium as gym, spade_envs
    from spade_envs.runtime.gym_ids import register_all
    before = set(sys.modules)
    results = []
    for gid in {ids!r}:
        try:
            spec = gym.spec(gid)
            results.append((gid, spec.entry_point, sorted(spec.kwargs)))
        except Exception as exc:
            results.append((gid, type(exc).__name__))
    register_all()
    with contextlib.redirect_stdout(io.StringIO()):
        gym.pprint_registry()
    entry = {{s.entry_point for k, s in gym.registry.items() if k.startswith("spade/")}}
    new = {{m for m in set(sys.modules) - before if not m.startswith(("spade_envs", "sqlalchemy",
            "sqlmodel", "pydantic", "typing", "annotated", "greenlet", "_", "encodings"))}}
    print("SEEN", seen)
    print("ENTRY", sorted(entry))
    print("MARKER", os.path.exists({marker!r}))
    print("RESULTS", results)
"""

_NAMES = [
    "os.system",
    "os:system",
    "builtins.exec",
    "NumberGu\u0435ss",  # Cyrillic e: a confusable of a seed
    "\uff2eim",  # fullwidth N
    "Nim",  # a seed's name with non-seed code (version 2)
    "..",
    "x-v1:evil",
]


def test_spec_register_all_and_pprint_never_run_or_steer_on_stored_names(tampered):
    for number, name in enumerate(_NAMES):
        tampered(name, 2 if name == "Nim" else 1 + number)
    ids = [f"spade/{n}-v{2 if n == 'Nim' else 1 + i}" for i, n in enumerate(_NAMES)]
    script = _LOOKUPS.format(token=TOKEN, ids=ids, marker=str(tampered.marker))
    out = run_child(script, {"SPADE_REGISTRY_URL": tampered.url})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "SEEN []" in out.stdout
    assert "ENTRY ['spade_envs.runtime.gym_ids:make_env']" in out.stdout
    assert "MARKER False" in out.stdout
    assert not tampered.marker.exists()


_MAKE = """
    import os, warnings
    warnings.simplefilter("ignore")
    import gymnasium as gym, spade_envs
    for gid in {ids!r}:
        try:
            gym.make(gid, isolation="none")
            print("MADE", gid)
        except Exception as exc:
            print("REFUSED", gid, type(exc).__name__)
    print("MARKER", os.path.exists({marker!r}))
"""


def test_isolation_none_never_runs_stored_code_under_a_seeds_or_odd_name(tampered):
    tampered("Nim", 2)
    tampered("os.system", 1)
    tampered("NumberGu\u0435ss", 1)
    tampered.conn.execute(  # a seed's own v1 row overwritten with other code
        "UPDATE environments SET source = ? WHERE name = 'NumberGuess' AND version = 1",
        (f"open({str(tampered.marker)!r}, 'w').write('ran')\n",),
    )
    tampered.conn.commit()
    ids = ["spade/Nim-v2", "spade/os.system-v1", "spade/NumberGu\u0435ss-v1",
           "spade/NumberGuess-v1", "spade/numberguess-v1"]  # fmt: skip
    out = run_child(
        _MAKE.format(ids=ids, marker=str(tampered.marker)), {"SPADE_REGISTRY_URL": tampered.url}
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "MADE" not in out.stdout, out.stdout
    assert "MARKER False" in out.stdout
    assert not tampered.marker.exists()


@pytest.mark.xfail(
    strict=True,
    reason="one stored row whose name is not a Gymnasium ID ('a b/c') or whose version is not "
    "an integer ('abc') makes register_all() and gym.pprint_registry() raise for everyone "
    "(gymnasium.error.Error / ValueError): stored names and versions are not checked",
)
@pytest.mark.parametrize(("name", "version"), [("a b/c", 1), ("Orbit", "abc")])
def test_one_malformed_row_does_not_break_pprint_registry(tampered, name, version):
    tampered(name, version)
    script = """
        import contextlib, io, warnings
        warnings.simplefilter("ignore")
        import gymnasium as gym, spade_envs
        with contextlib.redirect_stdout(io.StringIO()) as buf:
            gym.pprint_registry()
        print("NIM", "spade/Nim-v1" in buf.getvalue())
    """
    out = run_child(script, {"SPADE_REGISTRY_URL": tampered.url})
    assert out.returncode == 0, out.stderr[-1500:]
    assert "NIM True" in out.stdout


# ----- seeding: a crafted seeds_json -----------------------------------------------------
def _set_seeds_json(db: Path, value: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE spade_schema SET seeds_json = ?", (value,))


@pytest.mark.parametrize("value", ["5", "null", '[["x"]]', "[1]", "not json"])
def test_a_crafted_seeds_json_does_not_break_every_open(tmp_path, value, caplog):
    url = f"sqlite:///{tmp_path / 'reg.db'}"
    Registry(url).close()  # no seed yet: an open that trusted the record would add them all
    _set_seeds_json(tmp_path / "reg.db", value)
    caplog.set_level(logging.WARNING, logger="spade_envs.registry")
    registry = Registry(url, seeds=True)
    try:
        # A record this code did not write gives no seed, and the open says so ...
        assert registry.count() == 0
        assert recorded_seeds(registry.engine) == set(seed_names())
        assert "record of given seeds is malformed" in caplog.text
        # ... and the registry still works for everything else.
        source = seed_source("Nim").replace("class Nim(", "class Nimble(")
        registry.register(source, dataclasses.replace(describe(seed_class("Nim")), name="Nimble"))
        assert registry.versions("Nimble") == ["spade/Nimble-v1"]
    finally:
        registry.close()


@pytest.mark.parametrize("value", ["5", "null", '[["x"]]', "[1]", "not json"])
def test_register_seeds_adds_the_seeds_under_a_crafted_seeds_json(tmp_path, value):
    # What the malformed-record warning advises works: the record is replaced by ours.
    url = f"sqlite:///{tmp_path / 'reg.db'}"
    Registry(url).close()
    _set_seeds_json(tmp_path / "reg.db", value)
    registry = Registry(url, seeds=True)
    try:
        assert registry.register_seeds() == SEEDS
        assert registry.count() == SEEDS
        assert recorded_seeds(registry.engine) == set(seed_names())
    finally:
        registry.close()


def test_seeds_json_cannot_make_a_non_seed_a_seed_or_revive_a_retired_one(tmp_path):
    db = tmp_path / "reg.db"
    url = f"sqlite:///{db}"
    registry = Registry(url, seeds=True)
    registry.retire("spade/Nim-v1")
    registry.close()
    # Forget every seed, and name non-seeds (and an ID, a path) as given seeds.
    _set_seeds_json(db, json.dumps(["Evil", "spade/Evil-v1", "../x", "os.system"]))
    again = Registry(url, seeds=True)
    assert again.count() == SEEDS  # nothing registered twice, nothing new
    assert again.get("spade/Nim-v1").status == "retired"
    assert again.versions("Nim") == ["spade/Nim-v1"]
    assert again.versions("Evil") == []
    assert set(seed_names()) <= recorded_seeds(again.engine)
    assert {r.origin for r in again.list(limit=100, include_retired=True)} == {"seed"}
    again.close()


def _statements_of_a_seeding_open(tmp_path: Path, names: list[str]) -> int:
    """How many SQL statements ``Registry(url, seeds=True)`` runs on a registry whose
    record of given seeds is ``names`` (no seed is among them, so every seed is added)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    db = tmp_path / f"reg{len(names)}.db"
    url = f"sqlite:///{db}"
    Registry(url).close()
    _set_seeds_json(db, json.dumps(names))
    statements: list[str] = []

    def count(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    event.listen(Engine, "before_cursor_execute", count)  # every engine, the open's own too
    try:
        registry = Registry(url, seeds=True)
    finally:
        event.remove(Engine, "before_cursor_execute", count)
    assert registry.count() == SEEDS
    assert set(seed_names()) <= recorded_seeds(registry.engine)
    registry.close()
    return len(statements)


def test_a_huge_seeds_json_is_bounded_work(tmp_path):
    # The record is read once and merged in memory: 200,000 recorded names cost the open
    # no statement more than one name does (no per-name lookup, insert or write).
    one = _statements_of_a_seeding_open(tmp_path, ["N0"])
    huge = _statements_of_a_seeding_open(tmp_path, [f"N{i}" for i in range(200_000)])
    assert huge == one, f"{huge} SQL statements for 200,000 recorded names, {one} for one"


def test_many_first_opens_racing_register_each_seed_once(tmp_path):
    db = tmp_path / "reg.db"
    url = f"sqlite:///{db}"
    Registry(url).close()
    go = tmp_path / "go"
    script = f"""
        import os, time
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        from spade_envs.registry import Registry
        Registry({url!r}, seeds=True).close()
    """
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _LIMITS + textwrap.dedent(script)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    time.sleep(1.0)
    go.write_text("")
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err[-2000:]
    registry = Registry(url)
    assert registry.count() == SEEDS
    assert {r.id for r in registry.list(limit=100)} == {f"spade/{n}-v1" for n in seed_names()}
    assert recorded_seeds(registry.engine) == set(seed_names())
    registry.close()


# ----- urls: what file is opened, what is created ----------------------------------------
def _opened_file(url_or_path: str) -> Registry:
    registry = Registry(url_or_path)
    registry.close()
    return registry


@pytest.mark.xfail(
    strict=True,
    reason="a plain path's '?' becomes the URL's query: Registry('/d/what?.db') opens and "
    "creates /d/what, another file than the one named",
)
def test_a_plain_path_with_a_question_mark_opens_that_file(tmp_path):
    _opened_file(str(tmp_path / "what?.db"))
    assert not (tmp_path / "what").exists()
    assert (tmp_path / "what?.db").is_file()


@pytest.mark.xfail(
    strict=True,
    reason="a plain path is percent-decoded by SQLAlchemy after the directory check: "
    "Registry('/d/sub/..%2F..%2Fother%2Freg.db') passes prepare_location (its parent /d/sub "
    "exists) and opens /other/reg.db, outside the directory checked",
)
def test_a_percent_encoded_path_does_not_escape_the_checked_directory(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    _opened_file(str(tmp_path / "d" / "sub" / "..%2F..%2Fother%2Freg.db"))
    assert not (tmp_path / "other" / "reg.db").exists()


@pytest.mark.xfail(
    strict=True,
    reason="a relative XDG_DATA_HOME (which the XDG spec says to ignore) makes the default "
    "registry's directories be created under the current directory",
)
def test_a_relative_xdg_data_home_creates_nothing_under_the_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", "rel")
    monkeypatch.delenv("SPADE_REGISTRY_URL", raising=False)
    Registry().close()
    assert not (tmp_path / "rel").exists()


def test_missing_or_dangling_symlink_directories_are_refused_and_not_created(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    target = tmp_path / "nowhere"
    (tmp_path / "link").symlink_to(target)
    for given in (
        str(tmp_path / "link" / "reg.db"),
        f"sqlite:///{tmp_path}/link/reg.db",
        str(tmp_path / "a" / "b" / "reg.db"),
        f"sqlite:///{tmp_path}/a/b/reg.db?timeout=1",
        "~/deep/reg.db",
        f"{tmp_path}/a/../a/reg.db",
    ):
        with pytest.raises(RegistryLocationError):
            Registry(given)
    for given in (f"sqlite:///file:{tmp_path}/a/reg.db?uri=true",
                  f"sqlite+pysqlite:///{tmp_path}/a/reg.db"):  # fmt: skip
        with pytest.raises(Exception):  # any refusal; nothing is created
            Registry(given)
    assert not target.exists() and not (tmp_path / "a").exists()
    assert not (tmp_path / "home").exists()


def test_a_symlinked_parent_is_resolved_once_to_its_target(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    url = resolve_url(str(tmp_path / "link" / "reg.db"))
    assert url == f"sqlite:///{real}/reg.db"
    _opened_file(str(tmp_path / "link" / "reg.db"))
    assert sorted(p.name for p in real.iterdir()) == ["reg.db"]


# ----- cards: static_knobs never runs code, and is cheap under the shared lock -------------
def test_static_knobs_never_executes_the_source(tmp_path):
    from spade_envs.web.pages_card import static_knobs

    marker = tmp_path / "ran"
    source = textwrap.dedent(f"""
        import os
        os.system("touch {marker}")
        class E:
            knobs = {{"a": __import__("os").system("touch {marker}")}}
        class F:
            knobs = {{"a": (lambda: open({str(marker)!r}, "w"))()}}
        class G:
            knobs: dict = {{"x": 1, "y": [1, 2, (3, 4)], "z": -1.5, "w": 1+2j}}
    """)
    assert static_knobs(source, "E") is None
    assert static_knobs(source, "F") is None
    assert static_knobs(source, "G") == {"x": 1, "y": [1, 2, (3, 4)], "z": -1.5, "w": 1 + 2j}
    assert not marker.exists()


@pytest.mark.parametrize(
    "literal",
    ['"-" * 200_000 + "1"', '"1+" * 200_000 + "1j"', '"[" * 5000 + "]" * 5000',
     '"9" * 50_000', '"(" * 100_000 + ")" * 100_000', '"{1:" * 3000 + "1" + "}" * 3000'],
)  # fmt: skip
def test_deep_or_huge_knobs_literals_fail_cleanly(literal):
    script = f"""
        from spade_envs.web.pages_card import static_knobs
        src = "class E:\\n    knobs = {{'a': " + ({literal}) + "}}\\n"
        print("VALUE", repr(static_knobs(src, "E"))[:40])
    """
    out = run_child(script, {}, timeout=30)
    assert out.returncode == 0, out.stderr[-1500:]
    assert "VALUE" in out.stdout


def test_a_card_of_a_large_stored_source_does_not_hold_the_parse_lock(monkeypatch):
    from spade_envs.core import pyparse
    from spade_envs.registry.limits import MAX_SOURCE_BYTES
    from spade_envs.web import pages_card

    # The card parses (holding PARSE_LOCK, what every validation's parse waits for) only a
    # source the validator would parse too: a ~1 MB stored one is never parsed at all.
    parsed: list[int] = []

    def parse_source(source, *args, **kwargs):
        parsed.append(len(source))
        return pyparse.parse_source(source, *args, **kwargs)

    monkeypatch.setattr(pages_card, "parse_source", parse_source)
    head = "class E:\n    knobs = {'a': ["
    source = head + "0," * ((MAX_SOURCE_BYTES - len(head) - 10) // 2) + "]}\n"
    assert len(source) <= MAX_SOURCE_BYTES
    assert pages_card.static_knobs(source, "E") is None
    assert parsed == [], "the card parsed a ~1 MB source under PARSE_LOCK"
    # The same literal at a size the validator parses is read, through the locked parse.
    assert pages_card.static_knobs(head + "0," * 10 + "]}\n", "E") == {"a": [0] * 10}
    assert parsed
