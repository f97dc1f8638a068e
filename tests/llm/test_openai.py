"""The OpenAI-compatible client against real HTTP servers on 127.0.0.1.

The served model is a tiny deterministic ChatModel (it reverses the last user message,
one "token" per character); misbehaving servers are plain stdlib HTTP servers.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spade_envs.llm import (
    ChatModel,
    Completion,
    LLMConfigError,
    OpenAIChatModel,
    SamplingParams,
    load_model,
    serve,
)
from spade_envs.llm.base import truncate_at_stop
from spade_envs.llm.openai_backend import parse_chat_response


class ReverseModel(ChatModel):
    """Replies with the last message reversed; "FAIL" in it makes an error completion."""

    name = "reverser"

    def __init__(self) -> None:
        self.seen: list[tuple[str, SamplingParams]] = []
        self.lock = threading.Lock()

    def generate(self, conversations, params=None):
        params = params or SamplingParams()
        out = []
        for conversation in conversations:
            content = conversation[-1]["content"]
            with self.lock:
                self.seen.append((content, params))
            if "FAIL" in content:
                out.append(Completion.failed("the reverser refuses FAIL"))
                continue
            text = content[::-1]
            finish = "stop"
            if len(text) > params.max_tokens:
                text, finish = text[: params.max_tokens], "length"
            text, stopped = truncate_at_stop(text, params.stop)
            finish = "stop" if stopped else finish
            ids = tuple(ord(c) for c in text)
            out.append(
                Completion(
                    text,
                    token_ids=ids,
                    logprobs=tuple(-0.5 * (i + 1) for i in range(len(ids))),
                    finish_reason=finish,
                    prompt_token_ids=tuple(ord(c) for c in content),
                )
            )
        return out


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def reverser() -> ReverseModel:
    return ReverseModel()


@pytest.fixture
def server(reverser):
    with serve(reverser) as running:
        yield running


@pytest.fixture
def client(server):
    return OpenAIChatModel(server.url, retry_backoff=0.01)


def test_round_trip_text_ids_logprobs_and_finish(client):
    reply = client.chat(user("hello"), SamplingParams(max_tokens=50))
    assert reply.ok, reply.error
    assert reply.text == "olleh"
    assert reply.finish_reason == "stop"
    assert reply.token_ids == tuple(ord(c) for c in "olleh")
    assert reply.logprobs == (-0.5, -1.0, -1.5, -2.0, -2.5)
    assert reply.prompt_token_ids == tuple(ord(c) for c in "hello")


def test_model_name_is_asked_from_the_server(client, server):
    assert client.model is None
    client.chat(user("x"))
    assert client.model == "reverser" and client.name == "reverser"


def test_batch_keeps_order_under_concurrency(server, reverser):
    client = OpenAIChatModel(server.url, model="reverser", max_concurrency=4)
    texts = [f"message number {i}" for i in range(12)]
    replies = client.generate([user(t) for t in texts], SamplingParams(max_tokens=100))
    assert [r.text for r in replies] == [t[::-1] for t in texts]
    assert len(reverser.seen) == 12


def test_sampling_parameters_reach_the_model(client, reverser):
    params = SamplingParams(temperature=0.3, top_p=0.5, max_tokens=40, stop=("x",), seed=100)
    client.generate([user("a"), user("b"), user("c")], params)
    got = {content: p for content, p in reverser.seen}
    assert {p.temperature for p in got.values()} == {0.3}
    assert {p.top_p for p in got.values()} == {0.5}
    assert {p.max_tokens for p in got.values()} == {40}
    assert {p.stop for p in got.values()} == {("x",)}
    # Item i is sampled with seed + i, whichever order the requests arrived in.
    assert (got["a"].seed, got["b"].seed, got["c"].seed) == (100, 101, 102)


def test_stop_strings_and_max_tokens(client):
    stopped = client.chat(user("abc|def"), SamplingParams(stop=("|",)))
    assert stopped.text == "fed" and stopped.finish_reason == "stop"
    assert stopped.token_ids == tuple(ord(c) for c in "fed")
    cut = client.chat(user("abcdefgh"), SamplingParams(max_tokens=3))
    assert cut.text == "hgf" and cut.finish_reason == "length"


def test_a_failing_item_does_not_fail_the_batch(client):
    replies = client.generate([user("one"), user("FAIL now"), user("three")])
    assert [r.ok for r in replies] == [True, False, True]
    assert "HTTP 500" in replies[1].error and "refuses FAIL" in replies[1].error
    assert replies[2].text == "eerht"


def test_bad_conversation_is_an_error_completion(client):
    replies = client.generate([user("fine"), [{"role": "user"}], "not a chat"])
    assert replies[0].ok
    assert not replies[1].ok and "content" in replies[1].error
    assert not replies[2].ok and "list" in replies[2].error


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_server_gives_error_completions():
    client = OpenAIChatModel(
        f"http://127.0.0.1:{_closed_port()}", model="m", retries=2, retry_backoff=0.01
    )
    replies = client.generate([user("a"), user("b")])
    assert all(r.finish_reason == "error" for r in replies)
    assert "Cannot reach" in replies[0].error and "3 tries" in replies[0].error


def test_unreachable_server_fails_a_big_batch_fast():
    client = OpenAIChatModel(
        f"http://127.0.0.1:{_closed_port()}",
        model="m",
        max_concurrency=2,
        retries=3,
        retry_backoff=0.05,
    )
    replies = client.generate([user(str(i)) for i in range(10)])
    assert all(not r.ok for r in replies)
    # The first two requests retried; the others started after the server was known to
    # be down and tried once each.
    assert sum("4 tries" in r.error for r in replies) == 2
    assert sum("tries" not in r.error for r in replies) == 8


def test_unreachable_server_without_model_name():
    client = OpenAIChatModel(f"http://127.0.0.1:{_closed_port()}", retries=0)
    reply = client.chat(user("a"))
    assert not reply.ok and "/v1/models" in reply.error


class _Scripted(BaseHTTPRequestHandler):
    """Answers each request with the next (status, body, delay) of the server's script."""

    def log_message(self, *args):
        pass

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.server.bodies.append(self.rfile.read(length))
        status, body, delay = self.server.script[
            min(self.server.calls, len(self.server.script) - 1)
        ]
        self.server.calls += 1
        time.sleep(delay)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_GET = do_POST = _answer


@pytest.fixture
def scripted() -> Iterator:
    servers = []

    def start(*script):
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
        httpd.daemon_threads = True
        httpd.script, httpd.calls, httpd.bodies = list(script), 0, []
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(httpd)
        return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


GOOD = {"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}]}


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (500, b"Internal Server Error", "HTTP 500"),
        (500, {"error": {"message": "CUDA out of memory"}}, "CUDA out of memory"),
        (200, b"<html>not json</html>", "did not answer JSON"),
        (200, b"\xff\xfe garbage", "did not answer JSON"),
        (200, {"object": "chat.completion"}, "no choices"),
        (200, {"choices": [{"message": {"content": 42}}]}, "not text"),
        (200, [1, 2, 3], "not a JSON object"),
        (400, {"error": {"message": "max_tokens too large"}}, "max_tokens too large"),
    ],
)
def test_garbage_and_errors_become_error_completions(scripted, status, body, words):
    httpd, url = scripted((status, body, 0))
    replies = OpenAIChatModel(url, model="m", retries=1, retry_backoff=0.01).generate(
        [user("a"), user("b")]
    )
    assert all(not r.ok for r in replies)
    assert all(words in r.error for r in replies), replies[0].error


def test_transient_errors_are_retried(scripted):
    httpd, url = scripted((503, b"busy", 0), (200, GOOD, 0))
    reply = OpenAIChatModel(url, model="m", retries=2, retry_backoff=0.01).chat(user("a"))
    assert reply.ok and reply.text == "fine"
    assert httpd.calls == 2


def test_client_errors_are_not_retried(scripted):
    httpd, url = scripted((400, {"error": {"message": "bad"}}, 0), (200, GOOD, 0))
    reply = OpenAIChatModel(url, model="m", retries=3, retry_backoff=0.01).chat(user("a"))
    assert not reply.ok and httpd.calls == 1


def test_timeout_becomes_an_error_completion(scripted):
    httpd, url = scripted((200, GOOD, 1.0))
    reply = OpenAIChatModel(url, model="m", timeout=0.2, retries=0).chat(user("a"))
    assert not reply.ok and "timed out" in reply.error


def test_request_body_and_headers(scripted, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    httpd, url = scripted((200, GOOD, 0))
    client = OpenAIChatModel(url + "/v1/", model="m", extra_body={"return_token_ids": True})
    client.chat(user("a"), SamplingParams(max_tokens=7, stop=("z",), seed=3))
    body = json.loads(httpd.bodies[0])
    assert body["model"] == "m" and body["max_tokens"] == 7 and body["stop"] == ["z"]
    assert body["seed"] == 3 and body["logprobs"] is True and body["n"] == 1
    assert body["return_token_ids"] is True
    assert client.api_key == "sk-test"


def test_parse_response_variants():
    vllm_style = {
        "choices": [
            {
                "message": {"content": "ab"},
                "finish_reason": "length",
                "logprobs": {
                    "content": [
                        {"token": "token_id:7", "logprob": -0.1},
                        {"token": "token_id:9", "logprob": -0.2},
                    ]
                },
            }
        ],
        "prompt_token_ids": [1, 2],
    }
    parsed = parse_chat_response(vllm_style)
    assert parsed.token_ids == (7, 9) and parsed.logprobs == (-0.1, -0.2)
    assert parsed.finish_reason == "length" and parsed.prompt_token_ids == (1, 2)
    openai_style = {
        "choices": [
            {
                "message": {"content": "hi"},
                "finish_reason": "stop",
                "logprobs": {"content": [{"token": "hi", "logprob": -0.3}]},
            }
        ]
    }
    parsed = parse_chat_response(openai_style)
    assert parsed.token_ids == () and parsed.logprobs == (-0.3,)
    tool_call = {"choices": [{"message": {"content": None}, "finish_reason": "tool_calls"}]}
    assert parse_chat_response(tool_call).text == ""
    assert parse_chat_response({"error": {"message": "nope"}}).error.endswith("nope")


@pytest.mark.parametrize("url", ["", "127.0.0.1:8000", "ftp://x", "http://"])
def test_bad_base_url(url):
    with pytest.raises(LLMConfigError, match="URL"):
        OpenAIChatModel(url)


def test_bad_client_arguments():
    with pytest.raises(LLMConfigError, match="timeout"):
        OpenAIChatModel("http://127.0.0.1:1", timeout=0)
    with pytest.raises(LLMConfigError, match="max_concurrency"):
        OpenAIChatModel("http://127.0.0.1:1", max_concurrency=0)
    with pytest.raises(LLMConfigError, match="retries"):
        OpenAIChatModel("http://127.0.0.1:1", retries=-1)


def test_load_model_openai_spec(server):
    model = load_model(f"openai:{server.url}/v1#reverser", retry_backoff=0.01)
    assert isinstance(model, OpenAIChatModel) and model.model == "reverser"
    assert model.api_root == f"{server.url}/v1"
    assert model.chat(user("xy")).text == "yx"


# ------------------------------------------------------------- the server itself


def _call(url: str, method: str = "GET", body: bytes | None = None, headers=None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _post(server, payload) -> tuple[int, dict]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return _call(f"{server.url}/v1/chat/completions", "POST", data)


def test_server_lists_its_model(server):
    status, body = _call(f"{server.url}/v1/models")
    assert status == 200 and [m["id"] for m in body["data"]] == ["reverser"]
    assert _call(f"{server.url}/health")[0] == 200


def test_server_response_shape(server):
    status, body = _post(server, {"messages": user("abc"), "logprobs": True})
    assert status == 200
    choice = body["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "cba"}
    assert [e["token"] for e in choice["logprobs"]["content"]] == [
        "token_id:99",
        "token_id:98",
        "token_id:97",
    ]
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}
    status, body = _post(
        server, {"messages": [{"role": "user", "content": [{"type": "text", "text": "ab"}]}]}
    )
    assert status == 200 and body["choices"][0]["message"]["content"] == "ba"
    assert body["choices"][0]["logprobs"] is None


@pytest.mark.parametrize(
    ("payload", "status", "words"),
    [
        (b"{not json", 400, "not valid JSON"),
        ([1, 2], 400, "JSON object"),
        ({"messages": user("a"), "n": 2}, 400, "n=1"),
        ({"messages": user("a"), "stream": "yes"}, 400, "'stream'"),
        ({"messages": user("a"), "stream_options": {"include_usage": True}}, 400, "stream=true"),
        ({"messages": user("a"), "stream": True, "stream_options": 3}, 400, "stream_options"),
        ({"messages": user("a"), "model": "gpt-9"}, 404, "reverser"),
        ({}, 400, "messages"),
        ({"messages": [{"role": "wizard", "content": "a"}]}, 400, "role"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400, "text only"),
        ({"messages": user("a"), "temperature": "hot"}, 400, "temperature"),
        ({"messages": user("a"), "temperature": -1}, 400, "temperature"),
        ({"messages": user("a"), "max_tokens": 0}, 400, "max_tokens"),
        ({"messages": user("a"), "stop": 5}, 400, "stop"),
        ({"messages": user("a"), "seed": "x"}, 400, "seed"),
        ({"messages": user("a"), "logprobs": "yes"}, 400, "logprobs"),
        ({"messages": user("FAIL")}, 500, "refuses FAIL"),
    ],
)
def test_server_rejects_malformed_requests(server, payload, status, words):
    got, body = _post(server, payload)
    assert got == status
    assert words in body["error"]["message"]
    assert body["error"]["code"] == status


def _events(server, payload) -> tuple[str, list]:
    request = urllib.request.Request(
        f"{server.url}/v1/chat/completions", data=json.dumps(payload).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        kind = response.headers["Content-Type"]
        raw = response.read().decode()
    assert raw.endswith("data: [DONE]\n\n")
    events = [block.removeprefix("data: ") for block in raw.split("\n\n") if block]
    return kind, [json.loads(e) for e in events[:-1]]


def test_server_streams_server_sent_events(server):
    kind, chunks = _events(
        server,
        {"messages": user("abc"), "stream": True, "stream_options": {"include_usage": True}},
    )
    assert kind == "text/event-stream"
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "cba"
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes == [None, "stop"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 6
    _, plain = _events(server, {"messages": user("abc"), "stream": True})
    assert all("usage" not in c for c in plain) and len(plain) == 2


def test_official_client_reads_the_stream(server):
    openai = pytest.importorskip("openai") if not os.environ.get("CI") else __import__("openai")
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    stream = client.chat.completions.create(
        model="reverser",
        messages=user("hello"),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "olleh"
    assert chunks[-1].usage.completion_tokens == 5


def test_server_routes_and_methods(server):
    assert _call(f"{server.url}/v1/nothing")[0] == 404
    assert _call(f"{server.url}/v1/chat/completions")[0] == 405
    assert _call(f"{server.url}/v1/models", "POST", b"{}")[0] == 405
    assert _call(f"{server.url}/v1/models", "DELETE")[0] == 405


def test_server_port_in_use_is_a_clear_error(server, reverser):
    with pytest.raises(LLMConfigError, match="Cannot listen"):
        serve(reverser, port=server.port)


def test_server_close_frees_the_port(reverser):
    running = serve(reverser)
    url, port = running.url, running.port
    running.close()
    running.close()  # twice is fine
    # Nothing listens any more: a connection is refused at once. (A server shut down but
    # not closed still holds the listening socket: the kernel would accept, and nobody
    # would ever answer.)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    reply = OpenAIChatModel(url, model="reverser", retries=0).chat(user("a"))
    assert not reply.ok
    # ... and the port is free: a new server binds it (a held socket makes this fail
    # with "address in use") and answers there.
    with serve(reverser, port=port) as again:
        assert again.url == url
        assert OpenAIChatModel(url, model="reverser", retries=0).chat(user("ab")).text == "ba"
