"""The generation pool's client against a stand-in HTTP server on 127.0.0.1: adapter
loads carry the same bearer token as generation, name the adapter's directory, unload the
adapter before, and a refusal says how to start the server. (The real ``vllm serve``
runs in tests/trainer/test_vllm_pool.py, from .venv-vllm.)"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spade_envs.llm import LLMConfigError
from spade_envs.llm.vllm_server import VLLMServerModel


@pytest.fixture
def server():
    seen: list[tuple[str, str | None, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, self.headers.get("Authorization"), body))
            refused = body.get("lora_name", "").endswith("-refused")
            self.send_response(400 if refused else 200)
            self.end_headers()
            self.wfile.write(b"no such adapter" if refused else b"Success")

        def log_message(self, *_):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()
    httpd.server_close()


def test_adapter_loads_carry_the_token_and_unload_the_one_before(server, tmp_path):
    url, seen = server
    pool = VLLMServerModel(url, tmp_path, model="base", api_key="secret-token")
    first = pool.next_adapter_name()
    pool.load_adapter(first, pool.adapter_dir(first))
    second = pool.next_adapter_name()
    pool.load_adapter(second, pool.adapter_dir(second))
    assert [(path, auth) for path, auth, _ in seen] == [
        ("/v1/load_lora_adapter", "Bearer secret-token"),
        ("/v1/load_lora_adapter", "Bearer secret-token"),
        ("/v1/unload_lora_adapter", "Bearer secret-token"),
    ]
    assert seen[1][2] == {"lora_name": second, "lora_path": str(tmp_path / second)}
    assert seen[2][2] == {"lora_name": first}
    assert pool.model == second and first != second and pool.adapters_loaded == 2


def test_a_refused_load_says_why_and_keeps_the_adapter_in_use(server, tmp_path):
    url, _ = server
    pool = VLLMServerModel(url, tmp_path, model="base")
    with pytest.raises(LLMConfigError, match=r"refused /v1/load_lora_adapter \(HTTP 400\): no such"):
        pool.load_adapter("spade-x-refused", tmp_path)
    assert pool.adapter is None and pool.model == "base"
