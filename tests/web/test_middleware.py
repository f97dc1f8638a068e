"""The guard in front of every page and API call (spade_envs.web.middleware), over real
HTTP on 127.0.0.1: methods, paths, JSON-only API writes, origins, and the headers of
every answer, a crash's included."""

from __future__ import annotations

import http.client
import json
import urllib.parse

import pytest

from .conftest import Client


@pytest.fixture(scope="module")
def client(server):
    return Client(server.url)


def raw(server, method: str, target: str, body: bytes = b"", headers: dict | None = None):
    """One request exactly as given (urllib would normalise the target)."""
    parsed = urllib.parse.urlsplit(server.url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    try:
        conn.request(method, target, body=body or None, headers=headers or {})
        response = conn.getresponse()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read().decode(),
        )
    finally:
        conn.close()


@pytest.mark.parametrize("target", ["//evil.example/", "/env/..%2f..%2fetc", "/a\\b"])
def test_malformed_paths_are_400_before_anything_else(server, target):
    status, headers, text = raw(server, "GET", target)
    assert status == 400, text
    assert "Malformed path" in text
    assert headers["content-security-policy"].startswith("default-src 'none'")


def test_a_token_in_the_query_never_redirects_to_another_site(web_registry, runs_dir):
    from spade_envs.web.config import ServeConfig

    from .conftest import start, stop

    token = "t0k3n-" + "x" * 30
    config = ServeConfig(port=0, token=token, quiet=True, embedder="hashing")
    srv, thread = start(config, web_registry)
    try:
        status, headers, _ = raw(srv, "GET", f"/envs?q=a&token={token}")
        assert status == 303 and headers["location"] == "/envs?q=a"
        assert "spade_token=" in headers["set-cookie"]
        status, _, text = raw(srv, "GET", f"//evil.example/?token={token}")
        assert status == 400, text
    finally:
        srv.app.registry = _Unclosable(web_registry)
        stop(srv, thread)


class _Unclosable:
    """The module's registry, handed to a second server that must not close it."""

    def __init__(self, registry):
        self._registry = registry

    def close(self):
        pass

    def __getattr__(self, name):
        return getattr(self._registry, name)


def test_api_writes_must_be_json_from_this_origin(server):
    ident = server.app.registry.ids["NumberGuess"]
    body = json.dumps({"env": ident}).encode()
    status, _, text = raw(server, "POST", "/api/v1/play", body, {"Content-Type": "text/plain"})
    assert status == 415, text
    assert json.loads(text)["error"]["message"].startswith("API requests with a body must")
    status, _, text = raw(
        server,
        "POST",
        "/api/v1/play",
        body,
        {"Content-Type": "application/json", "Origin": "http://evil.example"},
    )
    assert status == 403 and "Cross-origin request" in json.loads(text)["error"]["message"]


def test_page_posts_are_forms_only(server):
    status, _, text = raw(
        server, "POST", "/play", b'{"env": "x"}', {"Content-Type": "application/json"}
    )
    assert status == 400 and "HTML form data" in text


def test_methods_outside_the_api_and_inside_it(server):
    status, headers, _ = raw(server, "DELETE", "/envs")
    assert status == 405 and headers["allow"] == "GET, HEAD, POST"
    status, headers, _ = raw(server, "PUT", "/api/v1/envs")
    assert status == 405 and headers["allow"] == "GET, HEAD, POST, DELETE"


def test_an_oversized_body_is_refused(server):
    status, _, text = raw(
        server,
        "POST",
        "/play",
        b"x=" + b"a" * (70 * 1024),
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert status == 413 and "over 64 KB" in text


def test_api_errors_are_json_and_pages_errors_are_pages(client):
    status, headers, text = client.get("/api/v1/nothing-here")
    assert status == 404 and headers["Content-Type"].startswith("application/json")
    assert json.loads(text)["error"]["status"] == 404
    status, headers, text = client.get("/nothing-here")
    assert status == 404 and headers["Content-Type"].startswith("text/html")
    assert "There is no page at" in text


def test_a_crash_is_a_500_page_with_the_security_headers_and_no_traceback(
    client, server, monkeypatch
):
    def broken():
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(server.app.catalog, "snapshot", broken)
    status, headers, text = client.get("/envs")
    assert status == 500
    assert "Something went wrong on the server" in text
    assert "secret internal detail" not in text and "Traceback" not in text
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["content-security-policy"].startswith("default-src 'none'")
