"""Many copies of one sandboxed environment as a Gymnasium ``VectorEnv``.

Copies of the same module share a worker (by default one worker per core), so a
batched step costs one round trip per worker instead of one per environment; the
workers run in parallel. Copies in one worker can only disturb each other, and
they run the same code: a timeout or crash ends every copy in that worker, and
the vector env reports it as one typed error.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..core.spaces import DEFAULT_ACTION_LENGTH, UnicodeText
from ..error import EnvCodeError, SandboxError, SpadeError
from .config import SandboxConfig
from .env import checked_metadata, finite_number
from .pool import WorkerPool, default_pool
from .process import Worker
from .trace import ResetSeeds

__all__ = ["SandboxVectorEnv"]


def _split(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


class SandboxVectorEnv(VectorEnv):
    """``num_envs`` copies of the environment in ``source``, sandboxed, stepped as a batch.

    Args:
        source: Python source of the environment module.
        num_envs: Number of copies.
        workers: Worker processes to spread them over (default: one per core).
        filename: Shown in tracebacks.
        knobs: Difficulty knobs for every copy.
        config: Limits and layers (default: the pool's).
        pool: Worker pool (default: the process-wide one).

    Autoreset follows Gymnasium's default (next step): after a copy's episode ends,
    its next ``step`` resets it and returns the first observation with reward 0.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        source: str,
        num_envs: int,
        *,
        workers: int | None = None,
        filename: str = "<env>",
        knobs: dict[str, Any] | None = None,
        config: SandboxConfig | None = None,
        pool: WorkerPool | None = None,
    ):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise SpadeError(f"num_envs must be a positive int, got {num_envs!r}.")
        if pool is None:
            pool = default_pool() if config is None else WorkerPool(config, size=0)
        self.config = pool.config
        self.num_envs = num_envs
        count = max(1, min(num_envs, workers or os.cpu_count() or 1))
        self._slices: list[tuple[Worker, int]] = []
        code = pool.compiled(source)
        try:
            for copies in _split(num_envs, count):
                worker = pool.acquire()
                self._slices.append((worker, copies))
                meta = worker.call(
                    "load",
                    timeout=self.config.load_timeout,
                    source=source,
                    filename=filename,
                    knobs=dict(knobs or {}),
                    seat=None,
                    opponent="best",
                    copies=copies,
                    code=code,
                )
        except BaseException:
            self.close_extras()
            raise
        try:
            meta = checked_metadata(meta)
        except SandboxError:
            self.close_extras()
            raise
        if meta.get("kind") == "game":
            self.close_extras()
            raise SpadeError(
                "SandboxVectorEnv runs text and tool environments; for a game, wrap one seat "
                "(open_env(..., seat=0)) instead."
            )
        self.env_metadata = meta
        self.reward_range = meta["reward_range"]
        self._reset_seeds = [ResetSeeds() for _ in range(num_envs)]
        self._ended = [False] * num_envs
        self.single_observation_space = UnicodeText(self.config.max_observation_chars)
        self.single_action_space = UnicodeText(DEFAULT_ACTION_LENGTH)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    def _gather(self, op: str, per_worker: list[dict[str, Any]]) -> list[list[Any]]:
        """Send ``op`` to every worker, then collect every answer (in parallel)."""
        for (worker, _), args in zip(self._slices, per_worker):
            worker.send(op, **args)
        rows: list[list[Any]] = []
        failure: BaseException | None = None
        for worker, copies in self._slices:
            try:
                answer = worker.receive()
            except SandboxError as exc:
                failure = failure or exc
                continue
            if not isinstance(answer, list) or len(answer) != copies:
                failure = failure or EnvCodeError(f"{op}() returned a malformed batch")
                continue
            rows.extend(answer)
        if failure is not None:
            raise failure
        return rows

    def _chunks(self, values: list[Any]) -> list[list[Any]]:
        chunks, start = [], 0
        for _, copies in self._slices:
            chunks.append(values[start : start + copies])
            start += copies
        return chunks

    def _check_text(self, value: Any, op: str) -> str:
        if not isinstance(value, str) or len(value) > self.config.max_observation_chars:
            raise EnvCodeError(f"{op}() returned an observation that is not text within limits")
        return value

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        if seed is None:
            asked: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int) and not isinstance(seed, bool):
            asked = [seed + i for i in range(self.num_envs)]
        else:
            asked = list(seed)
            if len(asked) != self.num_envs:
                raise SpadeError(f"reset got {len(asked)} seeds for {self.num_envs} envs.")
        # Every copy's reset carries a seed; seedless ones are drawn here (sandbox.trace).
        seeds = [source.next(s) for source, s in zip(self._reset_seeds, asked)]
        self._ended = [False] * self.num_envs
        rows = self._gather(
            "vector_reset", [{"seeds": c, "options": options} for c in self._chunks(seeds)]
        )
        infos: dict[str, Any] = {}
        observations = []
        for i, row in enumerate(rows):
            if _failed(row):
                raise EnvCodeError(f"reset() of copy {i} raised {_failure(row)}")
            if not (isinstance(row, list) and len(row) == 2 and isinstance(row[1], dict)):
                raise EnvCodeError("reset() returned something other than (obs, info)")
            observations.append(self._check_text(row[0], "reset"))
            infos = self._add_info(infos, row[1], i)
        return tuple(observations), infos

    def step(self, actions: Any):
        """Step every copy. A copy whose code raised or answered values of the wrong kind
        ends its episode alone (truncated, reward 0, ``info["sandbox_error"]`` says why)
        and starts a new one on its next step; a worker that died or hung still fails
        the whole call, since every copy it hosted is gone."""
        actions = [a if isinstance(a, str) else str(a) for a in actions]
        if len(actions) != self.num_envs:
            raise SpadeError(f"step got {len(actions)} actions for {self.num_envs} envs.")
        # A copy whose episode ended is reset by this step (autoreset): its seed is drawn
        # here, so the environment never resets without one.
        seeds = [
            source.next(None) if ended else None
            for source, ended in zip(self._reset_seeds, self._ended)
        ]
        rows = self._gather(
            "vector_step",
            [
                {"actions": a, "seeds": s}
                for a, s in zip(self._chunks(actions), self._chunks(seeds))
            ],
        )
        observations, infos = [], {}
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        for i, row in enumerate(rows):
            try:
                observation, reward, terminated, truncated, info = self._step_row(row)
            except EnvCodeError as exc:
                observation, reward, terminated, truncated = "", 0.0, False, True
                info = {"sandbox_error": str(exc)}
            observations.append(observation)
            rewards[i], terminations[i], truncations[i] = reward, terminated, truncated
            self._ended[i] = bool(terminated or truncated)
            infos = self._add_info(infos, info, i)
        return tuple(observations), rewards, terminations, truncations, infos

    def _step_row(self, row: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if _failed(row):
            raise EnvCodeError(f"step() raised {_failure(row)}")
        if not (isinstance(row, list) and len(row) == 5):
            raise EnvCodeError("step() returned something other than a 5-tuple")
        observation, reward, terminated, truncated, info = row
        if not (isinstance(terminated, bool) and isinstance(truncated, bool)):
            raise EnvCodeError("step() returned terminated/truncated flags that are not booleans")
        if not isinstance(info, dict):
            raise EnvCodeError("step() returned info that is not a dict")
        reward = finite_number(reward, "step", "reward")
        low, high = self.reward_range
        if not low - 1e-9 <= reward <= high + 1e-9:
            raise EnvCodeError(f"step() returned reward {reward:g}, outside ({low:g}, {high:g})")
        return self._check_text(observation, "step"), reward, terminated, truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        for worker, _ in getattr(self, "_slices", []):
            worker.close()


def _failed(row: Any) -> bool:
    return isinstance(row, dict) and isinstance(row.get("error"), dict)


def _failure(row: dict[str, Any]) -> str:
    error = row["error"]
    return f"{str(error.get('type', 'Error'))[:100]}: {str(error.get('message', ''))[:400]}"
