"""The JSON API under /api/v1 over real HTTP on 127.0.0.1, and its /openapi.json."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from .conftest import EVIL_DESCRIPTION, SEEDS, Client


class ApiError(Exception):
    """A non-2xx answer: its status and the API's error message."""

    def __init__(self, status: int, message: str, body: dict):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.body = body


class Api:
    """JSON over urllib: ``call`` returns the decoded body or raises :class:`ApiError`."""

    def __init__(self, base: str):
        self.base = base.rstrip("/")

    def raw(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        req = urllib.request.Request(
            self.base + path, data=body, method=method, headers=headers or {}
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, exc.read()

    def call(self, method: str, path: str, payload: object = None, headers: dict | None = None):
        body = None if payload is None else json.dumps(payload).encode()
        sent = {"Content-Type": "application/json"} if method in ("POST", "DELETE") else {}
        status, got, data = self.raw(method, path, body, {**sent, **(headers or {})})
        if got.get("Content-Type", "").startswith("application/json"):
            decoded = json.loads(data)
        else:
            decoded = {"raw": data.decode("utf-8", "replace")}
        if status >= 400:
            message = (
                decoded.get("error", {}).get("message", "") if isinstance(decoded, dict) else ""
            )
            raise ApiError(status, message, decoded)
        return decoded

    def get(self, path: str):
        return self.call("GET", path)

    def post(self, path: str, payload: object = None):
        return self.call("POST", path, {} if payload is None else payload)


@pytest.fixture(scope="module")
def api(server):
    return Api(server.url)


def versions_of(server) -> int:
    return len(server.app.registry.ids)


# ----- the list -------------------------------------------------------------------------------
def test_the_list_counts_every_version_and_carries_its_columns(api, server):
    page = api.get("/api/v1/envs")
    assert page["total"] == versions_of(server) == len(SEEDS) + 2
    assert (page["page"], page["pages"], page["size"]) == (1, 1, 50)
    by_id = {item["id"]: item for item in page["items"]}
    guess = by_id[server.app.registry.ids["NumberGuess"]]
    assert guess["name"] == "NumberGuess" and guess["version"] == 1
    assert guess["status"] == "validated" and guess["origin"] == "seed"
    assert guess["hint_gain"] == pytest.approx(0.5)  # the best checkpoint: 0.9 - 0.4
    assert guess["win_rate"] == pytest.approx(0.4)  # the latest checkpoint
    assert guess["created"].endswith("+00:00") and guess["score"] is None
    assert guess["url"] == "/api/v1/envs/NumberGuess-v1"
    never = by_id[server.app.registry.ids["Nim"]]
    assert never["hint_gain"] is None and never["win_rate"] is None  # never played: null
    evil = by_id[server.app.registry.ids["EvilMarkup"]]
    assert evil["description"] == EVIL_DESCRIPTION  # model text is a JSON string, not HTML
    assert page["facets"]["status"]["validated"] == sum(s == "validated" for _, s, _ in SEEDS) + 2


def test_the_list_filters_like_the_list_page(api, server):
    validated = api.get("/api/v1/envs?status=validated")
    assert validated["total"] == 7
    assert {i["status"] for i in validated["items"]} == {"validated"}
    logic = api.get("/api/v1/envs?skill=logic&origin=designer")
    assert [i["name"] for i in logic["items"]] == ["EvilMarkup"]
    played = api.get("/api/v1/envs?played=yes")
    assert {i["name"] for i in played["items"]} == {
        "NumberGuess", "Mastermind", "MazeExplore", "EvilMarkup"
    }  # fmt: skip
    gain = api.get("/api/v1/envs?hint_gain_min=0.1&hint_gain_max=1")
    assert {i["name"] for i in gain["items"]} == {"NumberGuess", "Mastermind"}
    family = api.get("/api/v1/envs?name=NumberGuess")
    assert [i["name"] for i in family["items"]] == ["NumberGuess"]


def test_the_list_sorts_and_pages(api):
    by_name = api.get("/api/v1/envs?sort=name")["items"]
    names = [i["name"] for i in by_name]
    assert names == sorted(names)
    backwards = api.get("/api/v1/envs?sort=name&dir=desc")["items"]
    assert [i["name"] for i in backwards] == names[::-1]
    by_gain = api.get("/api/v1/envs?sort=hint_gain")["items"]
    gains = [i["hint_gain"] for i in by_gain]
    known = [g for g in gains if g is not None]
    assert known == sorted(known, reverse=True) and known[0] == pytest.approx(0.5)
    assert gains[: len(known)] == known  # never played: last
    first = api.get("/api/v1/envs?size=25&page=1")
    assert first["size"] == 25 and first["pages"] == 1 and len(first["items"]) == first["total"]
    with pytest.raises(ApiError, match=r"400: page 2 is past the last page \(1\)"):
        api.get("/api/v1/envs?size=25&page=2")
    with pytest.raises(ApiError, match="400: size must be one of 25, 50, 100, 200; got 7"):
        api.get("/api/v1/envs?size=7")


def test_unknown_or_malformed_parameters_are_400_with_what_to_do(api):
    with pytest.raises(
        ApiError, match=r"400: Unknown parameter 'skil'\. Did you mean 'skill'"
    ) as exc:
        api.get("/api/v1/envs?skil=logic")
    assert exc.value.body == {"error": {"status": 400, "message": exc.value.message}}
    with pytest.raises(
        ApiError, match=r"400: skill must be one of: .*got 'logik'\. Did you mean 'logic'"
    ):
        api.get("/api/v1/envs?skill=logik")
    with pytest.raises(ApiError, match="400: hint_gain_min must be a number such as 0.25"):
        api.get("/api/v1/envs?hint_gain_min=lots")
    with pytest.raises(ApiError, match=r"400: hint_gain_min \(0.5\) is above hint_gain_max"):
        api.get("/api/v1/envs?hint_gain_min=0.5&hint_gain_max=0.1")
    with pytest.raises(ApiError, match="400: sort=relevance needs a search"):
        api.get("/api/v1/envs?sort=relevance")
    with pytest.raises(ApiError, match="400: Parameter 'status' was given 2 times"):
        api.get("/api/v1/envs?status=validated&status=retired")
    with pytest.raises(ApiError, match=r"400: Unknown parameter 'regret_min'"):
        api.get("/api/v1/envs?regret_min=0")  # old names are no API: no redirect


# ----- search ---------------------------------------------------------------------------------
def test_text_search_in_the_list_and_at_search(api, server):
    listed = api.get("/api/v1/envs?q=number+guess")
    assert {i["name"] for i in listed["items"]} == {"NumberGuess", "NumberGuessHarder"}
    assert all(i["score"] is not None for i in listed["items"])
    found = api.get("/api/v1/search?q=maze")
    assert found["mode"] == "text" and found["items"][0]["name"] == "MazeExplore"
    assert found["items"][0]["score"] >= 2  # "maze" is in the name: it counts twice
    assert api.get("/api/v1/search?q=no-such-word-anywhere")["items"] == []
    with pytest.raises(ApiError, match="400: q is missing"):
        api.get("/api/v1/search")
    with pytest.raises(ApiError, match="400: k must be at least 1 and at most 200"):
        api.get("/api/v1/search?q=maze&k=1000")


def test_semantic_search_ranks_by_meaning(api):
    found = api.get("/api/v1/search?q=guess+a+hidden+number&mode=semantic&k=3")
    assert found["mode"] == "semantic" and len(found["items"]) == 3
    scores = [i["score"] for i in found["items"]]
    assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 for s in scores)
    assert found["items"][0]["name"].startswith("NumberGuess")
    listed = api.get("/api/v1/envs?q=guess+a+hidden+number&mode=semantic&size=25")
    assert listed["items"][0]["id"] == found["items"][0]["id"]
    assert listed["total"] >= 3


def test_stats_count_the_corpus(api, server):
    stats = api.get("/api/v1/stats")
    assert stats["versions"] == versions_of(server) and stats["played"] == 4
    assert stats["names"] == versions_of(server)  # one version of each name
    assert stats["embedded"] == versions_of(server) and stats["embedding_model"]
    assert stats["facets"]["origin"]["seed"] == sum(o == "seed" for _, _, o in SEEDS)


# ----- one version ----------------------------------------------------------------------------
def test_one_version_has_source_stats_validation_lineage_and_similar(api, server):
    ids = server.app.registry.ids
    env = api.get("/api/v1/envs/NumberGuess-v1")
    assert env["id"] == ids["NumberGuess"] and env["versions"] == [ids["NumberGuess"]]
    assert "class NumberGuess(" in env["source"] and len(env["sha256"]) == 64
    assert env["gym_make"].endswith("gym.make('spade/NumberGuess-v1')")
    assert env["dialect"] == "native" and env["unproven"] == ""
    assert [s["checkpoint"] for s in env["stats"]] == ["ckpt-1", "ckpt-0"]  # newest first
    assert env["stats"][0]["hint_gain"] == pytest.approx(0.5)
    assert [v["passed"] for v in env["validations"]] == [True, False]  # oldest first
    failed = env["validations"][1]
    assert [c["name"] for c in failed["checks"]] == ["syntax", "solution", "fuzz"]
    assert failed["checks"][1]["reason"] == "the solution lost on seed 3"
    assert failed["checks"][2]["details"]["note"] == "<b>bold?</b>"
    assert env["lineage"]["children"] == [ids["NumberGuessHarder"]]
    assert env["lineage"]["parents"] == [] and env["lineage"]["document"] is None
    similar = env["similar"]
    assert similar["model"] and len(similar["items"]) == 6
    assert ids["NumberGuess"] not in [s["id"] for s in similar["items"]]
    # One novelty: the version's own value is the list's, not its nearest hit of any status.
    listed = api.get("/api/v1/envs?name=NumberGuess")["items"][0]
    assert similar["novelty"] == pytest.approx(listed["novelty"])
    child = api.get("/api/v1/envs/NumberGuessHarder-v1")
    assert child["lineage"]["parents"] == [
        {"ref": ids["NumberGuess"], "known": True, "url": "/api/v1/envs/NumberGuess-v1"}
    ]
    assert child["lineage"]["model"] == "tiny-model"
    assert child["lineage"]["document"]["text"].startswith("A grounding text about <b>")


def test_model_written_text_goes_out_as_json_strings(api, server):
    status, headers, body = api.raw("GET", "/api/v1/envs/EvilMarkup-v1")
    assert status == 200 and headers["Content-Type"] == "application/json"
    env = json.loads(body)
    assert env["description"] == EVIL_DESCRIPTION and env["hint"].startswith("<img")
    assert env["lineage"]["parents"][0] == {
        "ref": "<script>window.__pwned = 9</script>", "known": False, "url": None
    }  # fmt: skip
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_the_source_alone_is_python_text(api):
    status, headers, body = api.raw("GET", "/api/v1/envs/NumberGuess-v1/source")
    assert status == 200 and headers["Content-Type"].startswith("text/x-python")
    assert b"class NumberGuess(" in body


def test_an_unknown_version_is_404_with_close_matches(api):
    with pytest.raises(ApiError, match=r"404: 'NumberGues' is not in this registry\. Did you mean "
                       r"'NumberGuess', 'NumberGuessHarder'\? Search for it on the list at /api/v1"):  # fmt: skip
        api.get("/api/v1/envs/NumberGues-v1")
    with pytest.raises(ApiError, match="404: .*NumberGuess-v9"):
        api.get("/api/v1/envs/NumberGuess-v9/source")
    with pytest.raises(ApiError, match="400: 'NumberGuess' is not an environment version"):
        api.get("/api/v1/envs/NumberGuess")
    with pytest.raises(ApiError, match="404: There is no page at /api/v1/nothing"):
        api.get("/api/v1/nothing")


def test_the_id_as_printed_elsewhere_works_too_and_a_miss_suggests(api, server):
    # spade/Name-vN is how the CLI, gym.make and the list print an ID: the same answer.
    assert api.get("/api/v1/envs/spade/NumberGuess-v1") == api.get("/api/v1/envs/NumberGuess-v1")
    status, headers, body = api.raw("GET", "/api/v1/envs/spade/NumberGuess-v1/source")
    assert status == 200 and headers["Content-Type"].startswith("text/x-python")
    assert b"class NumberGuess(" in body
    with pytest.raises(ApiError, match=r"404: 'NumberGues' is not in this registry\. Did you mean "
                       r"'NumberGuess', 'NumberGuessHarder'\?"):  # fmt: skip
        api.get("/api/v1/envs/spade/NumberGues-v1")
    with pytest.raises(ApiError, match=r"404: 'spade/NumberGuess-v9' .*Did you mean "
                       r"'spade/NumberGuess-v1'\?"):  # fmt: skip
        api.get("/api/v1/envs/spade/NumberGuess-v9/source")


# ----- export ---------------------------------------------------------------------------------
def test_export_streams_the_filtered_versions(api, server):
    status, headers, body = api.raw("GET", "/api/v1/export?format=jsonl&status=validated")
    assert status == 200 and headers["Content-Type"].startswith("application/x-ndjson")
    assert "attachment" in headers["Content-Disposition"]
    rows = [json.loads(line) for line in body.decode().splitlines()]
    assert len(rows) == 7 and {r["status"] for r in rows} == {"validated"}
    assert "source" in rows[0]
    status, _, body = api.raw("GET", "/api/v1/export?q=maze")  # jsonl by default
    assert status == 200 and [json.loads(x)["name"] for x in body.splitlines()] == ["MazeExplore"]
    with pytest.raises(ApiError, match="400: format must be one of: jsonl, parquet, package"):
        api.get("/api/v1/export?format=csv")
    with pytest.raises(ApiError, match="400: Unknown parameter 'page'"):
        api.get("/api/v1/export?page=2")
    with pytest.raises(ApiError, match="400: No environment matches these filters"):
        api.get("/api/v1/export?q=no-such-word-anywhere")


# ----- play -----------------------------------------------------------------------------------
def test_a_play_session_is_won_with_the_reference_solution(api, server):
    ident = server.app.registry.ids["NumberGuess"]
    state = api.call("POST", "/api/v1/play", {"env": ident, "seed": 0})
    sid = state["id"]
    assert len(sid) >= 20 and state["env_id"] == ident and state["seed"] == 0
    assert state["turn"] == 0 and not state["done"] and state["observation"]
    assert state["transcript"][0] == {
        "kind": "observation", "text": state["observation"], "reward": None, "actions": []
    }  # fmt: skip
    assert server.app.sessions.get(sid, "api").env_id == ident  # owned by "api"
    hint = api.post(f"/api/v1/play/{sid}/hint")
    assert hint["hint"]
    solution = api.post(f"/api/v1/play/{sid}/solution")
    assert solution["actions"] and solution["next"] == 0
    for i, action in enumerate(solution["actions"]):
        step = api.post(f"/api/v1/play/{sid}/step", {"action": action})
        assert step["turn"] == i + 1 and step["error"] is None
    assert step["done"] and step["won"] and step["terminated"] and not step["truncated"]
    assert step["reward"] > 0 and step["total_return"] == pytest.approx(1.0)
    with pytest.raises(ApiError, match="400: The episode is over"):
        api.post(f"/api/v1/play/{sid}/step", {"action": "again"})
    seen = api.get(f"/api/v1/play/{sid}")
    kinds = [t["kind"] for t in seen["transcript"]]
    assert kinds[:3] == ["observation", "hint", "solution"] and kinds[-1] == "end"
    assert seen["won"] and seen["turn"] == len(solution["actions"])
    again = api.post(f"/api/v1/play/{sid}/reset")
    assert again["turn"] == 0 and not again["done"] and again["observation"] == state["observation"]
    assert api.post(f"/api/v1/play/{sid}/close") == {"id": sid, "env_id": ident, "closed": True}
    with pytest.raises(ApiError, match="404: This play session has ended"):
        api.get(f"/api/v1/play/{sid}")


def test_a_wrong_action_and_delete(api, server):
    ident = server.app.registry.ids["EvilMarkup"]
    state = api.call("POST", "/api/v1/play", {"env": ident, "seed": 1})
    assert state["observation"].startswith("<script>")  # as written: the client escapes
    step = api.post(f"/api/v1/play/{state['id']}/step", {"action": "wrong"})
    assert step["reward"] == 0 and not step["done"] and step["observation"].startswith("<iframe")
    closed = api.call("DELETE", f"/api/v1/play/{state['id']}")
    assert closed == {"id": state["id"], "env_id": ident, "closed": True}
    with pytest.raises(ApiError, match="404: This play session has ended"):
        api.post(f"/api/v1/play/{state['id']}/hint")


def test_play_input_is_checked(api, server):
    ident = server.app.registry.ids["NumberGuess"]
    with pytest.raises(ApiError, match="400: The body is wrong: env: Field required"):
        api.post("/api/v1/play", {"seed": 1})
    with pytest.raises(ApiError, match="400: The body is wrong: seed: Input should be less than"):
        api.post("/api/v1/play", {"env": ident, "seed": 2**40})
    with pytest.raises(ApiError, match="400: The body is wrong: colour: Extra inputs"):
        api.post("/api/v1/play", {"env": ident, "colour": "red"})
    with pytest.raises(ApiError, match="400: The body must be a JSON object, not list"):
        api.post("/api/v1/play", [ident])
    with pytest.raises(ApiError, match="400: env: "):
        api.post("/api/v1/play", {"env": "not an id"})
    with pytest.raises(ApiError, match=r"404: 'Nope' is not in this registry"):
        api.post("/api/v1/play", {"env": "spade/Nope-v1"})
    status, _, body = api.raw(
        "POST", "/api/v1/play", b"{not json", {"Content-Type": "application/json"}
    )
    assert status == 400 and "not valid JSON" in json.loads(body)["error"]["message"]
    sid = api.post("/api/v1/play", {"env": ident, "seed": 2})["id"]
    with pytest.raises(ApiError, match="400: The body is wrong: action: Field required"):
        api.post(f"/api/v1/play/{sid}/step", {"move": "1"})
    with pytest.raises(
        ApiError, match="400: The body is wrong: action: String should have at most 4000"
    ):
        api.post(f"/api/v1/play/{sid}/step", {"action": "1" * 4001})
    with pytest.raises(ApiError, match="400: action contains a NUL character"):
        api.post(f"/api/v1/play/{sid}/step", {"action": "1\x002"})
    with pytest.raises(ApiError, match="400: This call takes no fields; got sneaky"):
        api.post(f"/api/v1/play/{sid}/hint", {"sneaky": True})
    assert api.get(f"/api/v1/play/{sid}")["turn"] == 0  # nothing refused was played
    api.call("DELETE", f"/api/v1/play/{sid}")
    with pytest.raises(ApiError, match="404: There is no play session with that ID"):
        api.get("/api/v1/play/short")
    with pytest.raises(ApiError, match="404: This play session has ended"):
        api.post("/api/v1/play/" + "x" * 24 + "/step", {"action": "1"})


def test_posts_must_be_json_from_this_origin(api, server):
    ident = server.app.registry.ids["NumberGuess"]
    before = len(server.app.sessions)
    form = Client(server.url)
    status, _, text = form.post("/api/v1/play", {"env": ident})  # an HTML form's encoding
    assert status == 415 and "application/json" in json.loads(text)["error"]["message"]
    status, _, _ = api.raw("POST", "/api/v1/play", json.dumps({"env": ident}).encode(),
                           {"Content-Type": "text/plain"})  # fmt: skip
    assert status == 415
    with pytest.raises(ApiError, match="^403: "):
        api.call("POST", "/api/v1/play", {"env": ident}, {"Origin": "https://evil.example"})
    assert len(server.app.sessions) == before  # nothing was started


# ----- the description ------------------------------------------------------------------------
def test_openapi_describes_every_endpoint_and_no_page(api):
    spec = api.get("/openapi.json")
    paths = spec["paths"]
    expected = {
        "/api/v1/envs": {"get"},
        "/api/v1/search": {"get"},
        "/api/v1/stats": {"get"},
        "/api/v1/envs/{slug}": {"get"},
        "/api/v1/envs/{slug}/source": {"get"},
        "/api/v1/export": {"get"},
        "/api/v1/play": {"post"},
        "/api/v1/play/{sid}": {"get", "delete"},
        "/api/v1/play/{sid}/step": {"post"},
        "/api/v1/play/{sid}/hint": {"post"},
        "/api/v1/play/{sid}/solution": {"post"},
        "/api/v1/play/{sid}/reset": {"post"},
        "/api/v1/play/{sid}/close": {"post"},
        # OpenEnv's HTTP side (its WebSocket, /ws, is not part of OpenAPI).
        "/api/v1/openenv/{ident}/health": {"get"},
        "/api/v1/openenv/{ident}/metadata": {"get"},
        "/api/v1/openenv/{ident}/schema": {"get"},
    }
    assert {p: set(ops) for p, ops in paths.items()} == expected
    for path, ops in paths.items():
        for op in ops.values():
            assert op["summary"], path
    listed = {p["name"] for p in paths["/api/v1/envs"]["get"]["parameters"]}
    assert {"q", "mode", "skill", "kind", "origin", "status", "suite", "hint_gain_min",
            "hint_gain_max", "played", "sort", "dir", "page", "size"} <= listed  # fmt: skip
    ok = paths["/api/v1/envs"]["get"]["responses"]["200"]["content"]["application/json"]
    assert ok["schema"]["$ref"].endswith("/EnvList")
    body = paths["/api/v1/play"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["required"] == ["env"]
    schemas = spec["components"]["schemas"]
    assert {"EnvList", "EnvItem", "EnvDetail", "PlayState", "StepOut", "ErrorOut"} <= set(schemas)
    assert "hint_gain" in schemas["EnvItem"]["properties"]
