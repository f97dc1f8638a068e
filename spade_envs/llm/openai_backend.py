"""A :class:`~spade_envs.llm.base.ChatModel` over any OpenAI-compatible HTTP server.

vLLM's server, llama.cpp's server, a hosted API, or :func:`spade_envs.llm.server.serve`.
Only the standard library is used (``urllib.request`` and a thread pool), so the client
adds no dependency. Every failure of a request (connection refused, timeout, HTTP
error, a body that is not the expected JSON) becomes an error
:class:`~spade_envs.llm.base.Completion`; transient ones (connection errors, timeouts,
HTTP 408/409/429/5xx) are retried first. ``SamplingParams.json_schema`` is sent as
``response_format`` (``{"type": "json_schema", ...}``), which the server must support.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .base import (
    ChatModel,
    Completion,
    LLMConfigError,
    Message,
    SamplingParams,
    _check_each,
    check_conversation,
)

__all__ = ["OpenAIChatModel", "RequestFailed", "parse_chat_response"]

log = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
_TOKEN_ID = re.compile(r"token_id:(\d+)")
_MAX_BODY = 64 * 1024 * 1024


class RequestFailed(Exception):
    """One HTTP exchange failed.

    Internal to this module: it never escapes :meth:`OpenAIChatModel.generate`.

    Attributes:
        retry: Whether trying again may help.
        unreachable: Whether no connection could be made at all.
    """

    def __init__(self, message: str, *, retry: bool, unreachable: bool = False) -> None:
        super().__init__(message)
        self.retry = retry
        self.unreachable = unreachable


def _api_root(base_url: str) -> str:
    """``http://host:port`` or ``.../v1`` → the URL that ``/chat/completions`` hangs off."""
    if not isinstance(base_url, str) or not base_url.strip():
        raise LLMConfigError(
            f"base_url must be a URL such as 'http://127.0.0.1:8000', got {base_url!r}."
        )
    url = base_url.strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise LLMConfigError(
            f"base_url {base_url!r} is not an http(s) URL; write it like "
            "'http://127.0.0.1:8000' or 'https://api.example.com/v1'."
        )
    return url if url.endswith("/v1") else url + "/v1"


class OpenAIChatModel(ChatModel):
    """A client of an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        base_url: The server's address, with or without the trailing ``/v1``.
        model: The model name to request; ``None`` asks the server (``GET /v1/models``)
            and takes the first model it lists, on first use.
        api_key: Sent as a bearer token; default ``$OPENAI_API_KEY`` (none if unset).
        timeout: Seconds to wait for one HTTP request.
        max_concurrency: How many requests of a batch are in flight at once.
        retries: Extra tries for a transient failure (connection error, timeout, 429, 5xx).
        retry_backoff: Seconds before the first retry; doubled for each further one.
        extra_body: Extra fields for every request body, e.g. ``{"return_token_ids": True}``
            for a vLLM server (the OpenAI API itself rejects unknown fields).

    Token ids are filled in when the server sends them (vLLM's ``token_ids`` /
    ``prompt_token_ids`` fields, or tokens written as ``token_id:N``); otherwise only the
    log-probabilities are, one per token the server reports.

    Raises:
        LLMConfigError: A parameter is invalid (never for an unreachable server: that
            shows up as error completions).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        max_concurrency: int = 8,
        retries: int = 2,
        *,
        retry_backoff: float = 0.5,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.api_root = _api_root(base_url)
        if model is not None and (not isinstance(model, str) or not model):
            raise LLMConfigError(f"model must be a non-empty string or None, got {model!r}.")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise LLMConfigError(f"timeout must be a positive number of seconds, got {timeout!r}.")
        for label, value in (("max_concurrency", max_concurrency), ("retries", retries)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise LLMConfigError(f"{label} must be a non-negative int, got {value!r}.")
        if max_concurrency < 1:
            raise LLMConfigError("max_concurrency must be at least 1.")
        if not isinstance(retry_backoff, (int, float)) or retry_backoff < 0:
            raise LLMConfigError(f"retry_backoff must be >= 0 seconds, got {retry_backoff!r}.")
        if extra_body is not None and not isinstance(extra_body, dict):
            raise LLMConfigError(f"extra_body must be a dict, got {type(extra_body).__name__}.")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = float(timeout)
        self.max_concurrency = max_concurrency
        self.retries = retries
        self.retry_backoff = float(retry_backoff)
        self.extra_body = dict(extra_body or {})
        self.name = model or f"openai:{self.api_root}"
        self._model_lock = threading.Lock()

    # ------------------------------------------------------------------- HTTP

    def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        retries: int | None = None,
    ) -> Any:
        """One HTTP exchange with retries; returns the decoded JSON or raises RequestFailed."""
        retries = self.retries if retries is None else retries
        attempt = 0
        while True:
            try:
                return self._request_once(method, path, body)
            except RequestFailed as exc:
                if not exc.retry or attempt >= retries:
                    if attempt:
                        raise RequestFailed(
                            f"{exc} (after {attempt + 1} tries)",
                            retry=False,
                            unreachable=exc.unreachable,
                        ) from None
                    raise
                time.sleep(self.retry_backoff * (2**attempt))
                attempt += 1

    def _headers(self, data: bytes | None) -> dict[str, str]:
        """A request's headers: JSON, and the bearer token when there is one."""
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _request_once(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        url = self.api_root + path
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, headers=self._headers(data), method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read(_MAX_BODY + 1)
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            raise RequestFailed(
                f"{method} {url} answered HTTP {exc.code}: {detail}",
                retry=exc.code in _RETRY_STATUS,
            ) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise RequestFailed(
                    f"{method} {url} timed out after {self.timeout:g} s", retry=True
                ) from None
            raise RequestFailed(
                f"Cannot reach {url}: {reason}. Is the server running at {self.api_root}?",
                retry=True,
                unreachable=True,
            ) from None
        except TimeoutError:
            raise RequestFailed(
                f"{method} {url} timed out after {self.timeout:g} s", retry=True
            ) from None
        except (ConnectionError, OSError) as exc:  # reset mid-response, bad status line
            raise RequestFailed(f"{method} {url} failed: {exc}", retry=True) from None
        if len(raw) > _MAX_BODY:
            raise RequestFailed(f"{method} {url} sent more than {_MAX_BODY} bytes", retry=False)
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            preview = raw[:200].decode("utf-8", "replace")
            raise RequestFailed(
                f"{method} {url} did not answer JSON (got {preview!r}); is it an "
                "OpenAI-compatible server?",
                retry=False,
            ) from None

    def resolve_model(self) -> str:
        """The model name: the one given, else the first one ``GET /v1/models`` lists.

        Raises:
            RequestFailed: The server could not be asked or listed no model.
        """
        return self._resolve(threading.Event())

    def _resolve(self, down: threading.Event) -> str:
        with self._model_lock:
            if self.model is None:
                retries = 0 if down.is_set() else None
                try:
                    listing = self._request("GET", "/models", retries=retries)
                except RequestFailed as exc:
                    if exc.unreachable:
                        down.set()
                    raise
                data = listing.get("data") if isinstance(listing, dict) else None
                ids = [m.get("id") for m in data or [] if isinstance(m, dict)]
                ids = [i for i in ids if isinstance(i, str) and i]
                if not ids:
                    raise RequestFailed(
                        f"GET {self.api_root}/models listed no model ({str(listing)[:200]}); "
                        "pass model=... explicitly.",
                        retry=False,
                    )
                self.model = ids[0]
                self.name = self.model
            return self.model

    # ------------------------------------------------------------- generation

    def _body(self, model: str, messages: Sequence[Message], params: SamplingParams) -> dict:
        body: dict[str, Any] = {
            "model": model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
            "n": 1,
            "logprobs": True,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if params.json_schema is not None:
            # OpenAI's structured outputs; vLLM's server, llama.cpp's and ours honour it.
            # Not "strict": OpenAI's strict mode refuses optional properties and bounds.
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": params.json_schema, "strict": False},
            }
        body.update(self.extra_body)
        return body

    def _one(
        self,
        seed: int | None,
        messages: Sequence[Message],
        params: SamplingParams,
        down: threading.Event,
    ) -> Completion:
        why = check_conversation(messages)
        if why:
            return Completion.failed(f"Bad conversation: {why}.")
        try:
            model = self._resolve(down)
            body = self._body(model, messages, params)
            if seed is not None:
                body["seed"] = seed
            # Once one request of this batch found the server unreachable, the rest try
            # once instead of each sleeping through its retries.
            retries = 0 if down.is_set() else None
            payload = self._request("POST", "/chat/completions", body, retries=retries)
            return parse_chat_response(payload)
        except RequestFailed as exc:
            if exc.unreachable:
                down.set()
            return Completion.failed(str(exc))
        except Exception as exc:  # a bug must not take the rest of the batch with it
            log.exception("Unexpected failure in an OpenAI-compatible request")
            return Completion.failed(f"Unexpected client error: {type(exc).__name__}: {exc}")

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams | None = None,
    ) -> list[Completion]:
        """Send every conversation, ``max_concurrency`` at a time (see ``ChatModel.generate``)."""
        params = params or SamplingParams()
        items = list(conversations)
        return self._send([(c, params, params.seed_for(i)) for i, c in enumerate(items)])

    def generate_each(
        self,
        conversations: Sequence[Sequence[Message]],
        params: Sequence[SamplingParams],
    ) -> list[Completion]:
        """Send every conversation with its own parameters (a JSON Schema each becomes its
        ``response_format``); see ``ChatModel.generate_each``."""
        return self._send([(c, p, p.seed) for c, p in _check_each(conversations, params)])

    def _send(
        self, items: list[tuple[Sequence[Message], SamplingParams, int | None]]
    ) -> list[Completion]:
        down = threading.Event()
        if len(items) <= 1:
            return [self._one(seed, c, p, down) for c, p, seed in items]
        with ThreadPoolExecutor(
            max_workers=min(self.max_concurrency, len(items)), thread_name_prefix="spade-openai"
        ) as pool:
            futures = [pool.submit(self._one, seed, c, p, down) for c, p, seed in items]
            return [f.result() for f in futures]

    def __repr__(self) -> str:
        return f"OpenAIChatModel(base_url={self.api_root!r}, model={self.model!r})"


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """The server's error message from an HTTP error response, shortened."""
    try:
        raw = exc.read(4096).decode("utf-8", "replace")
    except Exception:
        raw = ""
    try:
        payload = json.loads(raw)
        error = payload.get("error", payload) if isinstance(payload, dict) else payload
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)[:500]
    except (json.JSONDecodeError, AttributeError):
        pass
    return raw.strip()[:500] or exc.reason or "no detail"


def parse_chat_response(payload: Any) -> Completion:
    """Turn a ``/v1/chat/completions`` JSON response into a :class:`Completion`.

    Never raises: a response without the expected fields becomes an error completion.
    """
    if not isinstance(payload, dict):
        return Completion.failed(
            f"The server answered {type(payload).__name__}, not a JSON object."
        )
    if "error" in payload and "choices" not in payload:
        error = payload["error"]
        message = error.get("message") if isinstance(error, dict) else error
        return Completion.failed(f"The server reported an error: {message}")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return Completion.failed(f"The response has no choices: {str(payload)[:200]}")
    choice = choices[0]
    message = choice.get("message")
    text = message.get("content") if isinstance(message, dict) else None
    if text is None:
        text = ""  # a reply that is only a tool call, or a refusal, has null content
    if not isinstance(text, str):
        return Completion.failed(f"The reply's content is {type(text).__name__}, not text.")
    finish = choice.get("finish_reason")
    # Servers also say "eos", "tool_calls" or "content_filter"; all of those ended the reply.
    finish_reason = "length" if finish == "length" else "stop"
    logprobs: list[float] = []
    tokens: list[str] = []
    reported = choice.get("logprobs")
    content = reported.get("content") if isinstance(reported, dict) else None
    if isinstance(content, list):
        for entry in content:
            if not isinstance(entry, dict) or not isinstance(entry.get("logprob"), (int, float)):
                logprobs, tokens = [], []
                break
            logprobs.append(float(entry["logprob"]))
            tokens.append(str(entry.get("token", "")))
    token_ids = _int_list(choice.get("token_ids"))
    if not token_ids and tokens and all(_TOKEN_ID.fullmatch(t) for t in tokens):
        token_ids = [int(t.split(":", 1)[1]) for t in tokens]
    if token_ids and logprobs and len(token_ids) != len(logprobs):
        # Log-probabilities that cannot be matched to tokens would mislead a trainer.
        logprobs = []
    prompt_ids = _int_list(payload.get("prompt_token_ids") or choice.get("prompt_token_ids"))
    return Completion(
        text=text,
        token_ids=tuple(token_ids),
        logprobs=tuple(logprobs),
        finish_reason=finish_reason,
        prompt_token_ids=tuple(prompt_ids),
    )


def _int_list(value: Any) -> list[int]:
    if isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return list(value)
    return []
