"""The server's settings refuse what would be unsafe or cannot work."""

from __future__ import annotations

import pytest

from spade_envs.error import SpadeError
from spade_envs.web.config import ServeConfig, registry_url
from spade_envs.web.security import is_loopback

TOKEN = "correct-horse-battery-staple-42"


def test_loopback_needs_no_token_but_anything_else_does():
    assert ServeConfig().host == "127.0.0.1" and ServeConfig().token is None
    ServeConfig(host="localhost")
    ServeConfig(host="::1")
    for host in ("0.0.0.0", "192.168.1.20", "::", "example.org"):
        with pytest.raises(SpadeError, match=f"Refusing to listen on {host} without a token"):
            ServeConfig(host=host)
        assert ServeConfig(host=host, token=TOKEN).token == TOKEN


def test_tokens_must_be_long_and_url_safe():
    for bad in ("short", "has spaces in it!!", "x" * 300, 'quote"inside-the-token'):
        with pytest.raises(SpadeError, match="token must be 16 to 256 URL-safe characters"):
            ServeConfig(token=bad)


def test_other_fields_are_checked(tmp_path):
    with pytest.raises(SpadeError, match="port must be between 0 and 65535"):
        ServeConfig(port=70000)
    with pytest.raises(SpadeError, match="is not a directory"):
        ServeConfig(runs_dir=str(tmp_path / "missing"))
    with pytest.raises(SpadeError, match="embedder must be auto, hashing or minilm"):
        ServeConfig(embedder="word2vec")
    with pytest.raises(SpadeError, match="max_play_sessions must be a whole number from 1"):
        ServeConfig(max_play_sessions=0)
    with pytest.raises(SpadeError, match="play_idle_s must be a positive number"):
        ServeConfig(play_idle_s=0)
    assert ServeConfig(token=TOKEN).to_dict()["token"] == "***"


def test_a_new_registry_needs_an_existing_directory(tmp_path):
    for value in (str(tmp_path / "nodir" / "r.db"), f"sqlite:///{tmp_path / 'nodir' / 'r.db'}"):
        with pytest.raises(SpadeError, match="nodir"):
            ServeConfig(registry_url=value)
    # A registry that does not exist yet, in a directory that does: it will be made (with
    # the seeds) when the server opens it.
    assert ServeConfig(registry_url=str(tmp_path / "new.db")).registry_url.endswith("new.db")
    (tmp_path / "there.db").write_bytes(b"")
    assert ServeConfig(registry_url=str(tmp_path / "there.db")).registry_url.endswith("there.db")


def test_serve_on_a_fresh_registry_shows_the_seeds(tmp_path):
    import json

    from spade_envs.seeds import seed_names

    from .conftest import Client, start, stop

    config = ServeConfig(
        registry_url=str(tmp_path / "fresh.db"), port=0, quiet=True, embedder="hashing"
    )
    srv, thread = start(config, None)
    try:
        srv.app.catalog.refresh()
        status, _, text = Client(srv.url).get("/api/v1/envs?size=200")
        assert status == 200
        listed = {item["name"] for item in json.loads(text)["items"]}
        assert listed == set(seed_names())
        assert srv.app.vectors.wait_for_embeddings(timeout=60)  # the server embedded them
        status, _, text = Client(srv.url).get("/api/v1/search?q=maze&mode=semantic&k=3")
        assert status == 200 and "MazeExplore" in text
    finally:
        stop(srv, thread)


def test_registry_paths_become_sqlite_urls(tmp_path):
    assert registry_url(None) is None
    assert registry_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert registry_url(str(tmp_path / "r.db")) == f"sqlite:///{tmp_path / 'r.db'}"


def test_loopback_detection():
    assert is_loopback("127.0.0.1") and is_loopback("127.5.0.1") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1") and not is_loopback("host")
