"""Registry locations: plain paths and URLs, a missing directory is an error (only the
per-user data directory is created), and PostgreSQL without psycopg names the extra."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spade_envs.error import MissingExtraError, SpadeError
from spade_envs.registry import Registry, RegistryLocationError, resolve_url


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SPADE_REGISTRY_URL", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    return home


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("/data/reg.db", "sqlite:////data/reg.db"),
        ("reg.db", "sqlite:///{cwd}/reg.db"),
        ("sub/../reg.db", "sqlite:///{cwd}/reg.db"),
        ("~/x.db", "sqlite:///{home}/x.db"),
        ("sqlite:///reg.db", "sqlite:///{cwd}/reg.db"),
        ("sqlite:///~/x.db", "sqlite:///{home}/x.db"),
        ("sqlite:////data/reg.db", "sqlite:////data/reg.db"),
        ("sqlite:////data/reg.db?timeout=5", "sqlite:////data/reg.db?timeout=5"),
        ("sqlite:///:memory:", "sqlite:///:memory:"),
        ("postgresql://u@db:5432/reg", "postgresql+psycopg://u@db:5432/reg"),
        ("postgres://u@db/reg", "postgresql+psycopg://u@db/reg"),
        ("postgresql+psycopg://u@db/reg", "postgresql+psycopg://u@db/reg"),
        ("postgresql+psycopg2://u@db/reg", "postgresql+psycopg2://u@db/reg"),
    ],
)
def test_paths_and_urls_resolve_alike_from_arguments_and_the_environment(
    given, expected, home, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    want = expected.format(cwd=tmp_path, home=home)
    assert resolve_url(given) == want
    assert resolve_url(Path(given)) == want or "://" in given
    monkeypatch.setenv("SPADE_REGISTRY_URL", given)
    assert resolve_url() == want


def test_a_plain_path_in_spade_registry_url_opens_a_registry(tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_REGISTRY_URL", str(tmp_path / "reg.db"))
    registry = Registry()
    assert registry.url == f"sqlite:///{tmp_path / 'reg.db'}" and registry.count() == 0
    registry.close()
    assert (tmp_path / "reg.db").is_file()


@pytest.mark.parametrize(
    "given",
    ["sqlite:///{tmp}/typo/reg.db", "{tmp}/typo/reg.db", "{tmp}/typo/deeper/reg.db"],
)
def test_a_missing_directory_is_an_error_and_is_not_created(given, tmp_path, monkeypatch):
    value = given.format(tmp=tmp_path)
    missing = tmp_path / "typo" / "deeper" if "deeper" in given else tmp_path / "typo"
    message = (
        rf"Cannot open the registry {tmp_path}/typo/.*reg\.db: the directory {missing} does "
        rf"not exist\. Create it first \(mkdir -p '{missing}'\) or choose another path"
    )
    with pytest.raises(RegistryLocationError, match=message):
        Registry(value)
    monkeypatch.setenv("SPADE_REGISTRY_URL", value)
    with pytest.raises(RegistryLocationError, match=message):
        Registry()
    assert not (tmp_path / "typo").exists()
    assert issubclass(RegistryLocationError, SpadeError)


def test_a_registry_that_is_only_read_must_exist_and_close_names_are_suggested(home, tmp_path):
    from spade_envs.registry.urls import data_dir_url, require_existing

    Registry(tmp_path / "registry.db").close()
    (tmp_path / "notes.txt").write_text("x")
    typo = tmp_path / "registy.db"
    close = re.escape(str(tmp_path / "registry.db"))
    with pytest.raises(
        RegistryLocationError,
        match=rf"^There is no registry at {re.escape(str(typo))}: the file does not exist\. "
        rf"Did you mean '{close}'\? Check SPADE_REGISTRY_URL .*run spade-envs init\.",
    ):
        require_existing(resolve_url(typo), create_with="spade-envs init")
    assert not typo.exists()
    require_existing(resolve_url(tmp_path / "registry.db"))  # it exists: no error
    # Suffixes other than .db are compared with files of their own suffix.
    (tmp_path / "corpus.sqlite").write_bytes(b"")
    with pytest.raises(RegistryLocationError, match=r"Did you mean '.*corpus\.sqlite'\?"):
        require_existing(resolve_url(tmp_path / "corpsu.sqlite"))
    # A missing directory keeps its own message.
    with pytest.raises(RegistryLocationError, match=r"the directory .*typo does not exist"):
        require_existing(resolve_url(tmp_path / "typo" / "reg.db"))
    # The per-user default is created on first use; servers and memory are not files.
    require_existing(data_dir_url())
    require_existing("postgresql+psycopg://u@h/db")
    require_existing("sqlite:///:memory:")


def test_a_file_where_the_directory_should_be_is_an_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RegistryLocationError, match=r"file is not a directory"):
        Registry(str(tmp_path / "file" / "reg.db"))


def test_the_per_user_data_directory_is_created(home, tmp_path, monkeypatch):
    registry = Registry()
    expected = home / ".local" / "share" / "spade-envs" / "registry.db"
    assert registry.url == f"sqlite:///{expected}" and expected.is_file()
    registry.close()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg" / "data"))
    registry = Registry()
    assert (tmp_path / "xdg" / "data" / "spade-envs" / "registry.db").is_file()
    registry.close()


def test_gym_make_with_a_typo_in_the_registry_directory_fails_in_a_fresh_process(tmp_path):
    script = "import gymnasium as gym, spade_envs; gym.make('spade/NumberGuess-v1')"
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPADE_REGISTRY_URL": str(tmp_path / "typo" / "reg.db")},
    )
    assert result.returncode != 0
    assert "RegistryLocationError: Cannot open the registry" in result.stderr
    assert f"the directory {tmp_path / 'typo'} does not exist" in result.stderr
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize(
    "url", ["postgresql+psycopg://postgres@127.0.0.1:5432/test", "postgresql://u@h/db"]
)
def test_postgres_without_psycopg_names_the_extra(url):
    script = textwrap.dedent(f"""
        import sys
        sys.modules["psycopg"] = None  # as if not installed: import psycopg fails
        from spade_envs.error import MissingExtraError
        from spade_envs.registry import Registry
        try:
            Registry({url!r})
        except MissingExtraError as exc:
            print(type(exc).__name__, exc.extra, exc.missing)
            print(exc)
    """)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "MissingExtraError postgres ('psycopg',)"
    assert lines[1] == (
        "A PostgreSQL registry needs psycopg (not installed), from the [postgres] extra. "
        "Install it with:"
    )
    assert lines[2].strip() == "pip install 'spade-envs[postgres]'"
    assert issubclass(MissingExtraError, SpadeError)


def test_an_unknown_url_scheme_says_what_works():
    with pytest.raises(SpadeError, match=r"Cannot use registry URL 'mysq://x'.*sqlite:///PATH"):
        Registry("mysq://x")
