"""Parent-side proxies: a sandboxed environment that is a real Gymnasium env or AEC game.

Everything a worker answers is checked here again (types, sizes, finiteness is
left to the validator), because the code in the worker may have tampered with
the worker itself.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
from pettingzoo import AECEnv

from ..core.spaces import DEFAULT_ACTION_LENGTH, TextObservation, UnicodeText
from ..core.wins import WIN_RULES
from ..error import (
    EnvCodeError,
    HintUnavailable,
    SandboxError,
    SandboxTimeout,
    SpadeError,
    UntrustedCodeError,
)
from .config import SandboxConfig
from .pool import WorkerPool, default_pool
from .process import Worker
from .trace import EpisodeTrace, ResetSeeds, StepRecord, digest

__all__ = [
    "SandboxedEnv",
    "SandboxedGame",
    "open_env",
    "open_file",
    "open_seed",
    "require_trust",
    "step_all",
]

Isolation = Literal["sandbox", "none"]
#: The longest a hint's twin may take to replay the episode and answer.
_TWIN_SECONDS = 60.0


def _expect(condition: bool, op: str, what: str) -> None:
    if not condition:
        raise EnvCodeError(f"{op}() returned {what}", exc_type="ReturnTypeError")


def finite_number(value: Any, op: str, what: str) -> float:
    """``value`` as a finite float, or an :class:`EnvCodeError` naming ``op``.

    JSON integers are unbounded (``10**4000`` parses), so the conversion itself can
    fail; every such failure is this environment's, never the caller's.
    """
    _expect(
        isinstance(value, (int, float)) and not isinstance(value, bool),
        op,
        f"a {what} of type {type(value).__name__}",
    )
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise EnvCodeError(
            f"{op}() returned a {what} that is not a finite number", exc_type="ReturnValueError"
        )
    return number


def checked_metadata(meta: Any) -> dict[str, Any]:
    """Check the metadata a worker sent at load time; forged fields fail this env only."""
    _expect(isinstance(meta, dict), "load", "metadata that is not a dict")
    for key in ("name", "kind", "skill", "description"):
        _expect(isinstance(meta.get(key, ""), str), "load", f"a {key} that is not text")
    max_turns = meta.get("max_turns", 1)
    _expect(
        isinstance(max_turns, int) and not isinstance(max_turns, bool) and 1 <= max_turns <= 10_000,
        "load",
        f"max_turns {max_turns!r:.40} (an int from 1 to 10000 is needed)",
    )
    reward_range = meta.get("reward_range", (0.0, 1.0))
    _expect(
        isinstance(reward_range, (list, tuple)) and len(reward_range) == 2,
        "load",
        "a reward_range that is not (low, high)",
    )
    low, high = (finite_number(x, "load", "reward_range bound") for x in reward_range)
    _expect(low <= high, "load", f"a reward_range with low > high ({low:g}, {high:g})")
    knobs = meta.get("knobs", {})
    _expect(isinstance(knobs, dict), "load", "knobs that are not a dict")
    win_rule = meta.get("win_rule", "return")
    _expect(win_rule in WIN_RULES, "load", f"a win_rule that is not one of {WIN_RULES}")
    for key in ("possible_agents", "render_modes", "tool_schemas"):
        value = meta.get(key, [])
        _expect(isinstance(value, list), "load", f"{key} that is not a list")
    _expect(
        all(isinstance(a, str) for a in meta.get("possible_agents", [])),
        "load",
        "possible_agents that are not all text",
    )
    _expect(
        all(isinstance(t, dict) for t in meta.get("tool_schemas", [])),
        "load",
        "tool schemas that are not all objects",
    )
    return {**meta, "max_turns": max_turns, "reward_range": (low, high), "win_rule": win_rule}


def wire_text(text: str) -> str:
    """``text`` with lone surrogates replaced by ``?``: the wire refuses them (they are not
    UTF-8), and a worker killed by an action would let a player turn a wrong answer into
    a failed, unscored play (a JSON body or a tool call's ``"\\ud800"`` escape makes one)."""
    return text.encode("utf-8", "replace").decode("utf-8")


class _Remote:
    """What both proxies share: the worker, metadata and checked calls."""

    #: Opens a fresh instance of the same environment (same code, knobs, seat) in a fresh
    #: worker: set by the runtime's door, which then takes hints from a twin (see hint()).
    twin_opener: Any = None

    def _attach(self, worker: Worker, meta: dict[str, Any], config: SandboxConfig) -> None:
        meta = checked_metadata(meta)
        self._worker = worker
        self.reset_seeds = ResetSeeds()
        self.trace: EpisodeTrace | None = None
        self.config = config
        self.env_metadata = meta
        self.name = meta.get("name", "")
        self.kind = meta.get("kind", "")
        self.skill = meta.get("skill", "")
        self.description = meta.get("description", "")
        self.max_turns = meta["max_turns"]
        self.reward_range = meta["reward_range"]
        self.win_rule = meta["win_rule"]
        self.knobs = dict(meta.get("knobs", {}))

    def _reward(self, value: Any, op: str) -> float:
        """A reward: a finite number inside the declared ``reward_range``."""
        reward = finite_number(value, op, "reward")
        low, high = self.reward_range
        if not low - 1e-9 <= reward <= high + 1e-9:
            raise EnvCodeError(
                f"{op}() returned reward {reward:g}, outside reward_range ({low:g}, {high:g})",
                exc_type="ReturnValueError",
            )
        return reward

    @property
    def isolation(self) -> dict[str, Any]:
        """The isolation layers the worker actually runs with."""
        return dict(self._worker.layers)

    @property
    def broken(self) -> bool:
        return not self._worker.alive

    def _text(self, value: Any, op: str) -> str:
        _expect(isinstance(value, str), op, f"{type(value).__name__} where text was expected")
        limit = self.config.max_observation_chars
        if len(value) > limit:
            raise EnvCodeError(
                f"{op}() returned {len(value)} characters of text, over the limit of {limit}",
                exc_type="ObservationTooLarge",
            )
        return value

    def _dict(self, value: Any, op: str) -> dict[str, Any]:
        _expect(isinstance(value, dict), op, f"info of type {type(value).__name__}, not a dict")
        return value

    def hint(self, *agent: str) -> str:
        """The environment's hint for the current episode.

        With a :attr:`twin_opener` (every play through the runtime's door), the hint comes
        from a twin: a fresh instance in a fresh worker, reset with the same seed and
        stepped with the same actions. Whatever ``hint()`` does there (move the secret,
        patch the class) cannot touch the episode being played.
        """
        if self.twin_opener is None or self.trace is None:
            return self.own_hint(*agent)
        # One deadline for the whole replay: a call's for each step replayed, and at most
        # a minute, so a long episode of slow steps cannot make one hint cost max_turns
        # call timeouts.
        limit = min(_TWIN_SECONDS, self.config.call_timeout * (len(self.trace.steps) + 2))
        deadline = time.monotonic() + limit
        twin = None

        def next_call() -> None:
            """The twin's next call gets what is left of the one deadline."""
            left = deadline - time.monotonic()
            if left <= 0:
                raise SandboxTimeout(f"the hint's replay did not finish within {limit:g} s")
            twin._worker.call_timeout = left

        try:
            twin = self.twin_opener()
            next_call()
            twin.reset(seed=self.trace.seed, options=self.trace.options)
            for step in self.trace.steps:
                next_call()
                twin.step(step.action)
            next_call()
            return self._text(twin.own_hint(*agent), "hint")
        except SandboxError as exc:
            if isinstance(exc, HintUnavailable):
                raise
            raise HintUnavailable(
                f"hint() could not be answered by a fresh worker replaying this episode: {exc}",
                exc_type=getattr(exc, "exc_type", "") or type(exc).__name__,
            ) from exc
        finally:
            if twin is not None:
                twin.close()

    def own_hint(self, *agent: str) -> str:
        """``hint()`` of this very instance (the validator's hint checks use it)."""
        return self._text(self._worker.call("hint", agent=agent[0] if agent else None), "hint")

    def printed(self) -> str:
        """The last few KB the environment printed (stdout and stderr)."""
        return str(self._worker.call("output"))

    def close(self) -> None:
        self._worker.close()


class SandboxedEnv(_Remote, gym.Env[str, str]):
    """A text or tool environment running in a sandbox worker (a real ``gymnasium.Env``)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        worker: Worker,
        meta: dict[str, Any],
        config: SandboxConfig,
        render_mode: str | None = None,
    ):
        self._attach(worker, meta, config)
        self.render_mode = render_mode
        self.observation_space = UnicodeText(config.max_observation_chars)
        self.action_space = UnicodeText(DEFAULT_ACTION_LENGTH)
        self.tool_schemas = list(meta.get("tool_schemas", []))
        self._last_observation = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        seed = self.reset_seeds.next(seed)  # the environment never sees None
        super().reset(seed=seed)  # mirror np_random so seeded checks see a seeded env
        self.trace = None
        result = self._worker.call("reset", seed=seed, options=options)
        _expect(
            isinstance(result, list) and len(result) == 2,
            "reset",
            "something other than (obs, info)",
        )
        observation = self._text(result[0], "reset")
        self._last_observation = observation
        info = self._dict(result[1], "reset")
        self.trace = EpisodeTrace(
            seed=seed, options=dict(options) if options else None, observation=digest(observation)
        )
        return observation, info

    def step(self, action: str):
        self.step_async(action)
        return self.step_wait()

    def step_async(self, action: str) -> None:
        """Send ``action`` and return at once; :meth:`step_wait` collects the result."""
        if not isinstance(action, str):
            action = "" if action is None else str(action)
        action = wire_text(action)
        self._pending_action = action
        self._worker.send("step", action=action)

    def step_wait(self):
        """The ``(obs, reward, terminated, truncated, info)`` of the pending step."""
        result = self._worker.receive()
        _expect(
            isinstance(result, list) and len(result) == 5,
            "step",
            "something other than (obs, reward, terminated, truncated, info)",
        )
        observation, reward, terminated, truncated, info = result
        observation = self._text(observation, "step")
        reward = self._reward(reward, "step")
        _expect(
            isinstance(terminated, bool) and isinstance(truncated, bool),
            "step",
            "terminated/truncated flags that are not booleans",
        )
        self._last_observation = observation
        info = self._dict(info, "step")
        if self.trace is not None:
            self.trace.steps.append(
                StepRecord(
                    action=self._pending_action,
                    reward=reward,
                    terminated=terminated,
                    truncated=truncated,
                    observation=digest(observation),
                )
            )
        return observation, reward, terminated, truncated, info

    def solution(self) -> list[str]:
        result = self._worker.call("solution")
        _expect(
            isinstance(result, list)
            and len(result) <= 10_000
            and all(isinstance(a, str) and len(a) <= DEFAULT_ACTION_LENGTH for a in result),
            "solution",
            f"something other than a list of action strings (each at most "
            f"{DEFAULT_ACTION_LENGTH} characters)",
        )
        return result

    def render(self) -> str | None:
        return self._last_observation if self.render_mode == "ansi" else None

    def function_schemas(self) -> list[dict[str, Any]]:
        return [dict(s) for s in self.tool_schemas]

    def __repr__(self) -> str:
        return f"<SandboxedEnv {self.name} pid={self._worker.pid}>"


class SandboxedGame(_Remote, AECEnv):
    """A ``TextGame`` running in a sandbox worker (a real PettingZoo ``AECEnv``)."""

    metadata = {"render_modes": ["ansi"], "name": "sandboxed_text_game", "is_parallelizable": False}

    def __init__(
        self,
        worker: Worker,
        meta: dict[str, Any],
        config: SandboxConfig,
        render_mode: str | None = None,
    ):
        AECEnv.__init__(self)
        self._attach(worker, meta, config)
        self.render_mode = render_mode
        self.possible_agents = [str(a) for a in meta.get("possible_agents", [])]
        self.agents = []
        self._obs_spaces = {
            a: UnicodeText(config.max_observation_chars) for a in self.possible_agents
        }
        self._act_spaces = {a: UnicodeText(DEFAULT_ACTION_LENGTH) for a in self.possible_agents}

    def observation_space(self, agent: str) -> UnicodeText:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> UnicodeText:
        return self._act_spaces[agent]

    def _mirror(self, snapshot: Any, op: str) -> None:
        _expect(isinstance(snapshot, dict), op, "a malformed game state")
        agents = snapshot.get("agents")
        _expect(
            isinstance(agents, list)
            and all(isinstance(a, str) for a in agents)
            and set(agents) <= set(self.possible_agents),
            op,
            "unknown agents",
        )
        self.agents = list(agents)
        selection = snapshot.get("agent_selection")
        _expect(
            isinstance(selection, str) and selection in self.possible_agents,
            op,
            "an unknown agent_selection",
        )
        self.agent_selection = selection
        for key, attr in (
            ("rewards", "rewards"),
            ("cumulative_rewards", "_cumulative_rewards"),
            ("terminations", "terminations"),
            ("truncations", "truncations"),
            ("infos", "infos"),
        ):
            value = self._dict(snapshot.get(key), op)
            _expect(set(value) == set(self.agents), op, f"{key} for the wrong agents")
            setattr(self, attr, dict(value))
        for agent in self.agents:
            _expect(
                isinstance(self.terminations[agent], bool)
                and isinstance(self.truncations[agent], bool),
                op,
                "non-boolean terminations",
            )
            self.rewards[agent] = self._reward(self.rewards[agent], op)
            self._cumulative_rewards[agent] = finite_number(
                self._cumulative_rewards[agent], op, "cumulative reward"
            )

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        seed = self.reset_seeds.next(seed)  # the game never sees None
        self.trace = None
        snapshot = self._worker.call("game_reset", seed=seed, options=options)
        self._mirror(snapshot, "reset")
        self.trace = EpisodeTrace(
            seed=seed, options=dict(options) if options else None, observation=_state(snapshot)
        )

    def step(self, action: str | None) -> None:
        if action is not None and not isinstance(action, str):
            action = str(action)
        if action is not None:
            action = wire_text(action)
        acting = self.agent_selection if self.agents else ""
        snapshot = self._worker.call("game_step", action=action)
        self._mirror(snapshot, "step")
        if self.trace is not None:
            # A game's trace: each move and a digest of the whole state after it (who is
            # to move, every reward, flag and info), which a replay must reproduce.
            first = self.possible_agents[0] if self.possible_agents else ""
            self.trace.steps.append(
                StepRecord(
                    action=action,
                    reward=float(self.rewards.get(first, 0.0)),
                    terminated=bool(self.terminations.get(first, False)),
                    truncated=bool(self.truncations.get(first, False)),
                    observation=_state(snapshot),
                    agent=acting,
                )
            )

    def observe(self, agent: str) -> str:
        return TextObservation(self._text(self._worker.call("observe", agent=agent), "observe"))

    def legal_moves(self, agent: str) -> list[str]:
        moves = self._worker.call("legal_moves", agent=agent)
        _expect(isinstance(moves, list), "legal_moves", "something other than a list")
        return [self._text(m, "legal_moves") for m in moves]

    def best_move(self, agent: str) -> str:
        return self._text(self._worker.call("best_move", agent=agent), "best_move")

    def winning_line(self, agent: str) -> list[str] | None:
        line = self._worker.call("winning_line", agent=agent)
        _expect(line is None or isinstance(line, list), "winning_line", "neither None nor a list")
        return None if line is None else [self._text(m, "winning_line") for m in line]

    def render(self) -> str | None:
        if self.render_mode == "ansi" and self.agents:
            return self.observe(self.agent_selection)
        return None

    def __repr__(self) -> str:
        return f"<SandboxedGame {self.name} pid={self._worker.pid}>"


def _state(snapshot: Any) -> str:
    """The digest of a game's state as the worker reported it (keys in a fixed order)."""
    return digest(json.dumps(snapshot, sort_keys=True, ensure_ascii=False, default=str))


def step_all(
    envs: list[SandboxedEnv], actions: list[str], *, return_exceptions: bool = False
) -> list[Any]:
    """Step many sandboxed envs at once: all actions go out before any answer is read.

    The workers run in parallel, one per core. With ``return_exceptions`` a failing
    env puts its exception in its slot instead of raising, so one hanging or crashing
    environment ends only its own episode.
    """
    if len(envs) != len(actions):
        raise SpadeError(f"step_all got {len(envs)} envs but {len(actions)} actions.")
    results: list[Any] = []
    for env, action in zip(envs, actions):
        try:
            env.step_async(action)
            results.append(None)
        except SandboxError as exc:
            results.append(exc)
    for i, env in enumerate(envs):
        if results[i] is None:  # every pending answer is collected, even after a failure
            try:
                results[i] = env.step_wait()
            except SandboxError as exc:
                results[i] = exc
    if not return_exceptions:
        for result in results:
            if isinstance(result, BaseException):
                raise result
    return results


def open_env(
    source: str,
    *,
    filename: str = "<env>",
    knobs: dict[str, Any] | None = None,
    seat: int | None = None,
    opponent: str = "best",
    isolation: Isolation = "sandbox",
    config: SandboxConfig | None = None,
    pool: WorkerPool | None = None,
    render_mode: str | None = None,
    trust_code: bool = False,
) -> Any:
    """Open the environment defined by ``source`` (one module with one env class).

    Args:
        source: Python source of the environment module.
        filename: Shown in tracebacks.
        knobs: Difficulty knobs passed to the class.
        seat: For games, play this seat as a single-agent env (``GameSeatEnv``);
            None returns the whole game.
        opponent: For ``seat``: ``"best"`` or ``"random"``.
        isolation: ``"sandbox"`` (default) or ``"none"``: in this process. Only a
            packaged seed's exact source runs there by default; anything else also
            needs ``trust_code=True``.
        config: Limits and layers; defaults to the pool's (or ``SandboxConfig()``).
        pool: Worker pool; defaults to the process-wide pool when ``config`` is None.
        render_mode: ``"ansi"`` or None.
        trust_code: With ``isolation="none"``: run code that is not a packaged seed in
            this process, as this user. Say so only for code you wrote or reviewed.

    Returns:
        ``SandboxedEnv`` / ``SandboxedGame`` (or the plain instance with ``isolation="none"``).

    Raises:
        UntrustedCodeError: ``isolation="none"`` for code that is not a packaged seed,
            without ``trust_code=True``.
    """
    knobs = dict(knobs or {})
    if isolation == "none":
        require_trust(source, trust_code, filename)
        from ..core.game_env import GameSeatEnv
        from ..core.loader import load_env_class
        from ..core.text_game import TextGame

        env = load_env_class(source, filename=filename)(render_mode=render_mode, **knobs)
        if seat is not None and isinstance(env, TextGame):
            return GameSeatEnv(env, seat=seat, opponent=opponent)
        return env
    if isolation != "sandbox":
        raise SpadeError(f"isolation must be 'sandbox' or 'none', got {isolation!r}.")
    if pool is None:
        pool = default_pool() if config is None else WorkerPool(config, size=0)
    config = pool.config
    code = pool.compiled(source)
    worker = pool.acquire()
    try:
        meta = worker.call(
            "load",
            timeout=config.load_timeout,
            source=source,
            filename=filename,
            knobs=knobs,
            seat=seat,
            opponent=opponent,
            code=code,
        )
        meta = checked_metadata(meta)
    except SandboxError:
        worker.kill()
        raise
    if meta.get("kind") == "game":
        return SandboxedGame(worker, meta, config, render_mode=render_mode)
    return SandboxedEnv(worker, meta, config, render_mode=render_mode)


def require_trust(source: str, trust_code: bool, what: str) -> None:
    """Refuse in-process execution of ``source`` unless it is a seed or the caller trusts it.

    Raises:
        UntrustedCodeError: ``source`` is not a packaged seed and ``trust_code`` is False.
    """
    from ..seeds import is_seed_source

    if trust_code or is_seed_source(source):
        return
    raise UntrustedCodeError(
        f"{what} is not a packaged seed, so it does not run outside the sandbox by default: "
        "designer-written and imported code may be hostile. Use isolation='sandbox', or pass "
        "trust_code=True (CLI: --trust-code) if you wrote or reviewed this code yourself."
    )


def open_file(path: str | Path, **kwargs: Any) -> Any:
    """:func:`open_env` on the source in ``path``."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpadeError(f"Cannot read environment file {path}: {exc}") from exc
    return open_env(source, filename=str(path), **kwargs)


def open_seed(name: str, **kwargs: Any) -> Any:
    """:func:`open_env` on a seed environment's source (sandboxed like generated code)."""
    from ..seeds import seed_class, seed_source

    cls = seed_class(name)
    return open_env(seed_source(name), filename=f"{cls.__module__.rsplit('.', 1)[-1]}.py", **kwargs)
