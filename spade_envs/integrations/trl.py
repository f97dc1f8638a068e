"""Registry environments in TRL's ``GRPOTrainer`` (trl 1.16, ``environment_factory``).

TRL plays multi-turn environments as tools: it calls ``reset(**row)`` with each dataset
row, appends what it returns to the row's prompt, lets the model call the environment's
public methods as tools, and scores the play with ``get_reward()``. Here:

- :class:`RegistryEnvironment` is that object for any registry version: ``reset`` opens
  the pinned version through the door (:mod:`spade_envs.runtime.door`: sandboxed, trust
  decided there) and resets it with the row's seed; the one tool, ``act(action)``, is a
  ``step``; ``get_reward`` is the episode's return, or None for a play that failed (TRL
  then gives the play no advantage), counted by kind in :class:`PlayCounts`.
- :func:`registry_dataset` builds the rows: one per (environment, seed), with the
  pinned ``env_id`` and its source ``sha256``, repeated by TRL ``num_generations`` times
  per group, so every play of a GRPO group starts from the same state.
- :func:`environment_factory` ties them together (with our hint as an option);
  :func:`play_counts_callback` puts the counts in TRL's logs.
- :func:`tool_calling_tokenizer` gives a ChatML model without a tool-calling template
  (SmolLM2) one TRL can parse.

``examples/trl_grpo.py`` trains SmolLM2 on two registry environments on the CPU.
"""

from __future__ import annotations

import random
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agent.failures import failure_outcome, finite_reward
from ..agent.policy import with_hint
from ..core.wins import is_won
from ..error import SpadeError
from ..registry.pins import Pin, pin, require_validated

__all__ = [
    "PlayCounts",
    "RegistryEnvironment",
    "check_trl",
    "environment_factory",
    "play_counts_callback",
    "registry_dataset",
    "tool_calling_tokenizer",
]

#: What the model is told about the tool (TRL shows it the ``act`` docstring too).
INSTRUCTIONS = (
    "Play this environment by calling the tool `act` once per move, with your move or "
    "answer as its `action` (for example \\boxed{{42}}). The episode ends when the tool "
    "says so.\n\nTask: {description}\n\n{observation}"
)


@dataclass
class PlayCounts:
    """The plays of one factory: finished, won, and failed by kind (shared by every
    environment the factory made; safe across threads).

    Attributes:
        plays: Plays scored (``get_reward`` called).
        wins: Plays that reached the environment's win.
        failed: Failed plays by :data:`~spade_envs.agent.failures.FAILURE_OUTCOMES` kind.
        by_env: Plays by pinned ID (``spade/<Name>-v<N>``).
    """

    plays: int = 0
    wins: int = 0
    failed: Counter = field(default_factory=Counter)
    by_env: Counter = field(default_factory=Counter)
    #: Wall seconds spent in environment calls (resets, steps, hints, worker starts).
    env_seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, env_id: str, won: bool, failure: str | None) -> None:
        with self._lock:
            self.plays += 1
            self.wins += int(won)
            self.by_env[env_id] += 1
            if failure is not None:
                self.failed[failure] += 1

    def add_seconds(self, seconds: float) -> None:
        with self._lock:
            self.env_seconds += seconds

    def metrics(self) -> dict[str, float]:
        """Flat numbers for a trainer's log: ``spade/plays``, ``spade/wins``,
        ``spade/failed``, ``spade/failed_<kind>`` and ``spade/env_seconds``."""
        with self._lock:
            out = {
                "spade/plays": float(self.plays),
                "spade/wins": float(self.wins),
                "spade/failed": float(sum(self.failed.values())),
                "spade/env_seconds": round(self.env_seconds, 3),
            }
            out.update({f"spade/failed_{k}": float(v) for k, v in sorted(self.failed.items())})
            return out


class RegistryEnvironment:
    """One registry version as TRL's environment (made by :func:`environment_factory`).

    Args:
        pins: The versions it may play, by pinned ID.
        hint: Append the environment's hint to the first observation (from a twin in a
            fresh worker, so it cannot change the episode).
        counts: Where finished and failed plays are counted.
        registry: Where the versions are stored.
    """

    def __init__(
        self,
        pins: dict[str, Pin],
        *,
        hint: bool,
        counts: PlayCounts,
        registry: Any,
        allow_unvalidated: bool = False,
    ) -> None:
        self._allow_unvalidated = allow_unvalidated
        self._rng = random.Random()  # the audits' wrong answers: unpredictable on purpose
        self._pins = pins
        self._hint = hint
        self._counts = counts
        self._registry = registry
        self._env: Any = None
        self.env_id = ""
        self.seed: int | None = None
        self.episode_return = 0.0
        self.done = False
        self.won = False
        self.failure: str | None = None
        #: The rewards of the episode's steps, in order.
        self.rewards: list[float] = []
        self._last_reward: float | None = None

    def reset(self, env_id: str | None = None, seed: int | None = None, **row: Any) -> str:
        """Start an episode of ``env_id`` (the row's pinned ID) from ``seed``.

        TRL passes the whole dataset row; ``sha256``, when the row has it, must be the
        pinned version's (a row from another registry is refused, never played).
        """
        self._close()
        _check_row(env_id, seed, row.get("sha256"))
        chosen = env_id or next(iter(self._pins))
        if chosen not in self._pins:
            raise SpadeError(
                f"{chosen!r} is not one of this factory's environments "
                f"({', '.join(self._pins)}); build the dataset from the same list."
            )
        pinned = self._pins[chosen]
        expected = row.get("sha256")
        if expected and expected != pinned.sha256:
            raise SpadeError(
                f"The row's sha256 {expected[:12]} is not {chosen}'s ({pinned.sha256[:12]}): "
                "the dataset was built against another registry."
            )
        self.env_id, self.seed = pinned.env_id, seed
        self.episode_return, self.done, self.won, self.failure = 0.0, False, False, None
        self.rewards = []
        from ..runtime import open_record

        record = self._registry.get(pinned.env_id)
        require_validated(record, allow_unvalidated=self._allow_unvalidated, again=True)
        started = time.perf_counter()
        try:
            self._env = open_record(record)
            observation, _info = self._env.reset(seed=seed)
            text = str(observation)
            if self._hint:
                hint = str(self._env.hint() or record.hint or "")
                text = with_hint(text, hint) if hint else text
        except SpadeError as exc:
            self._fail(exc)
            return f"The environment could not start ({self.failure}); there is nothing to play."
        finally:
            self._counts.add_seconds(time.perf_counter() - started)
        return INSTRUCTIONS.format(description=record.description, observation=text)

    def act(self, action: str) -> str:
        """Send one move or answer to the environment and read what it shows next.

        Args:
            action: The move or answer, in the form the task asks for (for example
                \\boxed{42}).

        Returns:
            What the environment shows after the move.
        """
        if self.done:
            raise ValueError("The episode is over; no more moves.")
        started = time.perf_counter()
        try:
            observation, reward, terminated, truncated, _ = self._env.step(str(action))
            self.rewards.append(finite_reward(reward, self.env_id))
            self.episode_return += self.rewards[-1]
        except SpadeError as exc:
            self._fail(exc)
            raise ValueError(f"The environment failed ({self.failure}).") from None
        finally:
            self._counts.add_seconds(time.perf_counter() - started)
        self._last_reward = self.rewards[-1]
        if terminated or truncated:
            self.done = True
            self.won = is_won(
                str(getattr(self._env, "win_rule", "return")),
                total=self.episode_return,
                top=float(self._env.reward_range[1]),
                last_reward=self._last_reward,
                terminated=bool(terminated),
            )
            return f"{observation}\n\nThe episode is over."
        return str(observation)

    def get_reward(self) -> float | None:
        """The episode's return; None for a failed play (counted, never a zero).

        A win is audited first (:func:`spade_envs.runtime.audit.audit_win`): a version
        that cheated once played is quarantined and the play scores None
        (``audit_divergence``); a win no replay could confirm scores None too
        (``audit_failed``)."""
        if self.won and self.failure is None and self._env is not None:
            from ..runtime.audit import audit_win

            result = audit_win(
                self._env,
                self._registry,
                self.env_id,
                self._rng,
                str(getattr(self._env, "win_rule", "return")),
            )
            if result.divergence is not None or result.failed:
                self.failure = "audit_divergence" if result.divergence else "audit_failed"
                self.won = False
        self._counts.add(self.env_id, self.won, self.failure)
        self._close()
        return None if self.failure is not None else self.episode_return

    def _close(self) -> None:
        # Private: TRL offers every public method to the model as a tool.
        """Stop the sandbox worker of the current episode, if any."""
        if self._env is not None:
            try:
                self._env.close()
            except Exception:  # a dead worker is already gone
                pass
            self._env = None

    def _fail(self, exc: BaseException) -> None:
        self.failure = failure_outcome(exc)
        self.done = True
        self._close()


def _check_row(env_id: Any, seed: Any, sha256: Any) -> None:
    """A dataset row's fields, checked before anything is opened (a bad row is the
    dataset's fault, never counted against an environment)."""
    if env_id is not None and not isinstance(env_id, str):
        raise SpadeError(f"The row's env_id must be a string ID, not {type(env_id).__name__}.")
    if sha256 is not None and not isinstance(sha256, str):
        raise SpadeError(f"The row's sha256 must be a hex string, not {type(sha256).__name__}.")
    if seed is not None and (
        not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63
    ):
        raise SpadeError(f"The row's seed must be a whole number from 0 to 2**63-1, not {seed!r}.")


#: The TRL releases this module is tested with (major.minor).
TESTED_TRL = ("1.16",)
INSTALL = "pip install -e '.[trl]'  (trl 1.16, transformers >= 5.2, datasets)"


def _require(module: str) -> Any:
    """``module``, or a SpadeError naming the extra that brings it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise SpadeError(
            f"The TRL integration needs {module}, which is not installed: {INSTALL}."
        ) from None


def check_trl() -> str:
    """The installed TRL's version; SpadeError when TRL is missing, a warning when it is a
    release we do not test."""
    trl = _require("trl")
    version = str(getattr(trl, "__version__", "?"))
    if ".".join(version.split(".")[:2]) not in TESTED_TRL:
        warnings.warn(
            f"trl {version} is installed; spade-envs' TRL integration is tested with trl "
            f"{', '.join(TESTED_TRL)}.x ({INSTALL}).",
            stacklevel=3,
        )
    return version


def _pins(registry: Any, envs: Iterable[str], allow_unvalidated: bool = False) -> dict[str, Pin]:
    out = {}
    for ident in envs:
        pinned = pin(registry, ident, allow_unvalidated=allow_unvalidated)
        if pinned.resolved:
            print(pinned.note(), flush=True)
        out[pinned.env_id] = pinned
    if not out:
        raise SpadeError("No environments given: pass at least one spade/<Name>-v<N>.")
    return out


def environment_factory(
    envs: Sequence[str],
    *,
    hint: bool = False,
    registry: Any = None,
    allow_unvalidated: bool = False,
) -> Any:
    """TRL's ``environment_factory`` for registry versions.

    Args:
        envs: ``spade/<Name>-v<N>`` IDs (bare names resolve to their newest validated
            version, and say so).
        hint: Give every play the environment's hint (the hinted condition of regret).
        registry: The registry (default: the shared one, ``SPADE_REGISTRY_URL``).
        allow_unvalidated: Also train on versions that are not validated (refused
            otherwise, with the reason).

    Returns:
        A no-argument callable making :class:`RegistryEnvironment` s; its ``counts``
        attribute is their :class:`PlayCounts` and ``pins`` the pinned versions.
    """
    if registry is None:
        from ..registry.shared import shared_registry

        registry = shared_registry()
    check_trl()
    pins = _pins(registry, envs, allow_unvalidated)
    counts = PlayCounts()

    def factory() -> RegistryEnvironment:
        return RegistryEnvironment(
            pins,
            hint=hint,
            counts=counts,
            registry=registry,
            allow_unvalidated=allow_unvalidated,
        )

    factory.counts = counts  # type: ignore[attr-defined]
    factory.pins = pins  # type: ignore[attr-defined]
    return factory


def registry_dataset(
    envs: Sequence[str] | Any,
    seeds: Iterable[int],
    *,
    system_prompt: str | None = None,
    registry: Any = None,
) -> Any:
    """A ``datasets.Dataset`` of one row per (environment, seed) for TRL.

    Args:
        envs: IDs, or the factory from :func:`environment_factory` (its pins).
        seeds: Reset seeds; each environment gets each seed.
        system_prompt: The system message of every prompt (default: the agent's own).
        registry: The registry (when ``envs`` are IDs).

    Returns:
        Columns ``prompt`` (conversational: the system message and an empty user turn
        that ``reset`` fills), ``env_id``, ``sha256`` and ``seed``.
    """
    datasets = _require("datasets")

    from ..agent.policy import system_prompt as agent_system_prompt

    pins = getattr(envs, "pins", None)
    if pins is None:
        if registry is None:
            from ..registry.shared import shared_registry

            registry = shared_registry()
        pins = _pins(registry, envs)
    system = system_prompt if system_prompt is not None else agent_system_prompt("text")
    rows: dict[str, list[Any]] = {"prompt": [], "env_id": [], "sha256": [], "seed": []}
    for seed in seeds:
        for pinned in pins.values():
            rows["prompt"].append(
                [{"role": "system", "content": system}, {"role": "user", "content": ""}]
            )
            rows["env_id"].append(pinned.env_id)
            rows["sha256"].append(pinned.sha256)
            rows["seed"].append(int(seed))
    return datasets.Dataset.from_dict(rows)


def tool_calling_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer``, able to render and parse tool calls for TRL.

    A tokenizer whose template TRL already parses is returned as is. A ChatML one
    without tool calls (SmolLM2's: ``<|im_start|>role ... <|im_end|>``) gets TRL's
    bundled Qwen2.5 template, which is ChatML with ``<tool_call>`` blocks, and its
    response parser; the tokens are the same, so the model reads familiar framing.

    Raises:
        SpadeError: The template is neither (give the tokenizer a tool-calling
            template and a ``response_template`` yourself).
    """
    check_trl()
    from trl.chat_template_utils import (
        add_response_schema,
        qwen2_5_chat_template,
        supports_tool_calling,
    )

    if supports_tool_calling(tokenizer):
        try:
            return add_response_schema(tokenizer)
        except ValueError:
            if getattr(tokenizer, "response_template", None) or getattr(
                tokenizer, "response_schema", None
            ):
                return tokenizer
    template = str(getattr(tokenizer, "chat_template", "") or "")
    if "<|im_start|>" not in template:
        raise SpadeError(
            "This tokenizer's chat template has no tool calls TRL can parse and is not "
            "ChatML; set a tool-calling chat_template and a response_template on it."
        )
    tokenizer.chat_template = qwen2_5_chat_template
    return add_response_schema(tokenizer)


def play_counts_callback(factory: Any) -> Any:
    """A ``TrainerCallback`` that logs ``factory.counts`` (plays, wins, failures by
    kind) with TRL's own metrics, and stops training (SpadeError) once every play so
    far has failed: nothing is being learned from the environments.

    Args:
        factory: What :func:`environment_factory` returned.
    """
    TrainerCallback = _require("transformers").TrainerCallback

    counts: PlayCounts = factory.counts

    class _Callback(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any):
            metrics = counts.metrics()
            if logs is not None:
                logs.update(metrics)
            if state is not None and state.log_history:  # stored before callbacks run
                state.log_history[-1].update(metrics)
            failed = sum(counts.failed.values())
            if counts.plays and failed == counts.plays:
                raise SpadeError(
                    f"Every one of {counts.plays} plays failed "
                    f"({dict(counts.failed)}): nothing was learned from the environments."
                )

    return _Callback()
