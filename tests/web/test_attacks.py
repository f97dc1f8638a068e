"""Attacks on the corpus browser over real HTTP on 127.0.0.1, one test per attack.

The threat model (README "Security defaults", spade_envs/web/security.py): every text in
the registry and all environment code is written by an adversary who has read the
source; web pages elsewhere may send the user's browser here. An attack that holds is
an ordinary test (so it keeps holding); one that succeeds is a strict ``xfail`` whose
reason says what it achieves, so the day it is fixed the test says so.

Bounds: every hostile request loop is bounded in count and time, only 127.0.0.1 is
targeted, and nothing here relies on the sandbox under test to protect the machine (the
environments below only misbehave towards the server: markup, slow code, endless loops).
"""

from __future__ import annotations

import html
import http.client
import json
import re
import socket
import sys
import threading
import time
import urllib.parse
from html.parser import HTMLParser

import pytest

from spade_envs.core.metadata import EnvMetadata
from spade_envs.registry import Registry
from spade_envs.validation.report import CheckResult, ValidationReport
from spade_envs.web.config import ServeConfig
from spade_envs.web.middleware import browser_owner

from .conftest import Client, fill_registry, start, stop

TOKEN = "attack-token-" + "s3cr3t" * 4
MARKER = "spade_attack_ran_in_process"

# ----- hostile registry content ------------------------------------------------------------
HOSTILE_SOURCE = f'''"""<script>window.__pwned = 20</script> a model-written card full of markup."""

import sys as _sys

from spade_envs import TextEnv, boxed, extract_answer

# Only where this code runs: the sandbox worker, never the server's own process.
_sys.modules.setdefault("{MARKER}", _sys)


class HostileCard(TextEnv):
    skill = "logic"
    description = "<script>window.__pwned = 21</script>"
    max_turns = 3
    knobs = {{"level": "1\\nimport os; os.system('echo pwned')  # ", "depth": 2}}

    def _reset(self) -> str:
        return "</pre><script>window.__pwned = 22</script><img src=x onerror=alert(1)> \\\\boxed{{ok}}"

    def _step(self, action: str):
        if extract_answer(action) == "ok":
            return '<svg onload="window.__pwned = 23">won</svg>', 1.0, True
        return "<a href=\\"javascript:alert(24)\\">again</a>", 0.0, False

    def hint(self) -> str:
        return "<script>window.__pwned = 25</script>"

    def solution(self) -> list[str]:
        return [boxed("ok")]
'''

# Fails to load (so the card reads its knobs from the source, statically), and declares
# knobs whose default is a string that tries to end the snippet's comment line.
STATIC_KNOBS_SOURCE = f'''import sys as _sys
from spade_envs import TextEnv

_sys.modules.setdefault("{MARKER}", _sys)


class StaticKnobs(TextEnv):
    skill = "logic"
    description = "knobs read without running the class"
    max_turns = 2
    knobs = {{"size": "3\\nimport os; os.system('echo pwned')", "fast": True, "note": None}}


raise RuntimeError("<script>window.__pwned = 30</script> load failed on purpose")
'''

# knobs that are an expression: reading them statically must never evaluate them.
EXEC_KNOBS_SOURCE = f'''import sys as _sys
from spade_envs import TextEnv


class ExecKnobs(TextEnv):
    skill = "logic"
    description = "knobs as an expression"
    max_turns = 2
    knobs = {{"size": _sys.modules.setdefault("{MARKER}", _sys) and 3}}


raise RuntimeError("never loads")
'''

# An endless loop in reset(): the example episode must stay bounded.
SPIN_SOURCE = """from spade_envs import TextEnv


class SpinForever(TextEnv):
    skill = "logic"
    description = "reset never returns"
    max_turns = 2

    def _reset(self) -> str:
        while True:
            pass

    def _step(self, action: str):
        return "", 0.0, True
"""


def _meta(name: str, **changes) -> EnvMetadata:
    fields = dict(
        name=name,
        kind="text",
        skill="logic",
        description=f"{name}: <script>window.__pwned = 40</script>",
        max_turns=3,
        reward_range=(0.0, 1.0),
        origin="designer",
    )
    fields.update(changes)
    return EnvMetadata(**fields)


def _hostile_report() -> ValidationReport:
    return ValidationReport(
        passed=False,
        checks=[
            CheckResult(
                "<script>window.__pwned = 50</script>",
                False,
                '<img src=x onerror="x">',
                0.1,
                details={"<b>k</b>": "<script>window.__pwned = 51</script>"},
            ),
        ],
        env_name="HostileCard",
        budget="<i>fast</i>",
        timings={"total": 0.1},
    )


def _diff_bomb(lines: int) -> tuple[str, str]:
    """Two sources whose unified diff is quadratic in difflib (every other line kept)."""
    old = "\n".join(f"x{i} = {i}" for i in range(lines))
    new = "\n".join(f"x{i} = {i}" if i % 2 else f"y{i} = {i}" for i in range(lines))
    return old, new


#: A source on which Pygments' Python lexer is quadratic (each "\N{" rescans the rest).
HIGHLIGHT_CHARS = 24_000
HIGHLIGHT_BOMB = "u'" + "\\N{" * (HIGHLIGHT_CHARS // 3)
HIGHLIGHT_PLAIN = "u'" + "abc" * (HIGHLIGHT_CHARS // 3)
DIFF_LINES = 5_000
HOSTILE_STATUS = 'validated" onmouseover="alert(82)'


def _fill_hostile(registry) -> dict[str, str]:
    ids = fill_registry(registry)
    document = registry.add_document(
        "<script>window.__pwned = 60</script>", source='"><script>window.__pwned = 61</script>'
    )
    suite_extra = {
        "suite": {
            "homepage": "javascript:alert(70)//https://example.org/",
            "licence": "<script>window.__pwned = 71</script>",
            "distribution": '" onmouseover="window.__pwned = 72',
            "version": "<b>1</b>",
            "task": "<img src=x onerror=alert(73)>",
            "unproven": "<svg onload=alert(74)>",
            "rejected": "</p><script>window.__pwned = 75</script>",
        },
        "tags": ["<script>window.__pwned = 76</script>", '" onfocus="alert(77)" autofocus x="'],
        "licence": "<script>window.__pwned = 78</script>",
        "nested": {"<b>": ["</pre><script>window.__pwned = 79</script>"]},
    }
    hostile = registry.register(
        HOSTILE_SOURCE,
        _meta(
            "HostileCard",
            description="<script>window.__pwned = 21</script>",
            parents=(
                "javascript:alert(80)",
                '"><script>window.__pwned = 81</script>',
                ids["NumberGuess"],
            ),
        ),
        status="validated",
        hint="<img src=x onerror=alert(83)>",
        model="<script>window.__pwned = 84</script>",
        extra=suite_extra,
        document_id=document,
        report=_hostile_report(),
        suite="<b>evil</b>",
    )
    ids["HostileCard"] = hostile.id
    # A second version, so the card's history and the diff page show hostile lines.
    ids["HostileCard2"] = registry.register(
        HOSTILE_SOURCE + "\n# </span></pre><script>window.__pwned = 90</script>\n",
        _meta("HostileCard"),
        status="candidate",
    ).id
    for checkpoint in ("<script>window.__pwned = 91</script>", '"><svg onload=alert(92)>'):
        registry.record_play_stats(
            hostile.id,
            checkpoint,
            plays_with_hint=4,
            plays_without_hint=4,
            mean_return_with_hint=0.5,
            mean_return_without_hint=0.25,
            win_rate=0.5,
        )
    registry.add_validation(hostile.id, _hostile_report())
    for name, source in (
        ("StaticKnobs", STATIC_KNOBS_SOURCE),
        ("ExecKnobs", EXEC_KNOBS_SOURCE),
        ("SpinForever", SPIN_SOURCE),
        ("HighlightBomb", HIGHLIGHT_BOMB),
        ("HighlightPlain", HIGHLIGHT_PLAIN),
        ("PoisonRow", "x = 1\n"),
    ):
        ids[name] = registry.register(source, _meta(name), status="candidate").id
    old, new = _diff_bomb(DIFF_LINES)
    registry.register(old, _meta("DiffBomb"), status="candidate")
    ids["DiffBomb"] = registry.register(new, _meta("DiffBomb"), status="candidate").id
    plain = "\n".join(f"z{i} = {i}" for i in range(DIFF_LINES))  # nothing in common: linear
    registry.register(old + "\n# plain", _meta("DiffPlain"), status="candidate")
    ids["DiffPlain"] = registry.register(plain, _meta("DiffPlain"), status="candidate").id
    return ids


@pytest.fixture(scope="module")
def registry_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("attack-registry") / "registry.db"
    registry = Registry(f"sqlite:///{path}")
    ids = _fill_hostile(registry)
    registry.close()
    # A status no register() call accepts, written as an adversary with the database would.
    import sqlite3

    with sqlite3.connect(path) as connection:
        connection.execute(
            "UPDATE environments SET status = ? WHERE name = 'HostileCard' AND version = 1",
            (HOSTILE_STATUS,),
        )
    return path, ids


def _serve(registry_path, **config):
    path, ids = registry_path
    registry = Registry(f"sqlite:///{path}")
    registry.ids = ids
    srv, thread = start(ServeConfig(port=0, quiet=True, embedder="hashing", **config), registry)
    # A shorter example budget than the default 10 s, so the endless loop below costs
    # at most a few seconds of (sandboxed) CPU; set before the first episode is played.
    srv.app.examples.budget_s = 3.0
    srv.app.catalog.refresh()
    return srv, thread


@pytest.fixture(scope="module")
def srv(registry_path):
    server, thread = _serve(registry_path)
    yield server
    stop(server, thread)


@pytest.fixture(scope="module")
def tsrv(registry_path):
    """The same registry behind a token."""
    server, thread = _serve(registry_path, token=TOKEN)
    yield server
    stop(server, thread)


# ----- helpers ------------------------------------------------------------------------------
def raw(server, method: str, target: str, body: bytes = b"", headers: dict | None = None):
    """One request exactly as given: the target unnormalised, Host as given (None: none)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        sent = {"Host": f"127.0.0.1:{server.port}", **(headers or {})}
        for name, value in sent.items():
            if value is not None:
                conn.putheader(name, value)
        if body:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body or None)
        response = conn.getresponse()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read().decode("utf-8", "replace"),
        )
    finally:
        conn.close()


def wire(server, data: bytes, wait: float = 5.0) -> bytes:
    """Raw bytes on a fresh connection; what came back until close or ``wait`` seconds."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=wait)
    try:
        try:
            sock.sendall(data)
        except OSError:  # the server may answer and close before it has read everything
            pass
        out = b""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if b"\r\n\r\n" in out and _complete(out):
                break
        return out
    finally:
        sock.close()


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    found = re.search(rb"content-length: *(\d+)", head, re.I)
    return bool(found) and len(body) >= int(found.group(1))


def tags_of(text: str) -> list[tuple[str, dict[str, str]]]:
    found: list[tuple[str, dict[str, str]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, {k: v or "" for k, v in attrs}))

        handle_startendtag = handle_starttag

    Collect().feed(text)
    return found


def assert_inert(text: str, where: str) -> None:
    """No markup of the adversary's reaches the browser: no event handlers, no script but
    ours, no javascript:/data: links, no embedded frames or images, no pwned text verbatim."""
    tags = tags_of(text)
    assert [a.get("src") for t, a in tags if t == "script"] == ["/static/app.js"], where
    assert not [t for t, _ in tags if t in ("img", "iframe", "object", "embed", "base")], where
    assert not [(t, a) for t, a in tags if any(k.startswith("on") for k in a)], where
    assert not [(t, a) for t, a in tags if "autofocus" in a and t != "textarea"], where
    for tag, attrs in tags:
        for name in ("href", "src", "action", "formaction", "xlink:href"):
            value = (attrs.get(name) or "").strip().lower()
            if (tag, attrs.get("rel"), value) == ("link", "icon", "data:,"):
                continue  # our own empty favicon
            assert not value.startswith(("javascript:", "data:", "vbscript:")), (where, tag, attrs)
    assert "<script>window.__pwned" not in text, where
    assert " style=" not in text and "<style" not in text, where


def error_of(text: str) -> str:
    found = re.search(r'id="error">(.*?)</p>', text, re.S)
    return html.unescape(found.group(1)) if found else ""


def slug(ident: str) -> str:
    return ident.split("/", 1)[1]


# ----- Host header (DNS rebinding) -----------------------------------------------------------
@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",
        "127.0.0.1:{port}.evil.example",
        "127.0.0.1:{port}@evil.example",
        "127.0.0.1",
        "127.0.0.1:{other}",
        "localhost.:{port}",
        "[::ffff:127.0.0.1]:{port}",
        "127.1:{port}",
        "0x7f000001:{port}",
        "",
    ],
)
def test_a_rebinding_host_header_is_refused_before_anything_is_shown(srv, host):
    value = host.format(port=srv.port, other=srv.port + 1)
    status, headers, text = raw(srv, "GET", "/envs", headers={"Host": value})
    assert status in (400, 403), (value, status)
    assert "registry" not in text.lower() or "Unexpected Host" in text
    assert "HostileCard" not in text and "NumberGuess" not in text
    assert "registry.db" not in text


def test_a_missing_host_header_is_refused(srv):
    status, _, text = raw(srv, "GET", "/envs", headers={"Host": None})
    assert status in (400, 403)
    assert "NumberGuess" not in text


def test_two_host_headers_are_refused(srv):
    for first, second in (("evil.example", f"127.0.0.1:{srv.port}"),
                          (f"127.0.0.1:{srv.port}", "evil.example")):  # fmt: skip
        answer = wire(
            srv, f"GET /envs HTTP/1.1\r\nHost: {first}\r\nHost: {second}\r\n\r\n".encode()
        )
        assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 403")), answer[:80]
        assert b"NumberGuess" not in answer


def test_an_absolute_form_target_cannot_pick_the_host(srv):
    for target, host in (
        ("http://evil.example/envs", f"127.0.0.1:{srv.port}"),
        (f"http://127.0.0.1:{srv.port}/envs", "evil.example"),
        (f"http://127.0.0.1:{srv.port}//evil.example/", f"127.0.0.1:{srv.port}"),
    ):
        status, headers, text = raw(srv, "GET", target, headers={"Host": host})
        assert status in (400, 403), (target, status)
        assert "location" not in headers


def test_the_loopback_aliases_work_and_letter_case_does_not_matter(srv):
    for host in (f"LOCALHOST:{srv.port}", f"[::1]:{srv.port}", f"127.0.0.1:{srv.port}"):
        assert raw(srv, "GET", "/healthz", headers={"Host": host})[0] == 200, host


def test_a_websocket_upgrade_reaches_no_page_and_skips_no_check(srv):
    for path, host in (
        ("/api/v1/envs", f"127.0.0.1:{srv.port}"),
        ("/static/app.js", "evil.example"),
    ):
        answer = wire(
            srv,
            (
                f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode(),
        )
        assert not answer.startswith(b"HTTP/1.1 101"), answer[:80]
        assert b"use strict" not in answer and b"NumberGuess" not in answer


# ----- the token ----------------------------------------------------------------------------
def test_without_the_token_every_path_is_401_and_shows_nothing(tsrv):
    for path in ("/", "/envs", "/openapi.json", "/healthz", "/static/app.js", "/api/v1/envs",
                 "/no-such-page", "/env/HostileCard-v1", "/api/v1/play/" + "a" * 24):  # fmt: skip
        status, headers, text = raw(tsrv, "GET", path)
        assert status == 401, path
        assert "registry.db" not in text and "sqlite" not in text and "HostileCard" not in text
        if headers["content-type"].startswith("text/html"):
            assert "<footer></footer>" in text  # no footer: no registry, no counts
        assert headers["content-security-policy"].startswith("default-src 'none'")
    status, _, text = raw(tsrv, "POST", "/api/v1/play", b"{}", {"Content-Type": "application/json"})
    assert status == 401


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer wrong-" + TOKEN[6:]},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Token {TOKEN}"},
        {"Cookie": f"spade_token={TOKEN[:-2]}"},
        {"Cookie": f"spade_token=; spade_token2={TOKEN}"},
        {"Cookie": f"token={TOKEN}"},
        {"X-Spade-Token": TOKEN},
        {"Authorization": "Bearer wrong-token-xxxxxxxxxxxxxxxx", "Cookie": f"spade_token={TOKEN}"},
    ],
)
def test_near_misses_of_the_token_are_refused(tsrv, headers):
    assert raw(tsrv, "GET", "/api/v1/stats", headers=headers)[0] == 401


def test_the_token_works_as_header_cookie_and_query(tsrv):
    assert raw(tsrv, "GET", "/api/v1/stats", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
    assert raw(tsrv, "GET", "/api/v1/stats", headers={"Authorization": f"bearer {TOKEN}"})[0] == 200
    assert raw(tsrv, "GET", "/api/v1/stats", headers={"Cookie": f"spade_token={TOKEN}"})[0] == 200
    status, headers, text = raw(tsrv, "GET", f"/envs?skill=logic&token={TOKEN}")
    assert status == 303 and headers["location"] == "/envs?skill=logic"
    assert TOKEN not in headers["location"] and TOKEN not in text


@pytest.mark.parametrize(
    "query",
    [
        f"token={TOKEN}&token={TOKEN}",
        f"token={TOKEN[:-1]}",
        f"Token={TOKEN}",
        f"token={TOKEN}%00",
        f"token=%20{TOKEN}",
        f"tok%65n={TOKEN}x",
    ],
)
def test_a_doctored_query_token_sets_no_cookie(tsrv, query):
    status, headers, _ = raw(tsrv, "GET", f"/envs?{query}")
    assert status in (400, 401), query
    assert "set-cookie" not in headers or "spade_token" not in headers["set-cookie"]


@pytest.mark.parametrize(
    "path",
    ["//evil.example/", "/%2F%2Fevil.example/", "/%2Fevil.example/", "/%5Cevil.example/",
     "/\\evil.example/", "/..%2F..%2Fevil", "/%2e%2e/evil"],
)  # fmt: skip
def test_the_token_redirect_never_leaves_this_server(tsrv, path):
    status, headers, _ = raw(tsrv, "GET", f"{path}?token={TOKEN}")
    location = headers.get("location", "")
    assert status == 400 or (location.startswith("/") and not location.startswith(("//", "/\\")))


def test_requests_refused_before_the_token_check_name_no_registry(tsrv):
    for method, target in (("GET", "/a%ffb"), ("GET", "/a/../b"), ("PUT", "/envs"),
                           ("TRACE", "/"), ("GET", "/envs?" + "&".join(f"x{i}=1" for i in range(300))),
                           ("GET", "/envs?q=%ff")):  # fmt: skip
        status, _, text = raw(tsrv, method, target)
        assert status in (400, 401, 405), (method, target)
        assert "registry.db" not in text and "sqlite" not in text
        assert "<footer></footer>" in text or "<footer>" not in text


def test_the_cookies_are_httponly_and_samesite_strict(tsrv, srv):
    _, headers, _ = raw(tsrv, "GET", f"/?token={TOKEN}")
    assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    _, headers, _ = raw(srv, "GET", "/healthz")
    cookie = headers["set-cookie"]
    assert cookie.startswith("spade_csrf=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie


# ----- CSRF ---------------------------------------------------------------------------------
def _form(**fields) -> bytes:
    return urllib.parse.urlencode(fields).encode()


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.mark.parametrize(
    ("cookie", "field", "extra"),
    [
        (None, None, {}),
        (None, "x" * 32, {}),
        ("c" * 32, None, {}),
        ("c" * 32, "d" * 32, {}),
        ("c" * 32, "d" * 32, {"Origin": "null"}),
        ("c" * 32, "C" * 32, {}),
        ("", "", {}),
        (None, None, {"Referer": "http://evil.example/", "Origin": None}),
        ("c" * 32, "c" * 32, {"Origin": "http://evil.example"}),
        ("c" * 32, "c" * 32, {"Origin": "http://127.0.0.1:1"}),
    ],
)
def test_a_forged_page_post_starts_no_session(srv, cookie, field, extra):
    before = len(srv.app.sessions)
    fields = {"env": srv.app.registry.ids["NumberGuess"], "seed": "1"}
    if field is not None:
        fields["csrf"] = field
    headers = dict(FORM, **extra)
    if cookie is not None:
        headers["Cookie"] = f"spade_csrf={cookie}"
    status, _, _ = raw(srv, "POST", "/play", _form(**fields), headers)
    assert status == 403
    assert len(srv.app.sessions) == before


@pytest.mark.parametrize(
    "kind",
    ["text/plain", "multipart/form-data; boundary=x", "application/json", None,
     "text/plain; application/x-www-form-urlencoded"],
)  # fmt: skip
def test_a_page_post_that_is_not_form_data_is_refused(srv, kind):
    csrf = "c" * 32
    status, _, _ = raw(
        srv, "POST", "/play", _form(env=srv.app.registry.ids["NumberGuess"], csrf=csrf),
        {"Content-Type": kind, "Cookie": f"spade_csrf={csrf}"},
    )  # fmt: skip
    assert status == 400


@pytest.mark.parametrize(
    "kind",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
     "text/plain; application/json", "application/json-patch+json", "application/jsonx",
     "text/json", "application/csp-report", None],
)  # fmt: skip
def test_an_api_write_a_form_could_send_is_refused(srv, kind):
    body = json.dumps({"env": srv.app.registry.ids["NumberGuess"], "seed": 0}).encode()
    before = len(srv.app.sessions)
    status, headers, text = raw(srv, "POST", "/api/v1/play", body, {"Content-Type": kind})
    assert status == 415 and headers["content-type"].startswith("application/json")
    assert len(srv.app.sessions) == before


def test_an_api_write_from_another_origin_is_refused_and_no_preflight_is_answered(srv):
    body = json.dumps({"env": srv.app.registry.ids["NumberGuess"]}).encode()
    for origin in ("http://evil.example", f"http://127.0.0.1:{srv.port}.evil.example",
                   f"http://localhost:{srv.port + 1}"):  # fmt: skip
        status, _, _ = raw(srv, "POST", "/api/v1/play", body,
                           {"Content-Type": "application/json", "Origin": origin})  # fmt: skip
        assert status == 403, origin
        assert raw(srv, "DELETE", "/api/v1/play/" + "a" * 24, headers={"Origin": origin})[0] == 403
    status, headers, _ = raw(
        srv, "OPTIONS", "/api/v1/play",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"},
    )  # fmt: skip
    assert status == 405
    assert not [k for k in headers if k.startswith("access-control-")]


def test_no_get_changes_a_play_session(srv):
    client = Client(srv.url)
    csrf = client.csrf()
    status, _, text = client.post("/play", {"env": srv.app.registry.ids["NumberGuess"],
                                            "csrf": csrf, "seed": "0"})  # fmt: skip
    assert status == 200, error_of(text)
    page = re.search(r'action="(/play/[^"]+)"', text).group(1)
    try:
        for query in ("?op=close", f"?op=close&csrf={csrf}", f"?op=step&action=x&csrf={csrf}"):
            assert client.get(page + query)[0] == 400
        assert raw(srv, "HEAD", page, headers={"Cookie": f"spade_csrf={csrf}"})[0] == 200
        status, _, text = client.get(page)
        assert status == 200 and "turn <b>0</b>" in text
        assert client.get("/play?env=spade/NumberGuess-v1")[0] == 405
    finally:
        client.post(page, {"op": "close", "csrf": csrf})


# ----- play sessions ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sessions(srv):
    """A browser's session and an API session of NumberGuess (closed at the end)."""
    browser = Client(srv.url)
    csrf = browser.csrf()
    status, _, text = browser.post(
        "/play", {"env": srv.app.registry.ids["NumberGuess"], "csrf": csrf, "seed": "0"}
    )
    assert status == 200, error_of(text)
    browser_sid = re.search(r'action="/play/([^"]+)"', text).group(1)
    status, _, text = raw(
        srv, "POST", "/api/v1/play",
        json.dumps({"env": srv.app.registry.ids["NumberGuess"], "seed": 0}).encode(),
        {"Content-Type": "application/json"},
    )  # fmt: skip
    assert status == 201, text
    api_sid = json.loads(text)["id"]
    yield {"browser": browser, "csrf": csrf, "browser_sid": browser_sid, "api_sid": api_sid}
    browser.post(f"/play/{browser_sid}", {"op": "close", "csrf": csrf})
    raw(srv, "DELETE", f"/api/v1/play/{api_sid}")


def test_another_browser_cannot_see_or_play_a_browser_session(srv, sessions):
    sid = sessions["browser_sid"]
    stranger = "s" * 32
    assert raw(srv, "GET", f"/play/{sid}", headers={"Cookie": f"spade_csrf={stranger}"})[0] == 403
    assert raw(srv, "GET", f"/play/{sid}")[0] == 403  # no cookie at all
    status, _, _ = raw(srv, "POST", f"/play/{sid}", _form(op="solution", csrf=stranger),
                       dict(FORM, Cookie=f"spade_csrf={stranger}"))  # fmt: skip
    assert status == 403
    assert srv.app.sessions.get(sid, browser_owner(sessions["csrf"])).solution is None


def test_the_api_cannot_reach_a_browser_session(srv, sessions):
    sid = sessions["browser_sid"]
    assert raw(srv, "GET", f"/api/v1/play/{sid}")[0] == 403
    status, _, _ = raw(srv, "POST", f"/api/v1/play/{sid}/solution", b"{}",
                       {"Content-Type": "application/json"})  # fmt: skip
    assert status == 403
    assert raw(srv, "DELETE", f"/api/v1/play/{sid}")[0] == 403
    assert srv.app.sessions.get(sid, browser_owner(sessions["csrf"])).solution is None


def test_a_browser_cannot_reach_an_api_session_with_its_own_cookie(srv, sessions):
    sid, csrf = sessions["api_sid"], sessions["csrf"]
    assert raw(srv, "GET", f"/play/{sid}", headers={"Cookie": f"spade_csrf={csrf}"})[0] == 403
    status, _, _ = raw(srv, "POST", f"/play/{sid}", _form(op="close", csrf=csrf),
                       dict(FORM, Cookie=f"spade_csrf={csrf}"))  # fmt: skip
    assert status == 403
    assert raw(srv, "GET", f"/api/v1/play/{sid}")[0] == 200


def test_a_browser_calling_itself_api_cannot_reach_an_api_session(srv, sessions):
    sid = sessions["api_sid"]
    status, _, text = raw(srv, "GET", f"/play/{sid}", headers={"Cookie": "spade_csrf=api"})
    assert status == 403, "the API's play session was shown to a browser"
    status, _, _ = raw(srv, "POST", f"/play/{sid}", _form(op="hint", csrf="api"),
                       dict(FORM, Cookie="spade_csrf=api"))  # fmt: skip
    assert status == 403, "a page POST acted on the API's play session"


def test_a_non_ascii_csrf_cookie_is_a_403_not_a_crash(srv, sessions):
    status, _, _ = raw(srv, "GET", f"/play/{sessions['browser_sid']}",
                       headers={"Cookie": "spade_csrf=\u00e9t\u00e9"})  # fmt: skip
    assert status == 403


def test_session_ids_are_not_guessable_from_the_outside(srv, sessions):
    for sid in ("a" * 20, "../" + sessions["api_sid"], sessions["api_sid"] + "x",
                sessions["api_sid"].upper(), "%2e%2e"):  # fmt: skip
        status, _, _ = raw(srv, "GET", "/api/v1/play/" + urllib.parse.quote(sid, safe=""))
        assert status in (400, 404), sid


# ----- redirects ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "target",
    [
        "//evil.example/",
        "/\\evil.example/",
        "/%2F/evil.example/",
        "/%2F%2Fevil.example/?sort=regret",
        "/%5C%5Cevil.example/?sort=regret",
        "/%252F%252Fevil.example/?sort=regret",
        "/%09/evil.example/?sort=regret",
        "/%0A/evil.example/?sort=regret",
        "/envs/",
        "/envs//",
        "/evil.example/",
        "/envs?sort=regret&q=%0d%0aSet-Cookie:%20a=b",
        "/map?color=regret&q=//evil.example",
    ],
)
def test_no_redirect_leaves_this_server(srv, target):
    status, headers, _ = raw(srv, "GET", target)
    location = headers.get("location")
    if location is None:
        return
    assert not re.search(r"[\x00-\x20]", location), location
    joined = urllib.parse.urlsplit(urllib.parse.urljoin(srv.url, location))
    assert joined.netloc == f"127.0.0.1:{srv.port}", location
    assert not location.startswith(("//", "/\\")), location
    assert "set-cookie" not in headers or headers["set-cookie"].startswith("spade_csrf=")


def test_a_play_redirect_goes_to_this_server(srv, sessions):
    # The only redirects built from stored text (the environment's ID) after a close.
    status, headers, _ = raw(
        srv, "POST", f"/play/{sessions['browser_sid']}", _form(op="hint", csrf=sessions["csrf"]),
        dict(FORM, Cookie=f"spade_csrf={sessions['csrf']}"),
    )  # fmt: skip
    assert status == 303 and headers["location"].startswith("/play/")


# ----- path traversal ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path",
    [
        "/static/../web/app.py",
        "/static/%2e%2e/app.py",
        "/static/%2e%2e%2fapp.py",
        "/static/..%2f..%2f..%2fetc%2fpasswd",
        "/static/%252e%252e/app.py",
        "/static//etc/passwd",
        "/static/%2Fetc%2Fpasswd",
        "/static/app.js%00.py",
        "/static/..%5capp.py",
        "/static/.%2e/security.py",
        "/static/./../app.py",
        "/static/%c0%ae%c0%ae/app.py",
        "/runs/..%2f..%2fetc%2fpasswd",
        "/runs/...",
        "/runs/%2e%2e",
        "/env/NumberGuess-v1%2f..%2f..%2fapp.py/source.py",
        "/env/..%2fNumberGuess-v1/package.zip",
        "/api/v1/envs/..%2f..%2fapp.py/source",
    ],
)
def test_no_path_traversal_reads_a_file(srv, path):
    status, _, text = raw(srv, "GET", path)
    assert status in (400, 404), (path, status)
    assert "root:" not in text and "import " not in text and "__future__" not in text


def test_downloads_name_only_this_version(srv):
    ident = srv.app.registry.ids["HostileCard"]
    status, headers, body = raw(srv, "GET", f"/env/{slug(ident)}/source.py")
    assert status == 200 and headers["content-disposition"] == (
        'attachment; filename="HostileCard_v1.py"'
    )
    assert headers["x-content-type-options"] == "nosniff"
    assert "<script>window.__pwned = 20</script>" in body  # exact bytes, as a download
    status, headers, _ = raw(srv, "GET", f"/env/{slug(ident)}/package.zip")
    assert status == 200 and re.fullmatch(
        r'attachment; filename="[a-z0-9-]+\.zip"', headers["content-disposition"]
    )


# ----- bodies and slow clients ----------------------------------------------------------------
def _chunked(data: bytes, size: int = 4096) -> bytes:
    parts = [b"%x\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size])
             for i in range(0, len(data), size)]  # fmt: skip
    return b"".join(parts) + b"0\r\n\r\n"


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/api/v1/play", "application/json"), ("/play", "application/x-www-form-urlencoded"),
     ("/api/v1/play/" + "a" * 24 + "/step", "application/json")],
)  # fmt: skip
def test_a_chunked_body_without_length_is_still_capped(srv, path, kind):
    body = _chunked(b'{"action": "' + b"a" * 80_000 + b'"}')
    answer = wire(
        srv,
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nContent-Type: {kind}\r\n"
        f"Transfer-Encoding: chunked\r\n\r\n".encode()
        + body,
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:60]


@pytest.mark.parametrize("length", ["99999999999999999999", "-1", "1e9", "0x10", " 70000"])
def test_a_lying_content_length_is_refused_without_reading(srv, length):
    answer = wire(
        srv,
        f"POST /api/v1/play HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n".encode(),
        wait=5,
    )
    assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 413")), (length, answer[:60])


def test_huge_headers_are_refused(srv):
    answer = wire(
        srv,
        f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nX-Big: {'a' * 200_000}\r\n\r\n".encode(),
    )
    assert answer == b"" or answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 431"))


def test_idle_and_half_sent_connections_do_not_starve_the_server(srv):
    held = []
    try:
        for i in range(40):  # bounded: 40 sockets, closed below
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            if i % 3 == 1:
                sock.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nX-a: ".encode())
            elif i % 3 == 2:
                sock.sendall(
                    f"POST /api/v1/play HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                    "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{".encode()
                )
            held.append(sock)
        status, _, text = raw(srv, "GET", "/healthz")  # gives up after 60 s: starved
        assert status == 200 and text.startswith("ok")
        # Answered while every half-sent request was still held open: served beside them,
        # not after dropping them (a server that takes connections one at a time must).
        for sock in [s for i, s in enumerate(held) if i % 3]:
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):  # nothing to read, and no end of file
                sock.recv(1)
    finally:
        for sock in held:
            sock.close()


@pytest.mark.xfail(
    strict=False,  # uvicorn is not pinned: a release with a header timeout passes it
    reason="uvicorn has no request-header or body timeout (timeout_keep_alive only covers the "
    "gap between requests): a connection that sends half a request line, or headers and no "
    "body, is held open forever, so any local client can hold sockets (up to the process's "
    "file-descriptor limit) slowloris-style.",
)
def test_a_half_sent_request_is_dropped_after_a_while(srv):
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=1)
    try:
        sock.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nX-slow: ".encode())
        deadline = time.monotonic() + 8.0  # keep-alive is 5 s; a header timeout would be less
        closed = False
        while time.monotonic() < deadline and not closed:
            try:
                sock.recv(1024)  # an answer (408) or the end of the connection
                closed = True
            except TimeoutError:
                continue
            except OSError:
                closed = True
        assert closed, "the half-sent request was still held open after 8 s"
    finally:
        sock.close()


# ----- model-written text is inert -------------------------------------------------------------
@pytest.fixture(scope="module")
def hostile_pages(srv):
    """Every page that shows the hostile versions, once their example episodes are played."""
    ids = srv.app.registry.ids
    for name in ("HostileCard", "HostileCard2", "StaticKnobs"):
        record = srv.app.registry.get(ids[name])
        example = srv.app.examples.get(record, wait_s=30)
        assert example is not None, name
    hostile, second = slug(ids["HostileCard"]), slug(ids["HostileCard2"])
    client = Client(srv.url)
    paths = [
        "/", "/envs", "/envs?q=HostileCard", "/envs?q=%3Cscript%3E", "/map",
        "/envs?suite=%3Cb%3Eevil%3C%2Fb%3E", "/envs?status=" + urllib.parse.quote(
            'validated" onmouseover="alert(82)'),
        f"/env/{hostile}", f"/env/{second}", f"/env/{second}/diff",
        f"/env/{hostile}/diff?against={second}", f"/env/{hostile}/play",
        f"/env/{slug(ids['StaticKnobs'])}",
        "/envs?q=%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        "/envs?sort=%3Cscript%3E", "/envs?%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E=1",
        "/nothing%3Cscript%3Ealert(1)%3C/script%3E",
        "/env/Nope%3Cscript%3E-v1", "/env/HostileCardd-v1", "/runs/%3Cscript%3E",
        "/map?color=%3Cscript%3E",
    ]  # fmt: skip
    pages = {path: client.get(path) for path in paths}
    csrf = client.csrf()
    status, _, play = client.post("/play", {"env": ids["HostileCard"], "csrf": csrf, "seed": "0"})
    assert status == 200, error_of(play)
    page = re.search(r'action="(/play/[^"]+)"', play).group(1)
    for op, action in (("hint", None), ("solution", None), ("step", "<script>x</script>"),
                       ("step", "\\boxed{ok}")):  # fmt: skip
        fields = {"op": op, "csrf": csrf}
        if action is not None:
            fields["action"] = action
        client.post(page, fields)
    pages[page] = client.get(page)
    client.post(page, {"op": "close", "csrf": csrf})
    return pages


def test_hostile_text_is_escaped_on_every_page(hostile_pages):
    for path, (status, headers, text) in hostile_pages.items():
        assert status in (200, 400, 404), (path, status)
        assert headers["Content-Type"].startswith("text/html"), path
        assert_inert(text, path)


def test_the_hostile_card_was_really_rendered(hostile_pages, srv):
    """The escaping test above means something only if the hostile text is on the page."""
    card = hostile_pages[f"/env/{slug(srv.app.registry.ids['HostileCard'])}"][2]
    for shown in ("&lt;script&gt;window.__pwned = 21&lt;/script&gt;",  # description
                  "&lt;script&gt;window.__pwned = 71&lt;/script&gt;",  # suite licence
                  "&lt;script&gt;window.__pwned = 76&lt;/script&gt;",  # a tag
                  "&lt;svg onload=alert(74)&gt;",  # unproven note
                  "&lt;script&gt;window.__pwned = 50&lt;/script&gt;",  # a check's name
                  "&lt;script&gt;window.__pwned = 9",  # a chart label (checkpoint)
                  "&lt;/pre&gt;&lt;script&gt;window.__pwned = 22&lt;/script&gt;",  # example
                  "javascript:alert(80)"):  # a parent, as text  # fmt: skip
        assert shown in card, shown
    assert 'href="javascript:' not in card  # the suite's homepage is not a link
    diff = hostile_pages[f"/env/{slug(srv.app.registry.ids['HostileCard2'])}/diff"][2]
    assert "&lt;/span&gt;&lt;/pre&gt;&lt;script&gt;window.__pwned = 90" in diff


def test_a_stored_status_cannot_break_out_of_its_class_attribute(hostile_pages, srv):
    card = hostile_pages[f"/env/{slug(srv.app.registry.ids['HostileCard'])}"][2]
    for tag, attrs in tags_of(card):
        assert "onmouseover" not in attrs, (tag, attrs)
    assert 'class="badge validated&#34; onmouseover=&#34;alert(82)"' in card


def test_the_charts_escape_their_labels(hostile_pages, srv):
    card = hostile_pages[f"/env/{slug(srv.app.registry.ids['HostileCard'])}"][2]
    charts = re.findall(r"<svg .*?</svg>", card, re.S)
    assert charts
    for chart in charts:
        assert not [t for t, _ in tags_of(chart) if t in ("script", "foreignobject", "image")]
        assert "<svg onload" not in chart and "<script>" not in chart


def test_json_answers_are_json_and_never_html(srv):
    ident = slug(srv.app.registry.ids["HostileCard"])
    for path in (f"/api/v1/envs/{ident}", "/api/v1/envs?q=%3Cscript%3E", "/api/v1/envs/%3Cscript%3E",
                 "/api/v1/envs?%3Cscript%3E=1", "/api/v1/search?q=%3Cscript%3E", "/openapi.json",
                 "/api/v1/play/" + "a" * 24, "/api/v1/nothing%3Cscript%3E"):  # fmt: skip
        status, headers, text = raw(srv, "GET", path)
        assert headers["content-type"].startswith("application/json"), path
        assert headers["x-content-type-options"] == "nosniff"
        json.loads(text)
    status, headers, _ = raw(srv, "GET", f"/api/v1/envs/{ident}/source")
    assert status == 200 and headers["content-type"].startswith("text/x-python")
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cross-origin-resource-policy"] == "same-origin"


def test_every_answer_carries_the_policy_even_refusals(srv):
    for method, target, headers in (
        ("GET", "/envs", {"Host": "evil.example"}),
        ("GET", "//x", {}),
        ("PUT", "/", {}),
        ("POST", "/play", {"Content-Type": "text/plain"}),
        ("GET", "/nothing", {}),
        ("GET", "/api/v1/nothing", {}),
    ):
        _, answer, _ = raw(srv, method, target, headers=headers)
        csp = answer["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, target
        assert answer["x-frame-options"] == "DENY" and answer["x-content-type-options"] == "nosniff"


# ----- registry code never runs in the server ------------------------------------------------------
def test_cards_and_knobs_never_run_registry_code_in_the_server(srv, hostile_pages):
    ids = srv.app.registry.ids
    client = Client(srv.url)
    for name in ("HostileCard", "StaticKnobs", "ExecKnobs"):
        for suffix in ("", "/diff", "/package.zip", "/source.py", "/play"):
            client.get(f"/env/{slug(ids[name])}{suffix}")
        client.get(f"/api/v1/envs/{slug(ids[name])}")
    client.get("/export?format=package&q=Knobs")
    assert MARKER not in sys.modules  # set by the code's import: it ran only in the sandbox
    _, _, text = client.get(f"/env/{slug(ids['ExecKnobs'])}")
    assert "Unknown: the class could not be loaded" in text


def test_the_copyable_snippet_cannot_be_given_extra_lines(srv, hostile_pages):
    for name in ("HostileCard", "StaticKnobs"):
        _, _, text = hostile_pages[f"/env/{slug(srv.app.registry.ids[name])}"]
        snippet = html.unescape(re.search(r'<pre id="snippet">(.*?)</pre>', text, re.S).group(1))
        lines = snippet.split("\n")
        assert len(lines) == 5, snippet
        assert lines[4].startswith("# difficulty knobs"), snippet
        assert "\r" not in snippet and "\u2028" not in snippet and "\x0c" not in snippet
        compile(snippet, "<snippet>", "exec")  # still Python, and the knobs stay a comment
        assert "os.system" not in "\n".join(lines[:4])


# ----- resource exhaustion -----------------------------------------------------------------------
def test_an_endless_example_episode_is_bounded(srv):
    ident = srv.app.registry.ids["SpinForever"]
    status, _, text = Client(srv.url).get(f"/env/{slug(ident)}")
    # The page did not wait for the episode: it shows it still playing.
    assert status == 200 and 'id="example-playing"' in text
    example = srv.app.examples.get(srv.app.registry.get(ident), wait_s=20)
    # Ended by the examples' own budget (the message names it), not by this wait.
    assert example is not None and example.failure == "timeout", example
    assert f"may take {srv.app.examples.budget_s:g} s in all" in example.message, example
    _, _, text = Client(srv.url).get(f"/env/{slug(ident)}")
    assert 'id="example-failure"' in text and "timeout" in text


def test_a_crawler_plays_each_example_once(srv):
    ident = srv.app.registry.ids["NumberGuess"]
    srv.app.examples.get(srv.app.registry.get(ident), wait_s=20)
    played = srv.app.examples.played
    client = Client(srv.url)
    for _ in range(10):  # bounded
        assert client.get(f"/env/{slug(ident)}")[0] == 200
    assert srv.app.examples.played == played


def _timed(client: Client, path: str) -> float:
    """CPU seconds this process (the server runs in it) spent on one request: a loaded
    machine stretches wall-clock time, not the work done."""
    started = time.process_time()
    status, _, text = client.get(path)
    assert status == 200, (path, error_of(text))
    return time.process_time() - started


def test_a_pathological_diff_is_cheap(srv):
    client = Client(srv.url)
    ids = srv.app.registry.ids
    plain = _timed(client, f"/env/{slug(ids['DiffPlain'])}/diff")
    bomb = _timed(client, f"/env/{slug(ids['DiffBomb'])}/diff")
    assert bomb < plain + 1.0, (
        f"the diff took {bomb:.1f} CPU s (a plain diff of the size {plain:.1f} CPU s)"
    )


def test_highlighting_a_hostile_source_is_cheap(srv):
    client = Client(srv.url)
    ids = srv.app.registry.ids
    plain = _timed(client, f"/env/{slug(ids['HighlightPlain'])}")
    bomb = _timed(client, f"/env/{slug(ids['HighlightBomb'])}")
    assert bomb < plain + 1.0, (
        f"the page took {bomb:.1f} CPU s (the same size of plain text {plain:.1f} CPU s)"
    )


def test_exports_are_attachments_other_sites_cannot_read(srv):
    client = Client(srv.url)
    for fmt in ("jsonl", "package"):
        status, headers, _ = client.request(f"/export?format={fmt}&q=NumberGuess")
        assert status == 200
        assert headers["Cross-Origin-Resource-Policy"] == "same-origin"
        assert headers["Content-Disposition"].startswith("attachment;")


def test_concurrent_requests_stay_within_the_bounds(srv):
    """A burst of 30 card views of distinct versions: answered, none a 500, bounded players."""
    client = Client(srv.url)
    names = [n for n in srv.app.registry.ids if not n.startswith(("Diff", "Highlight", "Spin"))]
    results: list[int] = []

    def view(name: str) -> None:
        results.append(client.get(f"/env/{slug(srv.app.registry.ids[name])}")[0])

    threads = [threading.Thread(target=view, args=(names[i % len(names)],)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 30 and set(results) == {200}
    assert len(srv.app.examples._players) <= srv.app.examples.max_running


# ----- the last tests change the registry ----------------------------------------------------------
@pytest.mark.xfail(
    strict=True,
    reason="One stored row whose extra JSON (or parents JSON) is not valid JSON makes "
    "env_record raise for it, so every export that includes it fails: GET /export?format=jsonl "
    "is cut off mid-stream and format=package is a 500. A single hostile row denies the "
    "whole corpus export to everyone.",
)
def test_one_malformed_row_does_not_break_every_export(srv, registry_path):
    import sqlite3

    path, ids = registry_path
    connection = sqlite3.connect(path)
    try:
        connection.execute(
            "UPDATE environments SET extra_json = ? WHERE name = 'PoisonRow'", ("{not json",)
        )
        connection.commit()
        client = Client(srv.url)
        status, _, _ = client.request("/export?format=package")
        assert status == 200, f"the whole-corpus package export answered {status}"
        status, _, body = client.request("/export?format=jsonl")
        lines = body.decode().strip().split("\n")
        assert status == 200 and len(lines) >= srv.app.registry.count() - 1
    finally:
        connection.execute("UPDATE environments SET extra_json = '{}' WHERE name = 'PoisonRow'")
        connection.commit()
        connection.close()
