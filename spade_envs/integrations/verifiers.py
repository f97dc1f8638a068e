"""Registry environments in verifiers (0.4: ``verifiers.v1``), prime-rl's environment format.

verifiers 0.4 splits an environment into a ``Taskset`` (the rows: here one task per
pinned version and seed, its prompt the seeded first observation) and an ``Env`` whose
``run(task, agents)`` plays one rollout: here :class:`RegistryEnv` opens the version
through the door (:mod:`spade_envs.runtime.door`: sandboxed, trust decided there),
resets it with the task's seed, and steps it with each of the model's replies while the
model's harness (``null``: a plain chat loop) talks to the served model. The episode's
return is the reward ``episode_return``; a play that failed is an episode with an error
(``EnvError`` naming the failure kind, ``ok=False``), never a zero. Each trace's
``info["spade"]`` records the pinned ID, the source's SHA-256, the seed and the rewards.

Two ways in:

- :func:`load_environment` in Python, for registry IDs in any registry;
- ``spade-envs export DIR --format verifiers``: a pip-installable package carrying the
  selected versions, which ``vf-eval <package-name>`` loads (it validates them into a
  registry of its own on first use; :mod:`spade_envs.registry.verifiers_export`).

verifiers needs ``openai<3`` and pins ``mcp``, so it lives in a venv of its own:
``make .venv-verifiers`` (or ``pip install verifiers==0.4.0`` beside spade-envs).
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from ..error import SpadeError

#: The verifiers releases this module is tested with (major.minor).
TESTED_VERIFIERS = ("0.4",)
INSTALL = "make .venv-verifiers  (or: pip install verifiers==0.4.0 in a venv with spade-envs)"
#: The taskset ID under which verifiers' loader finds this module's taskset.
TASKSET_ID = "spade-registry"


def _require_verifiers() -> Any:
    try:
        import verifiers
    except ImportError:
        raise SpadeError(
            f"The verifiers integration needs verifiers 0.4, which is not installed: {INSTALL}."
        ) from None
    version = str(getattr(verifiers, "__version__", "?"))
    tested = ", ".join(f"{v}.x" for v in TESTED_VERIFIERS)
    if ".".join(version.split(".")[:2]) not in TESTED_VERIFIERS:
        parts = [int(p) if p.isdigit() else 0 for p in version.split(".")[:2]] + [0, 0]
        if parts[:2] < [0, 4]:
            raise SpadeError(
                f"verifiers {version} is installed; this integration speaks verifiers.v1, "
                f"new in 0.4 (tested with {tested}): {INSTALL}."
            )
        warnings.warn(
            f"verifiers {version} is installed; spade-envs' verifiers integration is tested "
            f"with verifiers {tested}.",
            stacklevel=3,
        )
    import verifiers.v1 as vf

    return vf


vf = _require_verifiers()

from verifiers.v1.errors import EnvError  # noqa: E402

from ..agent.policy import system_prompt as _agent_system_prompt  # noqa: E402
from ..registry.pins import Query  # noqa: E402
from .plays import PlayCounts, RegistryEnvironment, pin_envs  # noqa: E402

__all__ = [
    "Query",
    "RegistryEnv",
    "RegistryEnvConfig",
    "RegistryTask",
    "RegistryTaskset",
    "RegistryTasksetConfig",
    "load_environment",
]


class RegistryTasksetConfig(vf.TasksetConfig):
    """Which versions and seeds make the tasks (``--env.taskset.<field>`` on the CLI).

    Attributes:
        envs: ``spade/<Name>-v<N>`` IDs (a bare name resolves to its newest validated
            version, and says so).
        skill, kind, origin: Without ``envs``: the newest validated version of every
            name with this skill, kind and origin (a
            :class:`~spade_envs.registry.pins.Query`).
        limit: Without ``envs``: at most this many versions.
        registry: The registry URL (default: ``SPADE_REGISTRY_URL`` or the default file).
        num_seeds: Seeds per version: ``first_seed`` ... ``first_seed + num_seeds - 1``.
        first_seed: The first reset seed.
        seeds: Exactly these reset seeds instead (when not empty).
        hint: Give every play the environment's hint (regret's hinted condition).
        allow_unvalidated: Also play versions that are not validated (refused otherwise).
    """

    id: str = TASKSET_ID
    envs: list[str] = []
    skill: str | None = None
    kind: str | None = None
    origin: str | None = None
    limit: int | None = None
    registry: str | None = None
    num_seeds: int = 8
    first_seed: int = 0
    seeds: list[int] = []
    hint: bool = False
    allow_unvalidated: bool = False


class RegistryData(vf.TaskData):
    """One task: ``info`` holds ``env_id``, ``sha256`` and ``seed``."""

    info: dict


class RegistryTask(vf.Task[RegistryData, vf.State, vf.TaskConfig]):
    """A (version, seed) task; its reward is recorded by :class:`RegistryEnv`."""


def _open_registry(url: str | None) -> Any:
    if url:
        from ..registry import Registry

        return Registry(url)
    from ..registry.shared import shared_registry

    return shared_registry()


def _package_registry_url(package: Any) -> str:
    """Where an exported package's versions are validated: one SQLite file per package
    and content (``SPADE_VERIFIERS_CACHE`` moves the folder)."""
    import hashlib
    import os
    from pathlib import Path

    digest = hashlib.sha256("".join(sorted(e["sha256"] for e in package.ENVS.values())).encode())
    folder = Path(
        os.environ.get("SPADE_VERIFIERS_CACHE") or Path.home() / ".cache/spade-envs/verifiers"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / f'{package.__name__}-{digest.hexdigest()[:12]}.db'}"


def _play(config: RegistryTasksetConfig, registry: Any, pins: dict, counts: PlayCounts) -> Any:
    return RegistryEnvironment(
        pins,
        hint=config.hint,
        counts=counts,
        registry=registry,
        allow_unvalidated=config.allow_unvalidated,
    )


class RegistryTaskset(vf.Taskset[RegistryTask, RegistryTasksetConfig]):
    """One task per (pinned version, seed); the prompt is the seeded first observation
    (with the hint when asked), read through the door when the taskset loads.

    Attributes:
        package: Set by an exported package (``spade-envs export --format verifiers``)
            to its module: its versions are then the default ``envs``, validated into
            ``registry`` (default: a file under ``~/.cache/spade-envs/verifiers/``) on
            first use.
    """

    package: ClassVar[Any] = None

    def registry(self) -> Any:
        """The registry the versions are played from (opened once)."""
        if getattr(self, "_registry", None) is None:
            url = self.config.registry
            if self.package is not None and not url:
                url = _package_registry_url(self.package)
            self._registry = _open_registry(url)
        return self._registry

    def pins(self) -> dict:
        """The pinned versions (an empty selection is a SpadeError)."""
        if getattr(self, "_pins", None) is None:
            config = self.config
            envs: list[str] | Query = list(config.envs)
            query = Query(config.skill, config.kind, config.origin, limit=config.limit)
            if self.package is not None:
                envs = self._packaged_ids(envs)
            elif not envs and query != Query():
                envs = query
            if not envs:
                raise SpadeError(
                    "No environments given: set envs (--env.taskset.envs) to "
                    "spade/<Name>-v<N> IDs, or select by skill, kind or origin."
                )
            self._pins = pin_envs(self.registry(), envs, config.allow_unvalidated)
        return self._pins

    def _packaged_ids(self, asked: list[str]) -> list[str]:
        """The registry IDs of the package's versions (validated into the registry the
        first time), in the package's order; ``asked`` narrows them by packaged ID."""
        from ..error import suggest

        packaged = {entry["sha256"]: env_id for env_id, entry in self.package.ENVS.items()}
        for env_id in asked:
            if env_id not in self.package.ENVS:
                raise SpadeError(
                    f"{self.package.__name__} has no environment {env_id!r}."
                    f"{suggest(env_id, self.package.ENVS)}"
                )
        registry = self.registry()
        stored = registry.by_sha256(packaged)
        if len(stored) < len(packaged):
            print(
                f"{self.package.__name__}: validating {len(packaged) - len(stored)} packaged "
                f"version(s) into {registry.url} (once; later runs reuse it)",
                flush=True,
            )
            # Our importer, not the package's own register_into: the package's code must
            # not be what decides that its versions are validated.
            from pathlib import Path

            from ..runtime.imports import import_corpus

            import_corpus(registry, Path(self.package.__file__).resolve().parent, "package")
            stored = registry.by_sha256(packaged)
        ids, left_out = [], []
        for digest, env_id in packaged.items():
            if asked and env_id not in asked:
                continue
            record = stored.get(digest)
            if record is None:
                raise SpadeError(f"{env_id} could not be imported into {registry.url}.")
            if record.status != "validated" and not asked and not self.config.allow_unvalidated:
                print(f"{env_id}: left out, it is {record.status} here", flush=True)
                left_out.append(f"{env_id} ({record.status})")
                continue
            ids.append(record.id)
        if not ids and left_out:
            raise SpadeError(
                f"None of {self.package.__name__}'s versions validated in {registry.url}: "
                f"{', '.join(left_out)}. Nothing to evaluate (allow_unvalidated plays them "
                "anyway)."
            )
        return ids

    def load(self) -> Iterator[RegistryTask]:
        pins = self.pins()
        # The env's counts, when an env owns this taskset: reading the prompts is
        # environment time too (worker starts and resets), not overhead to leave out.
        counts = getattr(self, "counts", None) or PlayCounts()
        play = _play(self.config, self.registry(), pins, counts)
        system = _agent_system_prompt("text")
        for seed in _seeds(self.config):
            for pinned in pins.values():
                prompt = play.reset(pinned.env_id, seed, sha256=pinned.sha256)
                if play.failure is not None:
                    # Counted by kind, and said; the other tasks are still evaluated.
                    print(
                        f"{pinned.env_id} could not start with seed {seed} "
                        f"({play.failure}); that task is left out",
                        flush=True,
                    )
                    play.get_reward()
                    continue
                play._close()  # the prompt is read; nothing was played, so nothing is scored
                yield RegistryTask(
                    RegistryData(
                        name=f"{pinned.env_id}#seed={seed}",
                        prompt=prompt,
                        system_prompt=system,
                        info={"env_id": pinned.env_id, "sha256": pinned.sha256, "seed": seed},
                    ),
                    self.config.task,
                )


def _seeds(config: RegistryTasksetConfig) -> list[int]:
    if config.seeds:
        bad = [s for s in config.seeds if not 0 <= s < 2**63]
        if bad:
            raise SpadeError(f"seeds must be whole numbers from 0 to 2**63-1; got {bad}.")
        return list(dict.fromkeys(config.seeds))
    if config.num_seeds < 1 or config.first_seed < 0:
        raise SpadeError(
            f"num_seeds must be at least 1 and first_seed at least 0 (got "
            f"{config.num_seeds} and {config.first_seed})."
        )
    return list(range(config.first_seed, config.first_seed + config.num_seeds))


class RegistryEnvConfig(vf.EnvConfig):
    """The run's environment: the taskset and one player, a plain chat loop by default
    (harness ``null`` in a local subprocess: the model only talks; the environment runs
    in our sandbox, not in the harness)."""

    taskset: RegistryTasksetConfig = RegistryTasksetConfig()
    player: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime={"type": "subprocess"})


class RegistryEnv(vf.Env[RegistryEnvConfig]):
    """Plays one task: the environment answers each model reply with its next
    observation until the episode ends (or the harness stops the model).

    Attributes:
        counts: Every play of this Env: finished, won, failed by kind.
    """

    def __init__(self, config: RegistryEnvConfig) -> None:
        super().__init__(config)
        self.counts = PlayCounts()
        self.taskset.counts = self.counts

    async def run(self, task: RegistryTask, agents: Any) -> None:
        taskset: RegistryTaskset = self.taskset  # type: ignore[assignment]
        info = task.data.info
        play = _play(taskset.config, taskset.registry(), taskset.pins(), self.counts)
        scored = False
        try:
            first = await asyncio.to_thread(
                play.reset, info["env_id"], info["seed"], sha256=info["sha256"]
            )
            if play.failure is None and first != task.data.prompt:
                # The same seed must give the same episode; a version that does not is
                # not played (the task's prompt is what the model was shown).
                play.failure = "env_error"
            stopped_by = None
            async with agents.player.interaction(task) as interaction:
                trace = interaction.trace
                if play.failure is None:
                    segment = await interaction.turn()
                    while True:
                        if segment.terminated:
                            stopped_by = "harness"
                            if trace.errors:  # the model's server or its harness failed
                                play.failure = "model_error"
                            break
                        if not _replied(segment):
                            # No reply at all: the model's call failed (verifiers' chat
                            # harness goes on with a content-less message after a failed
                            # call); never played as an empty answer.
                            play.failure = "model_error"
                            break
                        try:
                            observation = await asyncio.to_thread(play.act, segment.last_reply)
                        except ValueError:  # the environment failed: play.failure says how
                            break
                        if play.done:
                            break
                        segment = await interaction.turn(observation)
                # Scored inside the exchange: a failure raised here marks the trace itself
                # as errored, so verifiers' own averages leave it out (never a zero).
                reward = await asyncio.to_thread(play.get_reward)
                scored = True
                trace.info["spade"] = {
                    **info,
                    "rewards": list(play.rewards),
                    "won": play.won,
                    "failure": play.failure,
                    "stopped_by": stopped_by,
                }
                if reward is None:
                    raise EnvError(
                        f"{info['env_id']} seed {info['seed']}: the play failed "
                        f"({play.failure}); it is not scored."
                    )
                trace.record_reward("episode_return", reward, 1.0)
                trace.record_metric("won", float(play.won))
        except asyncio.CancelledError:  # the episode's deadline
            if not scored:
                play.failure = play.failure or "timeout"
            raise
        except Exception:
            if not scored:  # the harness could not start, or the exchange broke
                play.failure = play.failure or "model_error"
            raise
        finally:
            if not scored:  # counted by kind, and its sandbox worker stopped
                play.get_reward()


def _replied(segment: Any) -> bool:
    """Whether the model's turn produced a reply (text, even empty, or a tool call)."""
    for message in segment.messages:
        if getattr(message, "role", None) == "assistant" and (
            getattr(message, "content", None) is not None or getattr(message, "tool_calls", None)
        ):
            return True
    return False


# verifiers' loader imports a taskset by its ID (``spade-registry`` -> ``spade_registry``)
# and takes the one Taskset and Env this module exports; the alias lets it find them
# once this module is imported (an exported package is a real module of its own).
sys.modules.setdefault("spade_registry", sys.modules[__name__])


def load_environment(
    envs: Sequence[str] | Query,
    *,
    registry: str | None = None,
    num_seeds: int = 8,
    first_seed: int = 0,
    seeds: Sequence[int] = (),
    hint: bool = False,
    allow_unvalidated: bool = False,
    max_turns: int | None = None,
) -> RegistryEnv:
    """A verifiers ``Env`` playing registry versions.

    Args:
        envs: ``spade/<Name>-v<N>`` IDs, or a :class:`~spade_envs.registry.pins.Query`
            (``Query(skill="math")``: the newest validated version of each such name).
        registry: Registry URL (default: the shared one).
        num_seeds: Tasks per version (seeds ``first_seed`` onwards).
        first_seed: The first seed.
        seeds: Exactly these seeds instead (when given).
        hint: Show every play the environment's hint.
        allow_unvalidated: Also play versions that are not validated.
        max_turns: A cap on the model's turns (default: the environment's own end).

    Returns:
        A :class:`RegistryEnv`; run it with verifiers' ``run_eval`` or
        ``env.run_episode``. Its ``counts`` tally the plays.
    """
    player: dict[str, Any] = {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}}
    if max_turns is not None:
        player["max_turns"] = max_turns
    selection: dict[str, Any] = (
        {"envs": list(envs)}
        if not isinstance(envs, Query)
        else {"skill": envs.skill, "kind": envs.kind, "origin": envs.origin, "limit": envs.limit}
    )
    if isinstance(envs, Query) and (envs.status != "validated" or not envs.newest_only):
        raise SpadeError(
            "verifiers tasksets select the newest validated version of each name; pass "
            "IDs to play other versions."
        )
    config = RegistryEnvConfig(
        taskset=RegistryTasksetConfig(
            **selection,
            registry=registry,
            num_seeds=num_seeds,
            first_seed=first_seed,
            seeds=list(seeds),
            hint=hint,
            allow_unvalidated=allow_unvalidated,
        ),
        player=vf.AgentConfig(**player),
    )
    env = RegistryEnv(config)
    env.taskset.pins()  # refuse a bad selection now, not at the first rollout
    return env
