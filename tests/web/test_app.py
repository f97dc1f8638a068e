"""The browser over real HTTP on 127.0.0.1: pages, parameters, downloads and security."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest

from spade_envs.registry import Registry
from spade_envs.runtime import import_corpus
from spade_envs.web.config import ServeConfig

from .conftest import EVIL_DESCRIPTION, Client, start, stop

TOKEN = "a-very-secret-token-0123456789"


@pytest.fixture(scope="module")
def client(server):
    return Client(server.url)


def parse_tags(text: str) -> list[tuple[str, dict[str, str]]]:
    """Every start tag the browser would build from ``text``, with its attributes."""
    from html.parser import HTMLParser

    found: list[tuple[str, dict[str, str]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, {k: v or "" for k, v in attrs}))

    Collect().feed(text)
    return found


def error_of(text: str) -> str:
    import html

    found = re.search(r'id="error">(.*?)</p>', text, re.S)
    return html.unescape(found.group(1)) if found else ""


def test_pages_carry_security_headers_and_no_inline_script_or_style(client, server):
    for path in (
        "/",
        "/envs",
        "/envs?q=maze",
        f"/env/{server.app.registry.ids['NumberGuess'][6:]}",
        "/map",
        "/runs",
        "/runs/run-a",
    ):
        status, headers, text = client.get(path)
        assert status == 200, (path, error_of(text))
        csp = headers["Content-Security-Policy"]
        assert (
            "script-src 'self'" in csp
            and "default-src 'none'" in csp
            and "unsafe-inline" not in csp
        )
        assert (
            headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
        )
        assert headers["Cache-Control"] == "no-store"
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), path  # every script is a file
        assert " style=" not in text and "<style" not in text, path


def test_overview_counts_and_links(client):
    status, _, text = client.get("/")
    assert status == 200
    assert re.search(r"<b>10</b><span>versions</span>", text)
    assert 'href="/envs?skill=logic"' in text and 'href="/envs?status=retired"' in text
    assert "hint gain: return with hint − without (highest of any checkpoint)" in text
    assert "run-a" in text
    newest, highest = text.split("<h2>Newest</h2>")[1].split("<h2>Highest hint gain</h2>")
    assert re.findall(r'<a href="/env/([A-Za-z]+-v\d+)">', newest)[0] == "EvilMarkup-v1"
    ranked = re.findall(r'<a href="/env/([A-Za-z]+-v\d+)">', highest.split("<h2>Runs</h2>")[0])
    assert ranked == ["NumberGuess-v1", "Mastermind-v1", "MazeExplore-v1", "EvilMarkup-v1"]


def test_list_filters_search_sort_and_pages(client, server):
    ids = server.app.registry.ids
    _, _, text = client.get("/envs?skill=math&sort=hint_gain")
    rows = re.findall(r'<a href="/env/([A-Za-z]+-v\d+)">', text)
    assert rows[0] == ids["NumberGuess"][6:] and set(rows) == {
        "NumberGuess-v1",
        "Nim-v1",
        "NumberGuessHarder-v1",
    }
    _, _, text = client.get("/envs?q=%22wider+range%22")
    assert re.findall(r'<a href="/env/([A-Za-z]+-v\d+)">', text) == ["NumberGuessHarder-v1"]
    _, _, text = client.get("/envs?q=maze+path&mode=semantic")
    assert re.findall(r'<a href="/env/([A-Za-z]+-v\d+)">', text)[0] == "MazeExplore-v1"
    _, _, text = client.get("/envs?size=25&sort=name&dir=asc")
    assert "page 1 of" not in text  # one page only: no pager
    _, _, text = client.get("/envs?hint_gain_min=0.4&hint_gain_max=1")
    assert re.findall(r'<a href="/env/([A-Za-z]+-v\d+)">', text) == ["NumberGuess-v1"]
    assert 'id="summary">1 environment version' in text
    assert "<legend" in text and ">hint gain</legend>" in text and ">regret<" not in text


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/envs?skill=math&sort=regret", "/envs?skill=math&sort=hint_gain"),
        (
            "/envs?regret_min=0.4&regret_max=1&sort=regret&dir=asc",
            "/envs?hint_gain_min=0.4&hint_gain_max=1&sort=hint_gain&dir=asc",
        ),
        ("/export?format=jsonl&regret_min=0.4", "/export?format=jsonl&hint_gain_min=0.4"),
        ("/map?color=regret&skill=math", "/map?color=hint_gain&skill=math"),
    ],
)
def test_links_from_before_the_hint_gain_rename_are_redirected(server, old, new):
    status, headers, _ = Client(server.url, follow=False).get(old)
    assert status == 301 and headers["Location"] == new
    status, _, text = Client(server.url).get(old)
    assert status == 200, error_of(text)


def test_a_parameter_under_its_old_and_new_name_is_given_twice(client):
    status, _, text = client.get("/envs?regret_min=0.1&hint_gain_min=0.2")
    assert status == 400 and "'hint_gain_min' was given 2 times" in error_of(text)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/envs?skill=logik", "skill must be one of: "),
        (
            "/envs?sort=popularity",
            "sort must be one of: relevance, created, hint_gain, novelty, win_rate, name",
        ),
        ("/envs?page=0", "page must be at least 1"),
        ("/envs?page=99", "page 99 is past the last page (1) of 10 results."),
        ("/envs?hint_gain_min=abc", "hint_gain_min must be a number such as 0.25"),
        (
            "/envs?hint_gain_min=1&hint_gain_max=0",
            "hint_gain_min (1) is above hint_gain_max (0); swap them.",
        ),
        ("/envs?skil=logic", "Unknown parameter 'skil'. Did you mean 'skill'?"),
        ("/envs?q=" + "x" * 201, "q is 201 characters long; at most 200 are accepted."),
        ("/envs?q=a&q=b", "Parameter 'q' was given 2 times; give it once."),
        ("/map?color=size", "color must be one of: skill, kind, origin, status, hint_gain"),
        ("/map?n=5", "n must be at least 10"),
        ("/export?format=csv", "format must be one of: jsonl, parquet, package"),
        ("/export?q=zzqqxx", "No environment matches these filters: there is nothing to export."),
        ("/?x=1", "Unknown parameter 'x'."),
        ("/env/NumberGuess-v0", "'NumberGuess-v0' is not an environment version"),
    ],
)
def test_bad_parameters_are_400_with_a_message(client, path, message):
    status, _, text = client.get(path)
    assert status == 400
    assert message in error_of(text)


def test_unknown_pages_and_environments_are_404_with_suggestions(client):
    status, _, text = client.get("/env/NumberGues-v1")
    assert (
        status == 404
        and "'NumberGues' is not in this registry. Did you mean 'NumberGuess'" in error_of(text)
    )
    status, _, text = client.get("/env/NumberGuess-v7")
    assert status == 404 and "Did you mean 'spade/NumberGuess-v1'" in error_of(text)
    status, _, text = client.get("/nothing/here")
    assert status == 404 and "There is no page at /nothing/here." in error_of(text)
    status, _, _ = client.get("/runs/run-z")
    assert status == 404


def test_the_id_as_printed_elsewhere_reaches_the_page(client):
    # spade/Name-vN, as gym.make, the CLI and the API print it: a permanent redirect.
    import http.client
    import urllib.parse

    where = urllib.parse.urlsplit(client.base)
    for path, target in (
        ("/env/spade/NumberGuess-v1", "/env/NumberGuess-v1"),
        ("/env/spade/NumberGuess-v1/source.py", "/env/NumberGuess-v1/source.py"),
        ("/env/spade/NumberGuess-v1/play?seat=0", "/env/NumberGuess-v1/play?seat=0"),
    ):
        connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
        connection.request("GET", path)  # not followed: the redirect itself
        reply = connection.getresponse()
        assert (reply.status, reply.getheader("location")) == (308, target), path
        connection.close()
    # Followed, it is the page itself.
    status, _, text = client.get("/env/spade/NumberGuess-v1")
    assert status == 200 and "gym.make(&#39;spade/NumberGuess-v1&#39;)" in text
    # Anything else under spade/ is refused or no page (never a redirect elsewhere).
    for path in ("/env/spade/..%2f..%2fetc", "/env/spade/NumberGuess-v1/other", "/env/spade//x"):
        status, _, _ = client.get(path)
        assert status in (400, 404), path


def test_the_environment_page_shows_everything_stored(client, server):
    ids = server.app.registry.ids
    _, _, text = client.get("/env/NumberGuess-v1")
    assert "gym.make(&#39;spade/NumberGuess-v1&#39;)" in text
    assert "native (spade_envs protocol" in text  # the dialect it was read as
    assert (
        'href="/env/NumberGuess-v1/source.py"' in text and 'href="/env/NumberGuess-v1/play"' in text
    )
    assert "mean return per checkpoint" in text and "ckpt-0" in text and "ckpt-1" in text
    assert text.count('<details class="report"') == 2  # two validation reports, newest first
    assert text.index('"badge failed">FAILED<') < text.index('"badge passed">passed<')
    assert "the solution lost on seed 3" in text and "&lt;b&gt;bold?&lt;/b&gt;" in text
    assert 'href="/env/NumberGuessHarder-v1">spade/NumberGuessHarder-v1</a>' in text  # a child
    assert '<span class="k">class</span> <span class="cl">NumberGuess</span>' in text
    similar = text.split("<h2>Similar environments</h2>")[1].split("</section>")[0]
    assert re.findall(r'<a href="/env/([A-Za-z]+-v\d+)">', similar)[0] == "NumberGuessHarder-v1"
    assert float(re.search(r'id="novelty">([0-9.]+)<', similar).group(1)) < 0.2
    _, _, child = client.get("/env/NumberGuessHarder-v1")
    assert f'href="/env/NumberGuess-v1">{ids["NumberGuess"]}</a>' in child  # its parent
    assert (
        "Grounding document" in child
        and "A grounding text about &lt;b&gt;guessing&lt;/b&gt;" in child
    )
    assert "tiny-model" in child


def test_source_download_is_the_exact_code(client, server):
    status, headers, body = client.request("/env/Mastermind-v1/source.py")
    assert status == 200
    assert headers["Content-Disposition"] == 'attachment; filename="Mastermind_v1.py"'
    assert headers["Content-Type"].startswith("text/x-python")
    assert body.decode() == server.app.registry.get("spade/Mastermind-v1").source


def test_export_jsonl_is_what_the_cli_writes_for_the_filter(client, server, tmp_path):
    registry = server.app.registry
    status, headers, body = client.request("/export?format=jsonl&status=validated&skill=math")
    assert status == 200 and headers["Content-Disposition"].endswith('.jsonl"')
    lines = body.decode().splitlines()
    expected = [
        json.dumps(r.to_dict(), ensure_ascii=False)
        for r in registry.iter_records(status="validated")
        if r.skill == "math"
    ]
    assert lines == expected
    path = tmp_path / "export.jsonl"
    path.write_bytes(body)
    fresh = Registry(f"sqlite:///{tmp_path / 'fresh.db'}")
    assert len(import_corpus(fresh, path).imported) == 3
    fresh.close()


def test_downloads_leave_no_temporary_files(client, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    import urllib.request

    for fmt, suffix in (("parquet", "parquet"), ("package", "zip"), ("jsonl", "jsonl")):
        # HEAD answers what GET would, without writing the file only to throw it away (its
        # temporary directory was once removed only after the response, so a client could
        # still see it).
        request = urllib.request.Request(client.base + f"/export?format={fmt}", method="HEAD")
        with urllib.request.urlopen(request) as response:
            assert response.status == 200 and response.read() == b""
            head = response.headers
        assert list(tmp_path.iterdir()) == []
        with urllib.request.urlopen(client.base + f"/export?format={fmt}") as response:
            assert response.status == 200 and len(response.read()) > 1000
            assert response.headers["Content-Type"] == head["Content-Type"]
            # No length it does not know (a streamed GET sends none; HEAD once said 0).
            assert head["Content-Length"] in (None, response.headers["Content-Length"])
        for headers in (head, response.headers):
            assert re.fullmatch(
                rf'attachment; filename="spade-corpus-[0-9-]+-[0-9]+\.{suffix}"',
                headers["Content-Disposition"],
            )
        assert list(tmp_path.iterdir()) == []


def test_export_parquet_and_package_reimport(client, tmp_path):
    import pyarrow.parquet as pq

    status, headers, body = client.request("/export?format=parquet&q=number")
    assert status == 200 and headers["Content-Type"] == "application/vnd.apache.parquet"
    (tmp_path / "e.parquet").write_bytes(body)
    table = pq.read_table(tmp_path / "e.parquet")
    assert sorted(table.column("name").to_pylist()) == ["NumberGuess", "NumberGuessHarder"]
    status, headers, body = client.request("/export?format=package&kind=game")
    assert status == 200 and headers["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        archive.extractall(tmp_path / "pkg")
    [root] = list((tmp_path / "pkg").iterdir())
    fresh = Registry(f"sqlite:///{tmp_path / 'fresh.db'}")
    result = import_corpus(fresh, root, "package")
    assert [r.name for r in result.imported] == ["Nim"]
    fresh.close()


@pytest.mark.parametrize(
    "path",
    [
        "/static/../app.py",
        "/static/%2e%2e/app.py",
        "/runs/..%2f..%2fetc%2fpasswd",
        "/env/..%2F..%2Fetc%2Fpasswd/source.py",
        "/static/..%5capp.py",
        "/runs/%2e",
    ],
)
def test_no_path_traversal(client, path):
    status, _, text = client.get(path)
    assert status in (400, 404)
    assert "root:" not in text and "import" not in text


def test_static_files_and_health(client):
    status, headers, text = client.get("/static/app.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert "data-copy" in text
    assert client.get("/static/style.css")[0] == 200
    assert client.get("/static/app.py")[0] == 404
    status, _, text = client.get("/healthz")
    assert status == 200 and text.startswith("ok 10 versions")


def test_methods_bodies_and_hosts_are_checked(client, server):
    status, headers, _ = client.request("/envs", data={"q": "x"})
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    import urllib.request

    for method in ("PUT", "DELETE"):
        req = urllib.request.Request(server.url + "envs", method=method)
        try:
            urllib.request.urlopen(req)
        except urllib.error.HTTPError as exc:
            assert exc.code == 405
    status, _, text = client.get("/", headers={"Host": f"evil.example:{server.port}"})
    assert status == 403 and "Unexpected Host header" in error_of(text)
    assert client.get("/", headers={"Host": f"localhost:{server.port}"})[0] == 200
    big = {"csrf": client.csrf(), "env": "x" * 70_000}
    assert client.request("/play", data=big)[0] == 413
    status, _, text = client.post("/play", {"x": "1"}, headers={"Content-Type": "text/plain"})
    assert status == 400 and "must be HTML form data" in error_of(text)


def test_posts_need_the_csrf_value_and_this_origin(client, server):
    csrf = client.csrf()
    env = server.app.registry.ids["CodeTrace"]
    assert client.post("/play", {"env": env})[0] == 403
    assert client.post("/play", {"env": env, "csrf": "x" * 32})[0] == 403
    status, _, text = client.post(
        "/play", {"env": env, "csrf": csrf}, headers={"Origin": "http://evil.example"}
    )
    assert status == 403 and "Cross-origin request" in error_of(text)
    stranger = Client(server.url)  # another browser: its own cookie, which does not match
    stranger.csrf()
    assert stranger.post("/play", {"env": env, "csrf": csrf})[0] == 403
    status, _, text = client.post("/play", {"env": env, "csrf": csrf, "seed": "-1"})
    assert status == 400 and "seed must be at least 0" in error_of(text)


def test_play_over_http_to_a_win(client, server):
    csrf = client.csrf()
    raw = Client(server.url, follow=False)
    raw.jar = client.jar
    raw.opener.add_handler(__import__("urllib.request").request.HTTPCookieProcessor(client.jar))
    status, headers, _ = raw.post("/play", {"env": "spade/CodeTrace-v1", "csrf": csrf, "seed": "3"})
    assert status == 303 and re.fullmatch(r"/play/[A-Za-z0-9_-]{20,40}", headers["Location"])
    page = headers["Location"]
    status, headers, _ = raw.post(page, {"op": "solution", "csrf": csrf})
    assert status == 303 and headers["Location"] == page + "#end"
    _, _, text = client.get(page)
    actions = [a for a in re.findall(r'name="action" value="([^"]*)"', text)]
    assert actions
    import html

    for action in actions:
        client.post(page, {"op": "step", "action": html.unescape(action), "csrf": csrf})
    _, _, text = client.get(page)
    assert 'id="outcome">Episode over (terminated): return 1, WON.' in text
    status, _, text = Client(server.url).get(page)
    assert status == 403
    status, headers, _ = raw.post(page, {"op": "close", "csrf": csrf})
    assert status == 303 and headers["Location"] == "/env/CodeTrace-v1"
    assert client.get(page)[0] == 404


def test_model_written_markup_is_escaped_everywhere(client, server):
    csrf = client.csrf()
    pages = [
        client.get(p)[2]
        for p in ("/envs?q=EvilMarkup", "/env/EvilMarkup-v1", "/envs?q=script", "/map")
    ]
    status, _, play = client.post(
        "/play", {"env": "spade/EvilMarkup-v1", "csrf": csrf, "seed": "0"}
    )
    assert status == 200  # followed the redirect to the session page
    session = re.search(r'action="(/play/[^"]+)"', play).group(1)
    client.post(session, {"op": "hint", "csrf": csrf})
    client.post(session, {"op": "step", "action": "<script>nope</script>", "csrf": csrf})
    _, _, play = client.get(session)
    for text in [*pages, play]:
        tags = parse_tags(text)
        assert not [t for t, a in tags if t in ("img", "iframe", "object", "embed")]
        assert not [a for _, a in tags if any(name.startswith("on") for name in a)]
        assert [a.get("src") for t, a in tags if t == "script"] == ["/static/app.js"]
        assert not [
            a for _, a in tags if "javascript:" in (a.get("href") or "") + (a.get("src") or "")
        ]
    env_page = pages[1]
    assert (
        "Says &lt;script&gt;window.__pwned = 1; alert(&#39;description&#39;)&lt;/script&gt;"
        in env_page
    )
    assert "&lt;img src=x onerror=&#34;window.__pwned = 10&#34;&gt;" in env_page  # the stored hint
    assert "&lt;script&gt;window.__pwned = 11&lt;/script&gt;" in env_page  # extra metadata
    assert "&lt;script&gt;window.__pwned = 9&lt;/script&gt;" in env_page  # a parent "name"
    assert "&lt;script&gt;window.__pwned = 3&lt;/script&gt;&lt;img src=x" in play  # observation
    assert "&lt;script&gt;window.__pwned = 8&lt;/script&gt;say ok" in play  # the env's hint
    assert "&gt; &lt;script&gt;nope&lt;/script&gt;" in play  # the player's own action
    assert "&lt;iframe src=&#34;javascript:window.__pwned = 7&#34;&gt;" in play
    assert EVIL_DESCRIPTION not in "".join(pages)  # never verbatim


def test_runs_pages_draw_every_metric(client):
    _, _, text = client.get("/runs")
    assert 'href="/runs/run-a"' in text and 'href="/runs/run-b"' in text
    _, _, text = client.get("/runs/run-a")
    assert text.count("<polyline") == 6 + 2  # six numeric series, plus with/without hint together
    assert "agent return with and without the hint" in text and "tokens_per_s" in text
    headings = re.findall(r"<h2>([^<]+)</h2>", text)
    assert headings[:4] == ["Agent", "Designer", "Evaluation", "Time and throughput"]
    assert '<meta http-equiv="refresh" content="30">' in text
    assert "&#34;preset&#34;: &#34;&lt;tiny&gt;&#34;" in text


def test_the_map_draws_a_point_per_embedded_version(client, server):
    _, _, text = client.get("/map")
    assert text.count('class="pt"') == server.app.registry.count()
    _, _, text = client.get("/map?color=hint_gain&skill=math")
    assert text.count('class="pt"') == 3 and "not played" in text and "hint gain +1" in text
    assert 'href="/env/Nim-v1"' in text


def test_a_token_protects_every_request(web_registry, runs_dir):
    config = ServeConfig(port=0, token=TOKEN, quiet=True, embedder="hashing")
    server, thread = start(config, web_registry)
    try:
        anonymous = Client(server.url)
        status, _, text = anonymous.get("/envs")
        assert status == 401 and "needs its access token" in error_of(text)
        assert "registry.db" not in text and "versions" not in text  # no footer for strangers
        assert anonymous.get("/static/app.js")[0] == 401
        assert anonymous.get("/envs?token=wrong-token-0123456789")[0] == 401
        raw = Client(server.url, follow=False)
        status, headers, _ = raw.get(f"/envs?skill=logic&token={TOKEN}")
        assert status == 303 and headers["Location"] == "/envs?skill=logic"
        cookie = headers["Set-Cookie"]
        assert (
            f"spade_token={TOKEN}" in cookie
            and "HttpOnly" in cookie
            and "SameSite=Strict" in cookie
        )
        assert raw.get("/envs?skill=logic")[0] == 200  # the cookie now carries it
        bearer = Client(server.url)
        assert bearer.get("/envs", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
        assert bearer.get("/envs", headers={"Authorization": "Bearer nope"})[0] == 401
    finally:
        stop(server, thread)


def test_every_page_works_on_an_empty_registry_and_on_postgresql(registry_url, tmp_path):
    from .conftest import embed, fill_registry

    registry = Registry(registry_url)
    config = ServeConfig(port=0, quiet=True, embedder="hashing")
    server, thread = start(config, registry)
    try:
        client = Client(server.url)
        for path in ("/", "/envs", "/envs?q=maze", "/envs?q=maze&mode=semantic", "/map", "/runs"):
            status, _, text = client.get(path)
            assert status == 200, (path, error_of(text))
        assert "The registry is empty" in client.get("/")[2]
        assert client.get("/export")[0] == 400
        fill_registry(registry)
        embed(registry)
        server.app.catalog.refresh()  # pages follow within refresh_s; the test does not wait
        server.app.vectors.refresh(force=True)
        _, _, text = client.get("/envs?q=number&skill=math&sort=hint_gain")
        assert re.findall(r'<a href="/env/([A-Za-z]+-v\d+)">', text)[0] == "NumberGuess-v1"
        _, _, text = client.get("/envs?q=maze&mode=semantic")
        assert re.findall(r'<a href="/env/([A-Za-z]+-v\d+)">', text)[0] == "MazeExplore-v1"
        status, _, text = client.get("/env/CodeTrace-v1")
        assert status == 200 and "Grounding document" in text
        status, _, body = client.request("/export?format=jsonl&kind=game")
        assert status == 200 and [json.loads(x)["name"] for x in body.decode().splitlines()] == [
            "Nim"
        ]
    finally:
        stop(server, thread)
