"""A quarantined version in the corpus browser: the page's quarantine box and the API's
``quarantine`` field, with hostile evidence (markup, 100 KB) escaped and shortened."""

from __future__ import annotations

import pytest

from spade_envs import describe, seed_class
from spade_envs.seeds import seed_source

from .conftest import Client, embed
from .test_api import Api

NIM = "spade/Nim-v1"
#: What a hostile environment could make a play and its replay see: markup, 100 KB.
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">' + (
    "A" * 100_000
)


@pytest.fixture(scope="module")
def web_registry(tmp_path_factory):
    """Two seeds, Nim quarantined with hostile evidence (overrides conftest's registry)."""
    from spade_envs.registry import QuarantineEvidence, Registry

    path = tmp_path_factory.mktemp("quarantine-registry") / "registry.db"
    registry = Registry(f"sqlite:///{path}")
    for name in ("Nim", "NumberGuess"):
        registry.register(seed_source(name), describe(seed_class(name)), status="validated")
    registry.quarantine(
        NIM,
        QuarantineEvidence(
            NIM, 42, 0, "observation", HOSTILE, "<b>calm</b>", detail=HOSTILE, at="2026-03-01"
        ),
    )
    embed(registry)
    registry.ids = {"Nim": NIM, "NumberGuess": "spade/NumberGuess-v1"}
    yield registry
    registry.close()


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("no-runs")


def test_the_page_shows_a_quarantine_box_with_escaped_shortened_evidence(server):
    status, _, page = Client(server.url).get("/env/Nim-v1")
    assert status == 200
    box = page.split('<section class="quarantine" id="quarantine"')[1].split("</section>")[0]
    assert "Quarantined: a replay audit diverged" in box
    assert "<td>42</td>" in box and "the reset (step 0)" in box and "observation" in box
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in box
    assert "&lt;b&gt;calm&lt;/b&gt;" in box
    assert "<script" not in box and "<img" not in box and "<b>calm" not in box
    assert box.count("A" * 900) == 2 and "A" * 1_000 not in box  # played and detail, cut
    assert "…" in box and len(page) < 60_000
    assert "spade-envs revalidate spade/Nim-v1" in box
    assert '<span class="badge quarantined">quarantined</span>' in page
    _, _, other = Client(server.url).get("/env/NumberGuess-v1")
    assert 'class="quarantine"' not in other


def test_the_api_gives_the_evidence_or_null(server):
    api = Api(server.url)
    detail = api.get("/api/v1/envs/Nim-v1")
    assert detail["status"] == "quarantined"
    quarantine = detail["quarantine"]
    assert set(quarantine) == {"seed", "step", "field", "played", "replayed", "detail", "at"}
    assert (quarantine["seed"], quarantine["step"], quarantine["field"]) == (42, 0, "observation")
    assert quarantine["played"].startswith("<script>window.__pwned = 1</script>")  # JSON text
    assert len(quarantine["played"]) == 1_000 and quarantine["played"].endswith("…")
    assert (quarantine["replayed"], quarantine["at"]) == ("<b>calm</b>", "2026-03-01")
    assert api.get("/api/v1/envs/NumberGuess-v1")["quarantine"] is None


def test_the_list_filters_by_the_quarantined_status(server):
    api = Api(server.url)
    listed = api.get("/api/v1/envs?status=quarantined")
    assert [item["id"] for item in listed["items"]] == [NIM]
    _, _, page = Client(server.url).get("/envs?status=quarantined")
    assert "Nim-v1" in page and "NumberGuess-v1" not in page
