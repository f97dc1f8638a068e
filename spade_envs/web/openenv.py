"""Registry environments over OpenEnv's protocol: ``/api/v1/openenv/<Name>-v<N>``.

An OpenEnv client (``openenv.core.GenericEnvClient``, and TRL or any trainer through it)
is given one base URL per environment, ``http://HOST:PORT/api/v1/openenv/<Name>-v<N>``
(``spade/<Name>-v<N>`` and a bare ``<Name>``, resolved to its newest validated version,
work too). It polls ``GET {base}/health`` and plays over the WebSocket ``{base}/ws``:

- client frames ``{"type": "reset", "data": {"seed": 7, "hint": false, ...}}``,
  ``{"type": "step", "data": {"text": "<action>"}}``, ``{"type": "state"}`` and
  ``{"type": "close"}``;
- server frames ``{"type": "observation", "data": {"observation": {...}, "reward": r,
  "done": d}}``, ``{"type": "state", "data": {...}}`` and ``{"type": "error", "data":
  {"message": ..., "code": ...}}`` with OpenEnv's codes.

One connection is one play session of the server's
:class:`~spade_envs.web.play.PlaySessions`, run by its
:class:`~spade_envs.web.play_runner.PlayRunner`: the same door, sandbox, per-call
deadline, caps and idle/age limits as the web page's and the JSON API's play; the session
belongs to the connection (nobody else can reach it) and ends with it. OpenEnv's own
server (``openenv.core.create_app``) is not used: it runs environment calls on threads of
its own with no deadline, and would need fastmcp and gradio in the server's environment.

The observation carries the pinned ``env_id`` and its source ``sha256``, so a trajectory
names the exact code; Gymnasium's ``truncated``/``terminated`` pair rides in it beside
OpenEnv's single ``done``.
"""

from __future__ import annotations

import asyncio
import json
import random
import secrets
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..error import SpadeError, UnknownEnvironmentError, suggest
from ..registry.pins import Pin, pin, require_validated
from .params import HTTPError
from .play import MAX_ACTION_CHARS, PlaySession

__all__ = ["OpenEnvServer", "router"]

#: Largest client frame read (an action is at most MAX_ACTION_CHARS characters).
MAX_FRAME_CHARS = 4 * MAX_ACTION_CHARS + 1024
#: The fields a step's action may carry (OpenEnv's base Action allows ``metadata``).
ACTION_FIELDS = ("text", "metadata")
#: What a reset may carry: ``hint`` adds the environment's hint to the first observation.
RESET_FIELDS = ("seed", "episode_id", "hint", "opponent")

#: How long a refused connection waits for the client's first message.
REFUSE_WAIT_S = 10.0

router = APIRouter(prefix="/api/v1/openenv", tags=["openenv"])


class OpenEnvServer:
    """The OpenEnv endpoints' state: how many connections are open.

    Args:
        max_connections: Most WebSocket connections at once (each may hold one of the
            server's play sessions; a connection over the cap is refused with
            ``CAPACITY_REACHED``).
        idle_s: A connection that sends nothing for this long is closed.
    """

    def __init__(self, max_connections: int, idle_s: float):
        self.max_connections = max_connections
        self.idle_s = idle_s
        self.open = 0


def _app(request: Any) -> Any:
    return request.app.state.spade


async def _pin(app: Any, ident: str) -> Pin:
    """The version ``ident`` names; HTTPError 404 (with close matches) or 400."""
    try:
        return await run_in_threadpool(pin, app.registry, ident)
    except UnknownEnvironmentError as exc:
        raise HTTPError(
            404, f"{exc.name!r} is not in this registry.{suggest(exc.name, exc.known)}"
        ) from None
    except SpadeError as exc:
        raise HTTPError(400, str(exc)) from None


@router.get("/{ident:path}/health", summary="OpenEnv: readiness of one environment")
async def health(ident: str, request: Request) -> dict[str, Any]:
    """``{"status": "healthy"}`` once the version exists (OpenEnv clients poll this)."""
    pinned = await _pin(_app(request), ident)
    return {"status": "healthy", "env_id": pinned.env_id}


@router.get("/{ident:path}/metadata", summary="OpenEnv: what the environment is")
async def metadata(ident: str, request: Request) -> dict[str, Any]:
    """OpenEnv's ``EnvironmentMetadata`` fields, plus the pinned ID, hash and status."""
    app = _app(request)
    pinned = await _pin(app, ident)
    record = await run_in_threadpool(app.registry.get, pinned.env_id)
    return {
        "name": record.name,
        "description": record.description,
        "readme_content": None,
        "version": str(record.version),
        "author": record.model or record.origin,
        "documentation_url": None,
        "env_id": pinned.env_id,
        "sha256": pinned.sha256,
        "status": pinned.status,
        "kind": record.kind,
        "max_turns": record.max_turns,
        "note": pinned.note(),
    }


@router.get("/{ident:path}/schema", summary="OpenEnv: action, observation and state schemas")
async def schema(ident: str, request: Request) -> dict[str, Any]:
    """JSON Schemas of what ``/ws`` exchanges."""
    await _pin(_app(request), ident)
    text = {"type": "string", "maxLength": MAX_ACTION_CHARS}
    return {
        "action": {
            "type": "object",
            "properties": {"text": text, "metadata": {"type": "object"}},
            "required": ["text"],
            "additionalProperties": False,
        },
        "observation": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "env_id": {"type": "string"},
                "sha256": {"type": "string"},
                "seed": {"type": "integer"},
                "terminated": {"type": "boolean"},
                "truncated": {"type": "boolean"},
                "won": {"type": "boolean"},
                "step_count": {"type": "integer"},
                "episode_return": {"type": "number"},
                "hint": {"type": "string"},
                "note": {"type": "string"},
            },
        },
        "state": {
            "type": "object",
            "properties": {
                "episode_id": {"type": ["string", "null"]},
                "step_count": {"type": "integer"},
            },
        },
    }


@router.websocket("/{ident:path}/ws")
async def play(websocket: WebSocket, ident: str) -> None:
    """One OpenEnv session: see the module's docstring."""
    app = _app(websocket)
    server: OpenEnvServer = app.openenv
    await websocket.accept()
    if server.open >= server.max_connections:
        await _refuse(
            websocket,
            "CAPACITY_REACHED",
            f"{server.max_connections} OpenEnv connections are open; close one or retry later.",
            answer=True,
            active_sessions=server.open,
            max_sessions=server.max_connections,
        )
        return
    server.open += 1  # counted before any await: a burst cannot pass the cap together
    connection: _Connection | None = None
    try:
        try:
            pinned = await _pin(app, ident)
        except HTTPError as exc:
            await _refuse(websocket, "FACTORY_ERROR", exc.message, answer=True)
            return
        connection = _Connection(app, websocket, pinned)
        await connection.serve(server.idle_s)
    finally:
        server.open -= 1
        if connection is not None:
            connection.close()


async def _refuse(
    websocket: WebSocket, code: str, message: str, *, answer: bool = False, **extra: Any
) -> None:
    """Send the error and close. ``answer``: wait (briefly) for the client's first
    message and send the error as its reply: a client that sends a reset right after
    connecting would otherwise meet a closed socket, not the reason."""
    if answer:
        try:
            await asyncio.wait_for(websocket.receive_text(), REFUSE_WAIT_S)
        except (asyncio.TimeoutError, WebSocketDisconnect, RuntimeError, KeyError):
            pass  # KeyError: a binary frame; the error is the answer all the same
    try:
        await _send_error(websocket, code, message, **extra)
        await websocket.close(code=1008)
    except (WebSocketDisconnect, RuntimeError):  # the client already left
        pass


async def _send_error(websocket: WebSocket, code: str, message: str, **extra: Any) -> None:
    await websocket.send_text(
        json.dumps({"type": "error", "data": {"message": message, "code": code, **extra}})
    )


def _error_code(status: int) -> str:
    """OpenEnv's error code for one of our HTTP statuses."""
    if status in (429, 503):
        return "CAPACITY_REACHED"
    if status in (404, 410, 504):
        return "SESSION_ERROR"
    if status == 500:
        return "FACTORY_ERROR"
    if status == 422:
        return "VALIDATION_ERROR"
    return "EXECUTION_ERROR"


class _Connection:
    """One WebSocket and the play session it owns (opened by its first reset)."""

    def __init__(self, app: Any, websocket: WebSocket, pinned: Pin):
        self.app = app
        self.websocket = websocket
        self.pinned = pinned
        self.owner = "openenv:" + secrets.token_urlsafe(18)
        host = websocket.client.host if websocket.client else "unknown"
        self.client = f"openenv:{host}"
        self.session: PlaySession | None = None
        self.episode_id: str | None = None
        self.hint = ""

    async def serve(self, idle_s: float) -> None:
        while True:
            try:
                raw = await asyncio.wait_for(self.websocket.receive_text(), idle_s)
            except asyncio.TimeoutError:
                await _refuse(
                    self.websocket,
                    "SESSION_ERROR",
                    f"No message for {idle_s:g} s: the session is closed. Connect again.",
                )
                return
            except (WebSocketDisconnect, RuntimeError):
                return
            except KeyError:  # a binary frame: OpenEnv speaks JSON text
                await _send_error(self.websocket, "INVALID_JSON", "Send JSON as text frames.")
                continue
            if len(raw) > MAX_FRAME_CHARS:
                await _send_error(
                    self.websocket,
                    "VALIDATION_ERROR",
                    f"The message has {len(raw)} characters; at most {MAX_FRAME_CHARS}.",
                )
                continue
            try:
                message = json.loads(raw)
            except (ValueError, RecursionError) as exc:
                await _send_error(self.websocket, "INVALID_JSON", f"Not JSON: {exc}.")
                continue
            kind = message.get("type") if isinstance(message, dict) else None
            if kind == "close":
                return
            handler = {"reset": self.reset, "step": self.step, "state": self.state}.get(kind)
            if handler is None:
                await _send_error(
                    self.websocket,
                    "UNKNOWN_TYPE",
                    f"Unknown message type {kind!r}; send reset, step, state or close."
                    + suggest(str(kind), ["reset", "step", "state", "close"]),
                )
                continue
            data = message.get("data", {})
            if not isinstance(data, dict):
                await _send_error(self.websocket, "VALIDATION_ERROR", "data must be an object.")
                continue
            try:
                reply = await handler(data)
            except HTTPError as exc:
                code = _error_code(exc.status)
                await _send_error(self.websocket, code, exc.message)
                if code == "SESSION_ERROR":  # the session is gone: so is the connection
                    await self.websocket.close(code=1011)
                    return
                continue
            await self.websocket.send_text(json.dumps(reply))

    # ----- the three calls ----------------------------------------------------------------
    async def reset(self, data: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(data) - set(RESET_FIELDS))
        if unknown:
            raise HTTPError(
                422, f"reset takes {', '.join(RESET_FIELDS)}; not {', '.join(unknown)}."
            )
        seed = data.get("seed")
        if seed is not None and (
            not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63
        ):
            raise HTTPError(422, f"seed must be a whole number from 0 to 2**63-1, not {seed!r}.")
        opponent = data.get("opponent", "best")
        if opponent not in ("best", "random"):
            raise HTTPError(422, f"opponent must be 'best' or 'random', not {opponent!r}.")
        if self.session is None:
            self.session = await self.app.play.start(
                self.client, self.pinned.env_id, self.owner, seed, opponent
            )
        else:
            self.app.sessions.get(self.session.id, self.owner)  # 404/410 once it ended
            await self._still_validated()
            previous = self.session.seed
            self.session.seed = secrets.randbelow(2**31) if seed is None else seed
            try:
                await self.app.play.reset(self.client, self.session)
            except HTTPError:  # refused (a cap) or ended: the episode keeps its seed
                self.session.seed = previous
                raise
        session = self.session
        self.episode_id = data.get("episode_id") or f"{session.env_id}@{session.seed}"
        self.hint = ""
        if session.failed:
            raise HTTPError(400, _last(session, "error") or "The reset failed.")
        if data.get("hint"):
            await self.app.play.hint(self.client, session)
            self.hint = _last(session, "hint")
        return self._observation(reward=None)

    async def step(self, data: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(data) - set(ACTION_FIELDS))
        text = data.get("text")
        if unknown or not isinstance(text, str):
            raise HTTPError(
                422,
                'A step\'s action is {"text": "<action>"} (optionally with "metadata")'
                + (f"; unknown fields: {', '.join(unknown)}." if unknown else "."),
            )
        if len(text) > MAX_ACTION_CHARS:
            raise HTTPError(
                422, f"The action has {len(text)} characters; at most {MAX_ACTION_CHARS}."
            )
        session = self._live()
        await self.app.play.step(self.client, session, text)
        if session.failed:
            raise HTTPError(400, _last(session, "error") or "The step failed.")
        if session.won:
            await self._audit(session)
        return self._observation(reward=session.last_reward)

    async def state(self, data: dict[str, Any]) -> dict[str, Any]:
        session = self.session
        return {
            "type": "state",
            "data": {
                "episode_id": self.episode_id,
                "step_count": session.turns if session else 0,
                "env_id": self.pinned.env_id,
                "sha256": self.pinned.sha256,
                "seed": session.seed if session else None,
                "episode_return": session.total if session else 0.0,
                "done": session.done if session else False,
            },
        }

    # ----- helpers --------------------------------------------------------------------------
    async def _audit(self, session: PlaySession) -> None:
        """A win counts only once a replay and the counterfactual confirm it
        (:func:`spade_envs.runtime.audit.audit_win`, off the event loop); a version
        caught is quarantined and the session ends (SESSION_ERROR)."""
        from ..runtime.audit import audit_win

        result = await run_in_threadpool(
            audit_win,
            session.env,
            self.app.registry,
            session.env_id,
            random.Random(),
            session.win_rule,
        )
        if result.divergence is None and not result.failed:
            return
        why = (
            f"{session.env_id} behaved differently from its own replay and is now quarantined"
            if result.divergence is not None
            else f"this win could not be confirmed by a replay ({result.failed})"
        )
        self.app.sessions.end(session, why)
        raise HTTPError(410, f"The win does not count: {why}.")

    async def _still_validated(self) -> None:
        """Every episode re-reads the version's status: one rejected, retired or
        quarantined since the connection opened is not played again."""
        record = await run_in_threadpool(self.app.registry.get, self.pinned.env_id)
        try:
            require_validated(record, again=True)
        except SpadeError as exc:
            raise HTTPError(410, str(exc)) from None

    def _live(self) -> PlaySession:
        if self.session is None:
            raise HTTPError(422, "Send a reset first: the episode has not started.")
        return self.app.sessions.get(self.session.id, self.owner)

    def _observation(self, reward: float | None) -> dict[str, Any]:
        session = self.session
        assert session is not None
        return {
            "type": "observation",
            "data": {
                "observation": {
                    "text": _last(session, "observation"),
                    "env_id": self.pinned.env_id,
                    "sha256": self.pinned.sha256,
                    "seed": session.seed,
                    "terminated": session.terminated,
                    "truncated": session.truncated,
                    "won": session.won,
                    "step_count": session.turns,
                    "episode_return": session.total,
                    "hint": self.hint,
                    "note": self.pinned.note(),
                },
                "reward": reward,
                "done": session.done,
            },
        }

    def close(self) -> None:
        """End the session (its worker stops in the background)."""
        if self.session is not None:
            try:
                self.app.sessions.close(self.session.id, self.owner, wait=False)
            except HTTPError:  # it already ended (idle, timed out)
                pass


def _last(session: PlaySession, kind: str) -> str:
    """The text of the transcript's last entry of ``kind`` ("" if none)."""
    for turn in reversed(session.transcript):
        if turn.kind == kind:
            return turn.text
    return ""
