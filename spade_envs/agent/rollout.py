"""The rollout engine: many plays of many environments at once, one model call per turn.

```python
from spade_envs.agent import RolloutConfig, rollout, save_jsonl
from spade_envs.llm import load_model

with load_model("smollm2") as model:
    episodes = rollout(model, ["spade/NumberGuess-v1"], plays=8, hint=True,
                       config=RolloutConfig(max_tokens=64, seed=0))
save_jsonl(episodes, "traj.jsonl")
```

Every turn, the engine asks the model ONCE for the next action of every live play
(each with its own sampling seed, derived from the run seed, the environment, the play
index and the turn, so a play's replies do not depend on what else is in the batch),
then steps all the environments (sandboxed ones in parallel, one worker each). An
environment that hangs (past ``step_timeout``), raises, answers a reward that is not a
finite number, or whose sandbox worker dies ends only its own play, with outcome
``"timeout"``, ``"env_error"`` or ``"sandbox_crashed"`` and ``penalty`` set; a failed
model request ends only its play, with outcome ``"model_error"``
(:mod:`spade_envs.agent.failures` counts them: ``engine.stats.failures``). A win is the
return reaching the top of the environment's reward range, never what ``info`` claims.
Finished plays make room for queued ones, up to ``max_concurrent`` at a time;
``max_concurrent=1`` is the one-at-a-time baseline and gives the same trajectories.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..core.wins import is_won
from ..error import EnvContractError, SpadeError
from ..llm.base import ChatModel, Completion
from .config import RolloutConfig, RolloutStats
from .deadline import deadline
from .episode import NOTED_INFO_KEYS, EnvTarget, Episode, PlaySpec, matched_specs, resolve_envs
from .failures import FailureCounts, failure_outcome, finite_reward, reward_range_top
from .policy import Policy, Turn, classify_action, reported_parse, system_prompt, with_hint

__all__ = ["RolloutConfig", "RolloutEngine", "RolloutStats", "matched_specs", "rollout"]

Progress = Callable[[Episode], None]
_log = logging.getLogger(__name__)


_MAX_TURNS = 200
#: How far ahead in the queue a play that can take over a waiting worker is looked for
#: (the scan runs at every opening).
_LOOKAHEAD = 4096


def turn_seed(run_seed: int | None, env_id: str, play_index: int, turn: int) -> int | None:
    # A stable hash (not Python's salted hash()) so runs reproduce across processes;
    # 31 bits suit every backend (OpenAI servers, vLLM, torch generators).
    if run_seed is None:
        return None
    digest = hashlib.sha256(f"{run_seed}|{env_id}|{play_index}|{turn}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class _Play:
    """A live play: its environment handle, chats and running totals."""

    def __init__(self, spec: PlaySpec, target: EnvTarget, episode: Episode) -> None:
        self.spec = spec
        self.target = target
        self.episode = episode
        self.env: Any = None
        self.selfplay = False
        self.seat = ""  # the seat to act next
        self.tool_names: list[str] = []
        #: How the agent is told to act: the target's kind, or "tool" for a text env
        #: that lists tools at reset (a SPADE tool game).
        self.kind = target.kind
        self.reward_top = 1.0
        #: The environment's win rule (:mod:`spade_envs.core.wins`), the last reward and
        #: whether the last step terminated, for scoring a win.
        self.win_rule = "return"
        self.last_reward: float | None = None
        self.terminated = False
        self.done = False
        self.last_info: dict[str, Any] = {}
        # What a replay audit needs once the play is over: its record and a way to open
        # the same version (code, knobs, seat) in a fresh worker.
        self.trace: Any = None
        self.reopen: Any = None
        #: Episodes the environment's worker has played, this one included.
        self.worker_episodes = 1

    def messages(self) -> list[dict[str, str]]:
        return self.episode.messages[self.seat]

    def end(self, outcome: str, error: str = "", penalty: float = 0.0) -> None:
        self.done = True
        self.episode.outcome = outcome
        self.episode.error = error
        self.episode.penalty = penalty


class RolloutEngine:
    """Plays :class:`PlaySpec` lists with one model.

    Args:
        model: The chat model.
        config: How to play.
        registry: Where environment IDs are looked up (default: the shared registry).
        pool: A sandbox :class:`~spade_envs.sandbox.WorkerPool` to reuse; by default the
            engine starts one per run (warm workers for the first ``max_concurrent``
            plays) with ``config``'s timeouts.

    Attributes:
        stats: Timings of the last :meth:`run`.
    """

    def __init__(
        self,
        model: ChatModel,
        config: RolloutConfig | None = None,
        *,
        registry: Any = None,
        pool: Any = None,
    ) -> None:
        self.model = model
        self.config = config or RolloutConfig()
        self.registry = registry
        self.pool = pool
        self.policy = Policy(
            model,
            temperature=self.config.temperature,
            top_p=self.config.top_p,
            max_tokens=self.config.max_tokens,
        )
        self.stats = RolloutStats()

    # ------------------------------------------------------------------ the run
    def run(
        self,
        specs: Sequence[PlaySpec],
        targets: Sequence[EnvTarget] | None = None,
        *,
        progress: Progress | None = None,
    ) -> list[Episode]:
        """Play every spec; returns the episodes in the order of ``specs``.

        Args:
            specs: The plays.
            targets: The environments (default: looked up in the registry by the specs'
                IDs).
            progress: Called with each episode as it finishes.

        Raises:
            SpadeError: An environment ID is unknown, or ``hint_source="written"`` and an
                environment has no written hint (checked before anything is played).
            UntrustedCodeError: ``isolation="none"`` without ``trust_code`` and an
                environment that is not a packaged seed (checked before anything is played).
        """
        started = time.perf_counter()
        self.stats = RolloutStats()
        ids = list(dict.fromkeys(s.env_id for s in specs))
        by_id = {t.env_id: t for t in (targets if targets is not None else [])}
        missing = [i for i in ids if i not in by_id]
        if missing:
            # A bare name resolves to a full ID; the spec's own spelling must find it too.
            for wanted, target in zip(missing, resolve_envs(missing, self.registry)):
                by_id[wanted] = by_id[target.env_id] = target
        if self.config.hint_source == "written":
            bare = sorted({s.env_id for s in specs if s.hint and not by_id[s.env_id].written_hint})
            if bare:
                raise SpadeError(
                    f"No model-written hint stored for {', '.join(bare)}. Write hints with "
                    "`spade-envs generate --hints` (or Registry.set_hint), or use "
                    "hint_source='env'."
                )
        if self.config.isolation == "none":
            from ..sandbox.env import require_trust

            for env_id in ids:
                require_trust(by_id[env_id].source, self.config.trust_code, env_id)
        pool, own_pool = self._pool(len(specs))
        results: list[Episode | None] = [None] * len(specs)
        audited: dict[int, Any] = {}  # id(episode) -> runtime.audit.Recorded
        self._audited = audited
        # Finished plays' environments waiting for the next play of the same version and
        # hint flag: (env_id, hint) -> [(env, episodes played, reward top, win rule)].
        self._idle: dict[tuple[str, bool], list[tuple[Any, int, float, str]]] = {}
        queue = list(enumerate(specs))
        live: list[tuple[int, _Play]] = []
        try:
            while queue or live:
                while queue and len(live) < self.config.max_concurrent:
                    index, spec = self._next_play(queue, live, by_id)
                    play = self._open(spec, by_id[spec.env_id], pool)
                    if play.done:
                        results[index] = self._finish(play, progress)
                    else:
                        live.append((index, play))
                if not live:
                    continue
                self._turn([p for _, p in live])
                still = []
                for index, play in live:
                    if play.done:
                        results[index] = self._finish(play, progress)
                    else:
                        still.append((index, play))
                live = still
            episodes = [r for r in results if r is not None]
            if self.config.audit_share is not None and audited:
                episodes = self._audit(episodes, audited)  # while the pool still serves
        finally:
            for _, play in live:
                self._close(play)
            for waiting in self._idle.values():
                for env, *_ in waiting:
                    _close_quietly(env)
            self._idle.clear()
            if own_pool and pool is not None:
                pool.close()
            self.stats.wall_seconds = time.perf_counter() - started
        self.stats.failures = FailureCounts.of(episodes)
        return episodes

    @property
    def _hands_on(self) -> bool:
        """Whether finished plays may hand their workers on at all: a sandbox, more than one
        episode per worker, and replay audits (in fresh workers) to catch carried state."""
        cfg = self.config
        return (
            cfg.episodes_per_worker > 1 and cfg.isolation != "none" and cfg.audit_share is not None
        )

    def _next_play(
        self,
        queue: list[tuple[int, PlaySpec]],
        live: list[tuple[int, _Play]],
        by_id: dict[str, EnvTarget],
    ) -> tuple[int, PlaySpec]:
        """Take the next play to open from ``queue`` (in the specs' order).

        While workers can be handed on, the first play whose version and hint flag have a
        worker waiting goes first, then the first whose version and flag have no play
        running: plays of one version listed together (an evaluation's episodes) would
        otherwise all be live at once, each in a fresh worker, with none left to hand on.
        Results keep the specs' order whatever the order of opening.
        """
        if not self._hands_on:
            return queue.pop(0)
        running = {(p.target.env_id, p.spec.hint) for _, p in live}
        alone = None
        for position, (_, spec) in enumerate(itertools.islice(queue, _LOOKAHEAD)):
            key = (by_id[spec.env_id].env_id, spec.hint)
            if self._idle.get(key):
                return queue.pop(position)
            if alone is None and key not in running:
                alone = position
        return queue.pop(alone or 0)

    # ------------------------------------------------------------------ audits
    def _audit(self, episodes: list[Episode], audited: dict[int, Any]) -> list[Episode]:
        """Replay audits of the run's plays (:func:`spade_envs.runtime.audit.audit_plays`)."""
        from ..runtime.audit import AuditPlan, audit_plays

        # The run seed picks the share of plays replayed and the wrong answers: a run
        # reproduces, and environment code never sees the seed.
        seed = turn_seed(self.config.seed, "audit", len(episodes), 0)
        plan = AuditPlan(share=self.config.audit_share or 0.0, seed=seed)
        episodes, report = audit_plays(episodes, audited, plan, self._quarantine)
        self.stats.audits += report.audits
        self.stats.audit_failures += report.failures
        self.stats.audit_seconds += report.seconds
        return episodes

    def _quarantine(self, env_id: str, evidence: Any) -> None:
        """Store the evidence; the plays are voided whether or not that worked (a target
        that is not a registry version, a registry that refuses the write)."""
        from ..registry.shared import shared_registry

        self.stats.quarantined.append(env_id)
        registry = self.registry if self.registry is not None else shared_registry()
        try:
            registry.quarantine(env_id, evidence)
        except SpadeError as exc:
            _log.warning(
                "could not quarantine %s: %s (its plays are voided all the same)", env_id, exc
            )

    def _pool(self, plays: int) -> tuple[Any, bool]:
        if self.config.isolation == "none":
            return None, False
        if self.pool is not None:
            return self.pool, False
        from ..sandbox import SandboxConfig, WorkerPool

        base = self.config.sandbox or SandboxConfig()
        config = dataclasses.replace(
            base, call_timeout=self.config.step_timeout, load_timeout=self.config.load_timeout
        )
        return WorkerPool(config, size=min(plays, self.config.max_concurrent)), True

    # ------------------------------------------------------------ opening plays
    def _open(self, spec: PlaySpec, target: EnvTarget, pool: Any) -> _Play:
        cfg = self.config
        game = target.kind == "game"
        episode = Episode(
            env_id=target.env_id,
            play_index=spec.play_index,
            env_seed=spec.env_seed,
            hint=spec.hint,
            hint_source=cfg.hint_source if spec.hint else "",
            hint_text="",
            kind=target.kind,
            opponent=cfg.opponent if game else "",
            model=getattr(self.model, "name", type(self.model).__name__),
        )
        play = _Play(spec, target, episode)
        play.selfplay = game and cfg.opponent == "self"
        started = time.perf_counter()
        try:
            with self._in_process_deadline(f"opening {target.env_id}", cfg.load_timeout):
                self._open_env(play, target, pool)
        except Exception as exc:  # the env's failure ends only this play
            self._env_failed(play, exc)
        self.stats.env_seconds += time.perf_counter() - started
        return play

    def _in_process_deadline(self, what: str, extra: float = 0.0) -> Any:
        """A deadline for trusted in-process code; sandboxed calls have their own (an alarm
        there could interrupt the parent mid-message)."""
        if self.config.isolation != "none":
            return contextlib.nullcontext()
        return deadline(self.config.step_timeout + extra, what)

    def _open_env(self, play: _Play, target: EnvTarget, pool: Any) -> None:
        from ..runtime import open_source

        cfg = self.config
        game = target.kind == "game"
        waiting = self._idle.get((target.env_id, play.spec.hint))
        if waiting:
            play.env, done, play.reward_top, play.win_rule = waiting.pop()
            play.worker_episodes = done + 1
            self.stats.reused_workers += 1
            self._start_single(play)
            return
        play.env = open_source(
            target.source,
            env_id=target.env_id,
            knobs=dict(target.knobs) or None,
            seat=0 if game and not play.selfplay else None,
            opponent=cfg.opponent if game and not play.selfplay else "best",
            isolation=cfg.isolation,
            pool=pool,
            trust_code=cfg.trust_code,
        )
        play.reward_top = reward_range_top(play.env)
        play.win_rule = str(getattr(play.env, "win_rule", "return"))
        if play.selfplay:
            self._start_selfplay(play)
        else:
            self._start_single(play)

    def _hint(self, play: _Play, seat: str | None) -> str:
        if self.config.hint_source == "written":
            return play.target.written_hint
        return str(play.env.hint(seat) if seat is not None else play.env.hint())

    def _first_message(self, play: _Play, seat: str, observation: str) -> None:
        tools = play.last_info.get("tools")
        if play.target.kind == "text" and isinstance(tools, list) and tools:
            # A SPADE-dialect tool game (ToolUseBaseEnv) lists its tools at reset; it takes
            # the same <tool_call>/<answer> actions as our ToolEnv.
            play.kind = "tool"
        if play.kind == "tool":
            if not isinstance(tools, list):
                tools = list(getattr(play.env, "function_schemas", list)())
            play.tool_names = [
                str(t.get("function", {}).get("name", "")) for t in tools if isinstance(t, dict)
            ]
        else:
            tools = None
        system = system_prompt(
            play.kind,
            description=play.target.description,
            tools=tools or (),
            seat=seat or "player_0",
        )
        if play.spec.hint:
            hint = self._hint(play, seat if play.selfplay else None)
            play.episode.hint_text = hint
            observation = with_hint(observation, hint)
        play.episode.messages[seat] = [
            {"role": "system", "content": system},
            {"role": "user", "content": str(observation)},
        ]

    def _start_single(self, play: _Play) -> None:
        observation, info = play.env.reset(seed=play.spec.env_seed)
        play.last_info = dict(info)
        _note(play.episode, play.last_info)
        play.episode.seat_returns[""] = 0.0
        self._first_message(play, "", str(observation))

    def _start_selfplay(self, play: _Play) -> None:
        game = play.env
        game.reset(seed=play.spec.env_seed)
        for agent in game.possible_agents:
            play.episode.seat_returns[agent] = 0.0
        play.seat = game.agent_selection
        self._first_message(play, play.seat, str(game.observe(play.seat)))

    def _env_failed(self, play: _Play, exc: BaseException) -> None:
        play.end(failure_outcome(exc), f"{type(exc).__name__}: {exc}", self.config.error_penalty)

    # -------------------------------------------------------------- one turn
    def _turn(self, plays: list[_Play]) -> None:
        cfg = self.config
        seeds = [
            turn_seed(cfg.seed, p.target.env_id, p.spec.play_index, len(p.episode.turns))
            for p in plays
        ]
        started = time.perf_counter()
        replies = self.policy.act([p.messages() for p in plays], seeds)
        self.stats.model_seconds += time.perf_counter() - started
        self.stats.model_calls += 1
        stepping: list[tuple[_Play, Turn]] = []
        for play, reply, seed in zip(plays, replies, seeds):
            turn = self._record(play, reply, seed)
            if reply.ok:
                stepping.append((play, turn))
            else:
                play.end("model_error", turn.error)
        started = time.perf_counter()
        self._step(stepping)
        self.stats.env_seconds += time.perf_counter() - started

    def _record(self, play: _Play, reply: Completion, seed: int | None) -> Turn:
        turn = Turn(
            index=len(play.episode.turns),
            seat=play.seat,
            action="",
            outcome="model_error",
            finish_reason=reply.finish_reason,
            sampling_seed=seed,
            prompt_token_ids=list(reply.prompt_token_ids),
            token_ids=list(reply.token_ids),
            logprobs=list(reply.logprobs),
            error=reply.error,
        )
        play.episode.turns.append(turn)
        self.stats.turns += 1
        self.stats.generated_tokens += len(reply.token_ids)
        if not reply.ok:
            return turn
        action = reply.text
        limit = self.config.max_action_chars
        turn.outcome = classify_action(action, play.kind, play.tool_names)
        if len(action) > limit:
            action, turn.outcome = action[:limit], "too_long"
        elif reply.finish_reason == "length" and turn.outcome == "ok":
            turn.outcome = "length"
        turn.action = action
        play.messages().append({"role": "assistant", "content": action})
        return turn

    def _step(self, stepping: list[tuple[_Play, Turn]]) -> None:
        from ..sandbox import SandboxedEnv, step_all

        batch = [(p, t) for p, t in stepping if isinstance(p.env, SandboxedEnv)]
        if batch:
            # All actions go out before any answer is read: the workers run in parallel.
            envs, actions = [p.env for p, _ in batch], [t.action for _, t in batch]
            results = step_all(envs, actions, return_exceptions=True)
            for (play, turn), result in zip(batch, results):
                self._apply(play, turn, result)
        for play, turn in stepping:
            if isinstance(play.env, SandboxedEnv):
                continue
            try:
                with self._in_process_deadline(f"step of {play.target.env_id}"):
                    result = (
                        self._step_selfplay(play, turn)
                        if play.selfplay
                        else play.env.step(turn.action)
                    )
            except Exception as exc:  # in-process env code, or a sandboxed game call
                result = exc
            self._apply(play, turn, result)

    def _apply(self, play: _Play, turn: Turn, result: Any) -> None:
        if isinstance(result, Exception):
            self._env_failed(play, result)
            turn.outcome, turn.error = play.episode.outcome, play.episode.error
            return
        if play.selfplay:
            self._after_selfplay(play)
            return
        try:  # whatever the env answered, only this play can end over it
            observation, reward, terminated, truncated, info = result
            _note(play.episode, info)
            reward = finite_reward(reward, play.target.env_id)
            total = finite_reward(play.episode.seat_returns[""] + reward, play.target.env_id)
            observation = str(observation)
        except Exception as exc:
            if not isinstance(exc, SpadeError):
                exc = EnvContractError(
                    f"step of {play.target.env_id} did not return (observation, reward, "
                    f"terminated, truncated, info): {type(exc).__name__}: {exc}"
                )
            self._apply(play, turn, exc)
            return
        turn.observation, turn.reward = observation, reward
        turn.parsed = reported_parse(info)
        play.episode.seat_returns[""] = total
        play.episode.episode_return = total
        play.last_reward, play.terminated = reward, bool(terminated)
        if terminated or truncated:
            # A win is scored, never claimed: info["success"] is not read.
            play.episode.won = self._won(play)
            play.end("terminated" if terminated else "truncated")
        elif self._out_of_turns(play):
            play.episode.won = self._won(play)
            play.end("max_turns")
        else:
            play.messages().append({"role": "user", "content": str(observation)})

    def _won(self, play: _Play) -> bool:
        if play.selfplay:  # a game's seat: its return against the range
            rule, last = "return", None
        else:
            rule, last = play.win_rule, play.last_reward
        return is_won(
            rule,
            total=play.episode.episode_return,
            top=play.reward_top,
            last_reward=last,
            terminated=play.terminated,
        )

    def _out_of_turns(self, play: _Play) -> bool:
        cap = min(self.config.max_turns or _MAX_TURNS, _MAX_TURNS)
        return len(play.episode.turns) >= cap

    # ---------------------------------------------------------------- self-play
    def _step_selfplay(self, play: _Play, turn: Turn) -> None:
        game = play.env
        game.step(turn.action)
        env_id, returns = play.target.env_id, play.episode.seat_returns
        rewards = {a: finite_reward(r, env_id) for a, r in dict(game.rewards).items()}
        for agent, reward in rewards.items():
            if agent in returns:
                returns[agent] = finite_reward(returns[agent] + reward, env_id)
        turn.reward = rewards.get(turn.seat, 0.0)
        # A TextGame reports in the mover's info whether it took the move.
        infos = getattr(game, "infos", None)
        turn.parsed = reported_parse(infos.get(turn.seat) if isinstance(infos, dict) else None)
        return None

    def _after_selfplay(self, play: _Play) -> None:
        game = play.env
        first = game.possible_agents[0]
        play.episode.episode_return = play.episode.seat_returns.get(first, 0.0)
        over = not game.agents or all(
            game.terminations[a] or game.truncations[a] for a in game.agents
        )
        if over or self._out_of_turns(play):
            play.episode.won = self._won(play)
            truncated = not over or not any(game.terminations.values())
            play.end("max_turns" if not over else ("truncated" if truncated else "terminated"))
            return
        play.seat = game.agent_selection
        observation = str(game.observe(play.seat))
        if play.seat not in play.episode.messages:
            self._first_message(play, play.seat, observation)
        else:
            play.messages().append({"role": "user", "content": observation})

    # --------------------------------------------------------------- finishing
    def _close(self, play: _Play) -> None:
        if play.env is not None:
            _close_quietly(play.env)
            play.env = None

    def _keep(self, play: _Play) -> bool:
        """Hand the play's worker to the next play of its version (see
        ``RolloutConfig.episodes_per_worker``): only after a normal end, never for games
        or in-process plays, never across the hint flag, and only while replay audits
        run (they replay in fresh workers)."""
        env = play.env
        if (
            env is None
            or not self._hands_on
            or play.episode.failed
            or play.target.kind == "game"
            or play.worker_episodes >= self.config.episodes_per_worker
            or getattr(env, "broken", True)
        ):
            return False
        key = (play.target.env_id, play.spec.hint)
        self._idle.setdefault(key, []).append(
            (env, play.worker_episodes, play.reward_top, play.win_rule)
        )
        play.env = None
        return True

    def _finish(self, play: _Play, progress: Progress | None) -> Episode:
        started = time.perf_counter()
        env = play.env
        trace, reopen = getattr(env, "trace", None), getattr(env, "twin_opener", None)
        if trace is not None and reopen is not None and not play.episode.failed:
            from ..runtime.audit import Recorded

            seat = str(env.possible_agents[0]) if play.selfplay and env.possible_agents else ""
            self._audited[id(play.episode)] = Recorded(
                trace,
                reopen,
                play.reward_top,
                seat=seat,
                win_rule=play.win_rule,
                reused=play.worker_episodes > 1,
            )
        if not self._keep(play):
            self._close(play)
        self.stats.env_seconds += time.perf_counter() - started
        self.stats.episodes += 1
        if progress is not None:
            progress(play.episode)
        return play.episode


def _close_quietly(env: Any) -> None:
    try:
        env.close()
    except Exception:  # a broken env may fail to close; the worker is killed anyway
        pass


def rollout(
    model: ChatModel,
    env_ids: Sequence[str],
    *,
    plays: int = 1,
    hint: bool | None = False,
    config: RolloutConfig | None = None,
    registry: Any = None,
    progress: Progress | None = None,
) -> list[Episode]:
    """Play ``plays`` episodes of each environment with ``model``.

    Args:
        model: The chat model.
        env_ids: Gym IDs or bare names of registered (or seed) environments.
        plays: Episodes per environment (and per hint mode).
        hint: ``False``: no hint; ``True``: every play hinted; ``None``: both, matched.
        config: How to play (default ``RolloutConfig()``).
        registry: Where IDs are looked up (default: the shared registry).
        progress: Called with each finished episode.

    Returns:
        The episodes, in the order environment, hint mode, play index.
    """
    config = config or RolloutConfig()
    targets = resolve_envs(env_ids, registry)
    specs = matched_specs(targets, plays, hint=hint, env_seed=config.env_seed)
    engine = RolloutEngine(model, config, registry=registry)
    return engine.run(specs, targets, progress=progress)


def _note(episode: Episode, info: Any) -> None:
    """Record which of :data:`NOTED_INFO_KEYS` an ``info`` dict carries (shown, not scored)."""
    if isinstance(info, dict):
        episode.noted.extend(k for k in NOTED_INFO_KEYS if info.get(k))
