"""Attacks on the ``/env/spade/{rest}`` redirect (the ID as printed elsewhere) over real
HTTP on 127.0.0.1: it must stay on this server, inject no header, read no file, and
answer a hostile query with a 4xx, never a 500. Attacks that hold are ordinary tests;
one that succeeds is a strict xfail."""

from __future__ import annotations

import socket

import pytest

from spade_envs.registry import Registry
from spade_envs.web.config import ServeConfig

from .conftest import fill_registry, start, stop


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    registry = Registry(f"sqlite:///{tmp_path_factory.mktemp('spade-form') / 'r.db'}")
    fill_registry(registry)
    server, thread = start(ServeConfig(port=0, quiet=True, embedder="hashing"), registry)
    yield server
    stop(server, thread)
    registry.close()


def _raw(srv, target: str) -> tuple[int, dict[str, str]]:
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        sock.sendall(
            f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
            "Connection: close\r\n\r\n".encode("latin-1")
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), value.strip())
    return int(head[0].split()[1]), headers


@pytest.mark.parametrize(
    "query",
    ["//evil.example", "a=%0d%0aSet-Cookie:%20x=1", "%5c%5cevil.example", "next=https://e.x"],
)
def test_the_redirect_keeps_the_query_on_this_server(srv, query):
    status, headers = _raw(srv, f"/env/spade/NumberGuess-v1/play?{query}")
    assert status == 308
    assert headers["location"] == f"/env/NumberGuess-v1/play?{query}"
    assert "set-cookie" not in headers or "x=1" not in headers["set-cookie"]


@pytest.mark.parametrize(
    "path",
    ["/env/spade//NumberGuess-v1", "/env/spade/NumberGuess-v1/..%2f..%2fetc%2fpasswd",
     "/env/spade/%2fevil.example", "/env/spade/NumberGuess-v1/source.py/../../x"],
)  # fmt: skip
def test_odd_paths_are_not_redirected(srv, path):
    status, headers = _raw(srv, path)
    assert 400 <= status < 500 and "location" not in headers


def test_a_backslash_in_the_query_is_not_a_server_error(srv):
    status, _headers = _raw(srv, "/env/spade/NumberGuess-v1?a=\\x")
    assert status != 500
