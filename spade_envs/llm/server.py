"""A small OpenAI-compatible HTTP server over any :class:`~spade_envs.llm.base.ChatModel`.

One process loads a local model once and serves it; designer and rollout workers in
other processes talk to it with :class:`~spade_envs.llm.openai_backend.OpenAIChatModel`
(or any OpenAI client). Standard library only (``http.server``), one thread per
request; a :class:`~spade_envs.llm.transformers_backend.TransformersChatModel` runs one
generation at a time, so concurrent requests queue rather than being batched together.

Endpoints:
    ``GET /v1/models``, ``GET /health``, ``POST /v1/chat/completions`` (``n=1``;
    ``temperature``, ``top_p``, ``max_tokens`` / ``max_completion_tokens``, ``stop``,
    ``seed``, ``logprobs``, ``response_format`` of type ``json_schema`` (decoded under the
    schema: ``SamplingParams.json_schema``), ``json_object`` or ``text``, ``stream`` with
    ``stream_options.include_usage``).
    Besides the OpenAI fields, each choice carries ``token_ids`` and the response
    ``prompt_token_ids`` (as vLLM does), and logprob tokens are written ``token_id:N``
    (vLLM's ``return_tokens_as_token_ids`` form).

    ``stream=true`` answers with server-sent events in OpenAI's chunk format (clients such as
    verifiers' harnesses ask only for streams). The backends generate a completion whole, so
    the stream carries it as one content chunk, then the finish reason, the usage when asked,
    and ``data: [DONE]``: the first byte comes when the completion is done, not sooner.

Run it from a shell with ``python -m spade_envs.llm.server smollm2 --port 8000``.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .base import ChatModel, LLMConfigError, Message, SamplingParams, check_conversation

__all__ = ["ChatServer", "serve"]

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 8 * 1024 * 1024


class _BadRequest(Exception):
    def __init__(self, status: HTTPStatus, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param


@dataclass(frozen=True)
class _Request:
    messages: list[Message]
    params: SamplingParams
    want_logprobs: bool
    stream: bool
    include_usage: bool


class ChatServer:
    """A running server; stop it with :meth:`close` (or use it as a context manager).

    Attributes:
        model: The model it serves.
        host: The address it listens on.
        port: The port it listens on (the real one when 0 was asked for).
        url: ``http://host:port``: what to give :class:`OpenAIChatModel` as ``base_url``.
    """

    def __init__(self, model: ChatModel, host: str, port: int) -> None:
        self.model = model
        handler = type("_BoundHandler", (_Handler,), {"chat_model": model})
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self.host, self.port = self._httpd.server_address[:2]
        self.url = f"http://{self.host}:{self.port}"
        # A short poll interval makes close() quick (shutdown waits for one poll).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="spade-chat-server",
            daemon=True,
        )
        self._thread.start()
        self._closed = False

    def close(self) -> None:
        """Stop serving and free the port (the model itself stays loaded)."""
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChatServer(url={self.url!r}, model={self.model.name!r})"


def serve(model: ChatModel, host: str = "127.0.0.1", port: int = 0) -> ChatServer:
    """Serve ``model`` over HTTP in a background thread.

    Args:
        model: Any chat model.
        host: Address to listen on; the default accepts only this machine.
        port: Port to listen on; ``0`` picks a free one (read it from ``.port``/``.url``).

    Returns:
        The running :class:`ChatServer`.

    Raises:
        LLMConfigError: The address cannot be bound (port in use, bad host).
    """
    if not isinstance(model, ChatModel):
        raise LLMConfigError(f"serve() needs a ChatModel, got {type(model).__name__}.")
    try:
        return ChatServer(model, host, port)
    except OSError as exc:
        raise LLMConfigError(
            f"Cannot listen on {host}:{port}: {exc}. Pick another port, or 0 for a free one."
        ) from exc


class _Handler(BaseHTTPRequestHandler):
    chat_model: ChatModel
    server_version = "spade-envs"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    # ---------------------------------------------------------------- routes

    def _route(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/")
        return path[3:] if path.startswith("/v1/") else path

    def do_GET(self) -> None:
        route = self._route()
        if route == "/models":
            self._send(HTTPStatus.OK, _models(self.chat_model))
        elif route == "/health":
            self._send(HTTPStatus.OK, {"status": "ok"})
        elif route == "/chat/completions":
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, "Use POST for /v1/chat/completions.")
        else:
            self._not_found()

    def do_POST(self) -> None:
        route = self._route()
        if route != "/chat/completions":
            if route in ("/models", "/health"):
                self._error(HTTPStatus.METHOD_NOT_ALLOWED, f"Use GET for /v1{route}.")
            else:
                self._not_found()
            return
        try:
            body = self._read_json()
            request = _parse_request(body, self.chat_model.name)
        except _BadRequest as exc:
            self._error(exc.status, str(exc), param=exc.param)
            return
        try:
            completion = self.chat_model.generate([request.messages], request.params)[0]
        except Exception as exc:  # the protocol says generate does not raise; guard anyway
            log.exception("The model raised while serving a request")
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"The model failed: {exc}")
            return
        if not completion.ok:
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, completion.error, kind="server_error")
            return
        response = _response(self.chat_model.name, completion, request.want_logprobs)
        if request.stream:
            self._send_events(_stream_chunks(response, request.include_usage))
        else:
            self._send(HTTPStatus.OK, response)

    def _method_not_allowed(self) -> None:
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, f"{self.command} is not supported here.")

    do_PUT = do_DELETE = do_PATCH = _method_not_allowed

    # --------------------------------------------------------------- helpers

    def _not_found(self) -> None:
        self._error(
            HTTPStatus.NOT_FOUND,
            f"No route {self.path!r}; this server has GET /v1/models and "
            "POST /v1/chat/completions.",
        )

    def _read_json(self) -> Any:
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            raise _BadRequest(HTTPStatus.LENGTH_REQUIRED, "Send a Content-Length header.")
        try:
            length = int(length_header)
        except ValueError:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, "Content-Length is not a number.") from None
        if length < 0 or length > MAX_REQUEST_BYTES:
            raise _BadRequest(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"The request body has {length} bytes; the limit is {MAX_REQUEST_BYTES}.",
            )
        raw = self.rfile.read(length)
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _BadRequest(
                HTTPStatus.BAD_REQUEST, f"The body is not valid JSON: {exc}."
            ) from None

    def _send(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting
            log.debug("Client went away before the response was sent")

    def _send_events(self, chunks: list[dict[str, Any]]) -> None:
        # HTTP/1.0 without a Content-Length: the body ends when the connection closes,
        # which is how an SSE stream ends anyway.
        data = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
        try:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(data + b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            log.debug("Client went away before the stream was sent")
        self.close_connection = True

    def _error(
        self,
        status: HTTPStatus,
        message: str,
        *,
        param: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        error = {"message": message, "type": kind, "param": param, "code": int(status)}
        self._send(status, {"object": "error", "error": error})


def _models(model: ChatModel) -> dict[str, Any]:
    card = {
        "id": model.name,
        "object": "model",
        "created": int(time.time()),
        "owned_by": "spade-envs",
    }
    return {"object": "list", "data": [card]}


def _number(body: dict[str, Any], key: str, default: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _BadRequest(HTTPStatus.BAD_REQUEST, f"'{key}' must be a number.", key)
    return value


def _messages(raw: Any) -> list[Message]:
    if not isinstance(raw, list):
        raise _BadRequest(
            HTTPStatus.BAD_REQUEST, "'messages' must be a list of messages.", "messages"
        )
    messages: list[Message] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise _BadRequest(
                HTTPStatus.BAD_REQUEST, f"messages[{i}] must be an object.", "messages"
            )
        content = item.get("content")
        if isinstance(content, list):
            # The OpenAI "content parts" form; only text parts mean anything to a text model.
            texts = [
                p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"
            ]
            if len(texts) != len(content) or not all(isinstance(t, str) for t in texts):
                raise _BadRequest(
                    HTTPStatus.BAD_REQUEST,
                    f"messages[{i}].content has non-text parts; this server handles text only.",
                    "messages",
                )
            content = "".join(texts)
        messages.append({"role": item.get("role"), "content": content})  # type: ignore[dict-item]
    why = check_conversation(messages)
    if why:
        raise _BadRequest(HTTPStatus.BAD_REQUEST, f"Bad 'messages': {why}.", "messages")
    return messages


def _parse_request(body: Any, served: str) -> _Request:
    if not isinstance(body, dict):
        raise _BadRequest(HTTPStatus.BAD_REQUEST, "The body must be a JSON object.")
    model = body.get("model")
    if model is not None and model != served:
        raise _BadRequest(
            HTTPStatus.NOT_FOUND,
            f"The model {model!r} does not exist here; this server serves {served!r} "
            "(GET /v1/models lists it).",
            "model",
        )
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise _BadRequest(HTTPStatus.BAD_REQUEST, "'stream' must be true or false.", "stream")
    options = body.get("stream_options")
    if options is not None and not (isinstance(options, dict) and stream):
        raise _BadRequest(
            HTTPStatus.BAD_REQUEST,
            "'stream_options' must be an object, and is only allowed with stream=true.",
            "stream_options",
        )
    include_usage = bool((options or {}).get("include_usage", False))
    n = body.get("n", 1)
    if n not in (1, None):
        raise _BadRequest(HTTPStatus.BAD_REQUEST, f"Only n=1 is supported, got n={n!r}.", "n")
    messages = _messages(body.get("messages"))
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    stop = body.get("stop")
    if stop is None:
        stop = ()
    elif isinstance(stop, str):
        stop = (stop,)
    elif not isinstance(stop, list):
        raise _BadRequest(
            HTTPStatus.BAD_REQUEST, "'stop' must be a string or a list of strings.", "stop"
        )
    schema = _response_schema(body.get("response_format"))
    want_logprobs = body.get("logprobs", False)
    if not isinstance(want_logprobs, bool):
        raise _BadRequest(HTTPStatus.BAD_REQUEST, "'logprobs' must be true or false.", "logprobs")
    try:
        params = SamplingParams(
            # OpenAI's defaults, not the library's: this is the OpenAI API.
            temperature=_number(body, "temperature", 1.0),
            top_p=_number(body, "top_p", 1.0),
            max_tokens=SamplingParams.max_tokens if max_tokens is None else max_tokens,
            stop=tuple(stop),
            seed=body.get("seed"),
            json_schema=schema,
        )
    except LLMConfigError as exc:
        raise _BadRequest(HTTPStatus.BAD_REQUEST, str(exc)) from None
    return _Request(messages, params, want_logprobs, stream, include_usage)


def _response_schema(value: Any) -> dict[str, Any] | None:
    """The JSON Schema a ``response_format`` asks for (None: free text)."""
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        spec = value.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise _BadRequest(
                HTTPStatus.BAD_REQUEST,
                "'response_format' of type json_schema needs 'json_schema': {'name': ..., "
                "'schema': {...}} with the schema as an object.",
                "response_format",
            )
        return schema
    raise _BadRequest(
        HTTPStatus.BAD_REQUEST,
        f"'response_format' type {kind!r} is not supported; use 'text', 'json_object' or "
        "'json_schema'.",
        "response_format",
    )


def _response(name: str, completion: Any, want_logprobs: bool) -> dict[str, Any]:
    logprobs = None
    if want_logprobs:
        ids = completion.token_ids
        aligned = len(ids) == len(completion.logprobs)
        logprobs = {
            "content": [
                {
                    "token": f"token_id:{ids[i]}" if aligned else "",
                    "logprob": value,
                    "bytes": None,
                    "top_logprobs": [],
                }
                for i, value in enumerate(completion.logprobs)
            ]
        }
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": completion.text},
        "finish_reason": completion.finish_reason,
        "logprobs": logprobs,
        "token_ids": list(completion.token_ids),
    }
    prompt_tokens = len(completion.prompt_token_ids)
    completion_tokens = len(completion.token_ids)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "prompt_token_ids": list(completion.prompt_token_ids),
    }


def _stream_chunks(response: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """A whole completion as OpenAI's ``chat.completion.chunk`` events (without [DONE])."""
    (choice,) = response["choices"]
    head = {
        "id": response["id"],
        "object": "chat.completion.chunk",
        "created": response["created"],
        "model": response["model"],
    }
    content = {
        "index": 0,
        "delta": {"role": "assistant", "content": choice["message"]["content"]},
        "logprobs": choice["logprobs"],
        "finish_reason": None,
        "token_ids": choice["token_ids"],
    }
    finish = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}
    chunks = [
        {**head, "choices": [content], "prompt_token_ids": response["prompt_token_ids"]},
        {**head, "choices": [finish]},
    ]
    if include_usage:
        chunks.append({**head, "choices": [], "usage": response["usage"]})
    return chunks


def main(argv: list[str] | None = None) -> int:
    """``python -m spade_envs.llm.server SPEC [--host H] [--port P]``."""
    from . import load_model

    parser = argparse.ArgumentParser(
        prog="python -m spade_envs.llm.server",
        description="Serve a chat model over an OpenAI-compatible HTTP API.",
        epilog="Example: python -m spade_envs.llm.server smollm2 --port 8000",
    )
    parser.add_argument(
        "spec", help="model spec: smollm2, a model directory, a .gguf file, vllm:PATH"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    with load_model(args.spec) as model, serve(model, args.host, args.port) as server:
        print(f"Serving {model.name!r} at {server.url}/v1 (Ctrl-C to stop)", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
