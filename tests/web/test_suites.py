"""Suite environments in the browser over real HTTP on 127.0.0.1: the suite filter and
its counts, the suite's provenance on the environment page, and its escaping."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from spade_envs import describe, seed_class
from spade_envs.registry import Registry
from spade_envs.seeds import seed_source
from spade_envs.web.catalog import Catalog
from spade_envs.web.config import ServeConfig
from spade_envs.web.params import HTTPError, Params
from spade_envs.web.search import ListQuery, Searcher, parse_list_query

from .conftest import Client, fill_registry, start, stop
from .test_app import error_of, parse_tags

#: A reasoning-gym version whose stored provenance is full of markup.
HOSTILE_SUITE = {
    "id": "reasoning-gym",
    "task": "<script>window.__pwned = 20</script>chain_sum",
    "level": "hard",
    "version": "0.1.19",
    "distribution": "reasoning-gym",
    "licence": 'Apache-2.0"><img src=x onerror="window.__pwned = 21">',
    "homepage": "javascript:window.__pwned = 22",
    "unproven": '<b onmouseover="window.__pwned = 23">no stored answer</b>',
}


def register_hostile(registry) -> str:
    """Register :data:`HOSTILE_SUITE` directly (no validation), as an import would."""
    name = "ReasoningGymChainSumHard"
    meta = dataclasses.replace(
        describe(seed_class("NumberGuess")),
        name=name,
        origin="imported",
        description="A reasoning-gym task <i>imported</i> from the suite.",
    )
    source = seed_source("NumberGuess").replace("class NumberGuess(", f"class {name}(")
    record = registry.register(
        source,
        meta,
        status="unvalidated",
        suite="reasoning-gym",
        extra={"suite": dict(HOSTILE_SUITE)},
    )
    return record.id


def rows_of(text: str) -> list[str]:
    return re.findall(r'<a href="/env/([A-Za-z0-9]+-v\d+)">', text)


def options_of(text: str, name: str) -> list[str]:
    return [
        a["value"]
        for t, a in parse_tags(text.split(f'<select name="{name}">')[1].split("</select>")[0])
        if t == "option"
    ]


@pytest.fixture(scope="module")
def suite_registry(tmp_path_factory):
    """The seeds of ``fill_registry``, RLVE's CRT imported for real (validated in the
    sandbox) and a reasoning-gym version registered directly with hostile provenance."""
    from spade_envs.suites.importer import import_suite

    path = tmp_path_factory.mktemp("web-suites") / "registry.db"
    registry = Registry(f"sqlite:///{path}")
    ids = fill_registry(registry)
    result = import_suite(registry, "rlve", tasks=["CRT"], progress=False, seed=7, workers=1)
    assert [e.status for e in result.envs] == ["validated"]
    ids["rlve"] = result.envs[0].env_id
    ids["hostile"] = register_hostile(registry)
    registry.ids = ids
    yield registry
    registry.close()


@pytest.fixture(scope="module")
def server(suite_registry):
    config = ServeConfig(port=0, quiet=True, embedder="hashing")
    srv, thread = start(config, suite_registry)
    srv.app.catalog.refresh()
    yield srv
    stop(srv, thread)


@pytest.fixture(scope="module")
def client(server):
    return Client(server.url)


def test_the_catalog_reads_the_suite_column(suite_registry):
    ids = suite_registry.ids
    row = suite_registry.light_rows(0, 100)[-1]
    assert len(row) == 11 and row.suite == "reasoning-gym"
    snap = Catalog(suite_registry).refresh()
    assert snap.facet_counts("suite") == {"": 10, "rlve": 1, "reasoning-gym": 1}
    assert snap.choices("suite") == ["reasoning-gym", "rlve"]  # no suite is no choice
    result = Searcher(None).run(snap, ListQuery(suite="rlve"))
    assert [snap.env_id(int(p)) for p in result.positions] == [ids["rlve"]]
    assert result.facets["suite"] == {"": 10, "rlve": 1, "reasoning-gym": 1}  # its own: ignored
    assert result.facets["status"] == {"validated": 1}
    assert ListQuery(suite="rlve", skill="logic").filters() == {"skill": "logic", "suite": "rlve"}


def test_an_unknown_suite_is_a_400_with_a_hint(suite_registry, tmp_path):
    snap = Catalog(suite_registry).refresh()

    def parse(registry_snap, **values):
        params = Params({k: [v] for k, v in values.items()})
        query = parse_list_query(params, registry_snap)
        params.done()
        return query

    assert parse(snap, suite="rlve").suite == "rlve"
    with pytest.raises(
        HTTPError, match=r"^suite must be one of: reasoning-gym, rlve; got 'rlv'\. Did you mean"
    ):
        parse(snap, suite="rlv")
    plain = Registry(f"sqlite:///{tmp_path / 'plain.db'}")
    try:
        plain.register(seed_source("Nim"), describe(seed_class("Nim")), status="validated")
        bare = Catalog(plain).refresh()
        assert bare.facet_counts("suite") == {"": 1} and bare.choices("suite") == []
        assert parse(bare, suite="").suite is None  # the form's "any"
        with pytest.raises(HTTPError, match=r"^suite must be one of: \(none yet\); got 'rlve'\.$"):
            parse(bare, suite="rlve")
    finally:
        plain.close()


def test_the_suite_column_on_postgresql_and_sqlite(registry_url):
    registry = Registry(registry_url)
    try:
        key = register_hostile(registry)
        snap = Catalog(registry).refresh()
        assert snap.facet_counts("suite") == {"reasoning-gym": 1}
        assert snap.env_id(0) == key and snap.value("suite", 0) == "reasoning-gym"
    finally:
        registry.close()


def test_the_list_filters_by_suite(client, server):
    ids = server.app.registry.ids
    status, _, text = client.get("/envs?suite=rlve")
    assert status == 200, error_of(text)
    assert rows_of(text) == [ids["rlve"][6:]]
    assert 'id="summary">1 environment version' in text
    assert options_of(text, "suite") == ["", "reasoning-gym", "rlve"]
    assert '<option value="rlve" selected>rlve (1)</option>' in text
    assert '<option value="reasoning-gym">reasoning-gym (1)</option>' in text
    assert '<input type="hidden" name="suite" value="rlve">' in text  # the export keeps it
    _, _, text = client.get("/envs?suite=reasoning-gym&status=unvalidated")
    assert rows_of(text) == [ids["hostile"][6:]]
    _, _, text = client.get("/envs?suite=rlve&skill=math")
    assert rows_of(text) == [] and "Nothing matches" in text
    _, _, text = client.get("/envs?size=100")
    assert len(rows_of(text)) == 12  # no filter: every version, of a suite or not
    status, _, text = client.get("/envs?suite=rlv")
    assert status == 400
    assert error_of(text) == (
        "suite must be one of: reasoning-gym, rlve; got 'rlv'. Did you mean 'rlve'?"
    )
    status, _, text = client.get("/envs?suit=rlve")
    assert status == 400 and "Did you mean 'suite'?" in error_of(text)


def test_export_and_map_take_the_suite_filter(client, server):
    status, _, body = client.request("/export?format=jsonl&suite=rlve")
    assert status == 200
    lines = [json.loads(x) for x in body.decode().splitlines()]
    assert [(x["suite"], x["extra"]["suite"]["task"]) for x in lines] == [("rlve", "CRT")]
    status, _, text = client.get("/map?suite=rlve")
    assert status == 200 and options_of(text, "suite") == ["", "reasoning-gym", "rlve"]
    assert client.get("/map?suite=nope")[0] == 400


def test_the_overview_counts_by_suite(client):
    _, _, text = client.get("/")
    chart = text.split('aria-label="by suite"')[1].split("</svg>")[0]
    assert re.findall(r'<a href="([^"]+)">', chart) == [
        "/envs?suite=rlve",
        "/envs?suite=reasoning-gym",
    ]  # equal counts keep the catalog's order; versions of no suite are not a bar
    assert 'href="/envs?skill=logic"' in text  # the other facets as before


def test_the_environment_page_shows_the_suite(client, server):
    ids = server.app.registry.ids
    status, _, text = client.get(f"/env/{ids['rlve'][6:]}")
    assert status == 200, error_of(text)
    suite = text.split('<p class="facts" id="suite">')[1].split("</p>")[0]
    assert suite == (
        'suite <b><a href="https://github.com/Zhiyuan-Zeng/RLVE">rlve</a></b> · '
        "package <b>rlve-gym 0.0.1</b> · task <b>CRT</b> · level <b>0</b> · "
        'licence <b>MIT</b> · <a href="/envs?suite=rlve">every version of the suite</a>'
    )
    assert 'id="suite-unproven"' not in text and 'id="suite-rejected"' not in text
    _, _, plain = client.get("/env/NumberGuess-v1")
    assert 'id="suite"' not in plain


def test_stored_suite_provenance_is_escaped(client, server):
    ids = server.app.registry.ids
    pages = [
        client.get(p)[2] for p in (f"/env/{ids['hostile'][6:]}", "/envs?suite=reasoning-gym", "/")
    ]
    for text in pages:
        tags = parse_tags(text)
        assert not [t for t, a in tags if t in ("img", "iframe", "object", "embed", "i")]
        assert not [a for _, a in tags if any(name.startswith("on") for name in a)]
        assert [a.get("src") for t, a in tags if t == "script"] == ["/static/app.js"]
        assert not [a for _, a in tags if "javascript:" in (a.get("href") or "")]
    env_page = pages[0]
    suite = env_page.split('<p class="facts" id="suite">')[1].split("</p>")[0]
    assert suite.startswith("suite <b>reasoning-gym</b> · ")  # not a link: not http(s)
    assert "task <b>&lt;script&gt;window.__pwned = 20&lt;/script&gt;chain_sum</b>" in suite
    assert (
        "licence <b>Apache-2.0&#34;&gt;&lt;img src=x onerror=&#34;window.__pwned = 21&#34;&gt;"
        "</b>" in suite
    )
    assert (
        '<p class="note" id="suite-unproven">Unproven: &lt;b onmouseover=&#34;window.__pwned = '
        "23&#34;&gt;no stored answer&lt;/b&gt;</p>" in env_page
    )
    assert HOSTILE_SUITE["task"] not in "".join(pages)  # never verbatim
