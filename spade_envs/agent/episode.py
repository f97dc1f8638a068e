"""What a rollout plays (:class:`EnvTarget`, :class:`PlaySpec`) and what it records
(:class:`Episode`), with JSON-lines saving and loading of trajectories."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..error import SpadeError, UnknownEnvironmentError
from .failures import FAILURE_OUTCOMES
from .policy import Turn

__all__ = [
    "END_OUTCOMES",
    "FAILED_OUTCOMES",
    "Episode",
    "EnvTarget",
    "PlaySpec",
    "load_jsonl",
    "matched_specs",
    "resolve_envs",
    "save_jsonl",
]

#: How an episode may end.
END_OUTCOMES = ("terminated", "truncated", "max_turns", *FAILURE_OUTCOMES)
#: Endings that are the environment's fault (the designer reward penalises them); with
#: ``model_error`` they are :data:`spade_envs.agent.failures.FAILURE_OUTCOMES`.
FAILED_OUTCOMES = tuple(o for o in FAILURE_OUTCOMES if o != "model_error")
#: ``info`` keys a play records when present: a suite problem generated at a derived seed,
#: and an answer the suite's own scorer failed on (scored 0).
NOTED_INFO_KEYS = ("replaced_seeds", "scorer_error")


@dataclass(frozen=True)
class EnvTarget:
    """One registered environment version to play.

    Attributes:
        env_id: ``spade/<Name>-v<N>``.
        source: Its code (run in the sandbox unless the rollout is told otherwise).
        kind: ``"text"``, ``"tool"`` or ``"game"``.
        description: Its task description (goes into the system prompt).
        written_hint: The model-written hint stored in the registry ("" when none).
        knobs: Difficulty knobs every play opens it with (e.g. ``max_attempts`` of a
            suite task for a two-turn evaluation).
        suite: The external suite it was imported from ("" when none).
    """

    env_id: str
    source: str
    kind: str
    description: str = ""
    written_hint: str = ""
    knobs: dict[str, Any] = field(default_factory=dict)
    suite: str = ""

    @property
    def has_hint(self) -> bool:
        """Whether it has a ``hint()``: suite tasks have none (the suites offer none), so
        their hinted plays are not played and their regret is not measured."""
        return not self.suite


def resolve_envs(env_ids: Sequence[str], registry: Any = None) -> list[EnvTarget]:
    """Look environments up in the registry; seeds are registered on first use.

    Args:
        env_ids: Gym IDs (``spade/NumberGuess-v1``) or bare names (``NumberGuess``: the
            newest version).
        registry: A :class:`~spade_envs.registry.Registry`; default: the one at
            ``SPADE_REGISTRY_URL`` (or the per-user SQLite file).

    Raises:
        UnknownEnvironmentError: An ID names nothing registered (with close matches).
    """
    from ..registry.ids import NAMESPACE, parse_env_id
    from ..registry.shared import shared_registry
    from ..runtime import register_seed
    from ..seeds import seed_classes

    registry = registry if registry is not None else shared_registry()
    seeds = seed_classes()
    targets = []
    for raw in env_ids:
        text = str(raw).strip()
        if text.startswith(f"{NAMESPACE}/"):
            name, _version = parse_env_id(text)
        else:
            name, text = text, ""
        if name in seeds and (not text or not registry.versions(name)):
            # A bare seed name means the packaged seed, never a newer version that merely
            # took its name (old registries may hold one): register-or-find its exact code.
            seed_id = register_seed(registry, name)
            text = text or seed_id
        if not text:
            versions = registry.versions(name)
            if not versions:
                raise UnknownEnvironmentError(name, registry.names(), what="registered environment")
            text = versions[-1]
        record = registry.get(text)
        targets.append(
            EnvTarget(
                env_id=record.id,
                source=record.source,
                kind=record.kind,
                description=record.description,
                written_hint=record.hint,
                suite=record.suite,
            )
        )
    return targets


@dataclass(frozen=True)
class PlaySpec:
    """One episode to play.

    Attributes:
        env_id: Which environment (must be among the rollout's targets).
        play_index: The play's number for this environment; with the environment it
            fixes the sampling seeds, so the hinted and unhinted plays of one index share
            them (common random numbers).
        env_seed: The ``reset`` seed.
        hint: Whether the first observation carries the hint.
    """

    env_id: str
    play_index: int
    env_seed: int
    hint: bool = False


def matched_specs(
    envs: Sequence[str | EnvTarget],
    plays: int,
    *,
    hint: bool | None = None,
    env_seed: int = 0,
) -> list[PlaySpec]:
    """The plays of a run: ``plays`` per environment, with reset seeds ``env_seed + i``.

    Args:
        envs: Environment IDs, or targets (:func:`resolve_envs`): a target without a
            hint gets only the unhinted plays with ``hint=None``, and is an error with
            ``hint=True``.
        hint: ``True``/``False`` for hinted/unhinted plays only; ``None`` for both,
            matched: the same reset seeds and play indices (hence sampling seeds) and the
            same count with and without the hint.
    """
    env_ids = [e.env_id if isinstance(e, EnvTarget) else e for e in envs]
    hintless = {e.env_id for e in envs if isinstance(e, EnvTarget) and not e.has_hint}
    if hint is True and hintless & set(env_ids):
        raise SpadeError(
            f"{sorted(hintless & set(env_ids))[0]} has no hint (suite tasks offer none): "
            "play it without --hint."
        )
    if not isinstance(plays, int) or plays < 1:
        raise SpadeError(f"plays must be a positive int, got {plays!r}.")
    modes = (False, True) if hint is None else (bool(hint),)
    return [
        PlaySpec(env_id=env_id, play_index=i, env_seed=env_seed + i, hint=mode)
        for env_id in env_ids
        for mode in modes
        if not (mode and env_id in hintless)
        for i in range(plays)
    ]


@dataclass
class Episode:
    """One finished play.

    Attributes:
        env_id: The environment version.
        play_index: See :class:`PlaySpec`.
        env_seed: The ``reset`` seed.
        hint: Whether the play saw a hint.
        hint_source: ``"env"`` (``hint()`` after reset), ``"written"`` (the registry's
            model-written hint) or ``""``.
        hint_text: The hint shown.
        kind: ``"text"``, ``"tool"`` or ``"game"``.
        opponent: For games: ``"best"``, ``"random"`` or ``"self"`` (the model in every seat).
        model: The model's name.
        outcome: One of :data:`END_OUTCOMES`.
        episode_return: Sum of the rewards (of ``player_0`` in self-play).
        won: Whether the return reached the top of the environment's reward range
            (within 1e-6). Derived from the rewards only, never from ``info``: an
            environment cannot claim a win it did not score.
        penalty: For a play whose environment hung or crashed, the penalty the designer
            reward can use (``RolloutConfig.error_penalty``); 0 otherwise.
        error: What went wrong, "" otherwise.
        seat_returns: Return of each seat (games in self-play; else the one seat "").
        turns: The model's turns.
        messages: The chat of each seat, system prompt included.
        noted: The :data:`NOTED_INFO_KEYS` the environment's ``info`` carried (at reset
            or a step): what an evaluation counts and shows, never what it scores.
    """

    env_id: str
    play_index: int
    env_seed: int
    hint: bool
    hint_source: str
    hint_text: str
    kind: str
    opponent: str
    model: str
    outcome: str = "terminated"
    episode_return: float = 0.0
    won: bool = False
    penalty: float = 0.0
    error: str = ""
    seat_returns: dict[str, float] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    messages: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    noted: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether the environment hung or crashed (the play says nothing about the agent)."""
        return self.outcome in FAILED_OUTCOMES

    @property
    def generated_tokens(self) -> int:
        return sum(len(t.token_ids) for t in self.turns)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Episode:
        data = dict(data)
        data["turns"] = [Turn(**t) for t in data.get("turns", [])]
        return cls(**data)


def save_jsonl(episodes: Iterable[Episode], path: str | os.PathLike[str]) -> int:
    """Write one episode per line; returns how many were written.

    Raises:
        SpadeError: The file cannot be written.
    """
    count = 0
    try:
        with open(path, "w", encoding="utf-8") as handle:
            for episode in episodes:
                handle.write(json.dumps(episode.to_dict(), ensure_ascii=False) + "\n")
                count += 1
    except OSError as exc:
        raise SpadeError(f"Cannot write trajectories to {path}: {exc}") from exc
    return count


def load_jsonl(path: str | os.PathLike[str]) -> list[Episode]:
    """Read episodes written by :func:`save_jsonl`.

    Raises:
        SpadeError: The file is missing or a line is not an episode.
    """
    episodes = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SpadeError(f"Cannot read trajectories from {path}: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            episodes.append(Episode.from_dict(json.loads(line)))
        except (ValueError, TypeError) as exc:
            raise SpadeError(
                f"{path}:{number} is not an episode written by save_jsonl ({exc})."
            ) from exc
    return episodes
