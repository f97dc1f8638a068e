"""The one door from an ID, a name or a record to a running environment.

Every play goes through here: ``gym.make``/``make_vec`` (through
:mod:`spade_envs.runtime.gym_ids`), ``spade_envs.make``, the CLI's ``play``, web and API
play sessions, cards' example episodes, rollouts, evaluation and regret. What the door
guarantees for every sandboxed environment it opens:

- every reset carries a seed (a seedless reset draws one in the parent:
  :class:`spade_envs.sandbox.trace.ResetSeeds`), and the environment reads the virtual
  clock (:mod:`spade_envs.sandbox.vclock`), as under the validator;
- ``hint()`` comes from a twin: a fresh instance in a fresh worker with the same seed and
  actions, so a hint cannot change the episode being played;
- the episode is recorded (:class:`~spade_envs.sandbox.trace.EpisodeTrace`), so a replay
  audit (:mod:`spade_envs.runtime.audit`) can play it again in a fresh worker;
- trust is decided here: a version that was never validated, is retired or is
  quarantined warns; in-process execution needs a packaged seed's exact code or
  ``trust_code=True``.

Nothing else in the package calls :func:`spade_envs.sandbox.open_env` to build an
environment that is played (``tests/runtime/test_door.py`` holds that line).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ..core.dialect import expected_win_rule
from ..error import EnvContractError
from ..registry.trust import warn_quarantined, warn_retired, warn_unvalidated

__all__ = ["make", "open_id", "open_record", "open_source", "register_seed", "resolve"]


def register_seed(registry: Any, name: str) -> str:
    """Register (or find) the packaged seed ``name``'s exact code in ``registry``.

    The one place a seed is registered on first use (``gym.make``, rollouts, the CLI).

    Returns:
        Its ID, ``spade/<Name>-v<N>``.
    """
    from ..core.metadata import describe
    from ..seeds import seed_class, seed_source

    return registry.register(seed_source(name), describe(seed_class(name)), status="validated").id


def open_source(
    source: str,
    *,
    env_id: str = "<env>",
    knobs: dict[str, Any] | None = None,
    seat: int | None = None,
    opponent: str = "best",
    isolation: str = "sandbox",
    pool: Any = None,
    config: Any = None,
    render_mode: str | None = None,
    trust_code: bool = False,
) -> Any:
    """Open the environment ``source`` defines, to be played.

    Args:
        source: The environment module.
        env_id: Its ID (or file name): shown in tracebacks and errors.
        knobs: Difficulty knobs.
        seat: For games, the seat the agent plays (the others play ``opponent``); None
            gives the whole game.
        opponent: For ``seat``: ``"best"`` or ``"random"``.
        isolation: ``"sandbox"`` (default) or ``"none"`` (in this process: a packaged
            seed's exact code, or any code with ``trust_code=True``).
        pool: The :class:`~spade_envs.sandbox.WorkerPool` to take workers from.
        config: A :class:`~spade_envs.sandbox.SandboxConfig` (when no pool is given).
        render_mode: ``"ansi"`` or None.
        trust_code: With ``isolation="none"``: run code that is not a packaged seed here.

    Returns:
        A sandboxed ``gymnasium.Env`` (or PettingZoo game), or the in-process instance.

    Raises:
        UntrustedCodeError: ``isolation="none"`` for non-seed code without ``trust_code``.
    """
    from ..sandbox import open_env

    opener = functools.partial(
        open_env,
        source,
        filename=env_id,
        knobs=dict(knobs or {}) or None,
        seat=seat,
        opponent=opponent,
        pool=pool,
        config=config,
        render_mode=render_mode,
    )
    if isolation == "none":
        return opener(isolation="none", trust_code=trust_code)
    env = opener(isolation=isolation)
    # How wins are counted is the source's dialect's, read here, never the worker's say.
    rule = expected_win_rule(source)
    if getattr(env, "win_rule", "return") != rule:
        env.close()
        raise EnvContractError(
            f"{env_id} reported win_rule {getattr(env, 'win_rule', None)!r:.20}, but its "
            f"source counts wins by {rule!r} (SPADE's rule is for SPADE's *Env games only)."
        )
    if hasattr(env, "twin_opener"):
        env.twin_opener = opener
    return env


def open_record(record: Any, **kwargs: Any) -> Any:
    """:func:`open_source` for a stored version (an ``EnvRecord``, an ``EnvTarget`` or any
    value with ``source`` and ``id``/``env_id``); games are played from seat 0 unless
    ``seat`` says otherwise."""
    env_id = getattr(record, "env_id", None) or getattr(record, "id", "<env>")
    if "seat" not in kwargs:
        kwargs["seat"] = 0 if getattr(record, "kind", "") == "game" else None
    return open_source(record.source, env_id=env_id, **kwargs)


def open_id(
    env_id: str,
    *,
    isolation: str = "sandbox",
    seat: int = 0,
    opponent: str = "best",
    render_mode: str | None = None,
    trust_code: bool = False,
    pool: Any = None,
    caller_depth: int = 1,
    **knobs: Any,
) -> Any:
    """Open the stored version ``env_id`` (``spade/<Name>-v<N>``), deciding trust.

    Args:
        env_id: ``spade/<Name>-v<N>``.
        isolation: ``"sandbox"`` (default) or ``"none"``: in this process, for a packaged
            seed's exact code only, unless ``trust_code`` is also given.
        seat: For games, the seat the agent plays (the others play ``opponent``).
        opponent: For games: ``"best"`` or ``"random"``.
        render_mode: ``"ansi"`` or None.
        trust_code: With ``isolation="none"``: also run code that is not a packaged seed in
            this process, as this user. Only for code you wrote or reviewed.
        pool: The :class:`~spade_envs.sandbox.WorkerPool` to take workers from (default:
            the process-wide one).
        caller_depth: How many frames above this one the user's call is (warnings are
            attributed to it): 1 for a direct call, 3 through ``gym.make``.
        **knobs: Difficulty knobs.

    Raises:
        UntrustedCodeError: ``isolation="none"`` for a version that is not a packaged
            seed's exact code, without ``trust_code=True``.

    Warns:
        UnvalidatedEnvWarning: The version was never validated or failed validation.
        RetiredEnvWarning: The version is retired (the newest validated one is named).
        QuarantinedEnvWarning: A replay audit caught the version behaving differently
            from its own replay (the evidence is in the message).
    """
    from .gym_ids import newest_validated, stored_version

    _kind, source, status = stored_version(env_id)
    level = 2 + caller_depth  # the warn_* function, this one, then up to the user's call
    warn_unvalidated(env_id, status, stacklevel=level)
    if status == "retired":
        warn_retired(env_id, newest_validated(env_id), stacklevel=level)
    elif status == "quarantined":
        from ..registry.shared import shared_registry

        evidence = shared_registry().quarantine_evidence(env_id)
        warn_quarantined(env_id, evidence, stacklevel=level)
    return open_source(
        source,
        env_id=env_id,
        knobs=knobs,
        seat=seat,
        opponent=opponent,
        isolation=isolation,
        render_mode=render_mode,
        trust_code=trust_code,
        pool=pool,
    )


def resolve(name_or_path: str | Path) -> type:
    """The environment class for a seed name or the path of a ``.py`` file (trusted)."""
    from ..core.loader import load_env_file
    from ..seeds import seed_class

    text = str(name_or_path)
    if text.endswith(".py") or "/" in text or "\\" in text:
        return load_env_file(text)
    return seed_class(text)


def make(name_or_path: str | Path, **knobs: Any) -> Any:
    """Create an environment from a seed name or a ``.py`` file path, in this process.

    Args:
        name_or_path: A seed name such as ``"NumberGuess"`` (case-insensitive), or the
            path of a Python file defining one environment class. A name always builds
            the packaged seed, never a registry version of that name (seed names are
            reserved in the registry; use ``gym.make("spade/<Name>-v<N>")`` for stored
            versions, which run in the sandbox). A file is executed in this process:
            only pass files you wrote or reviewed.
        **knobs: ``render_mode`` and difficulty knobs, e.g. ``make("Mastermind", length=5)``.

    Returns:
        A ``TextEnv``/``ToolEnv`` (a ``gymnasium.Env``) or a ``TextGame`` (a PettingZoo
        ``AECEnv``), not yet reset.

    Raises:
        UnknownEnvironmentError: No seed has that name (close matches are suggested).
        EnvLoadError: The file does not define exactly one environment class.
        InvalidKnobError: A knob does not exist or has the wrong type.
    """
    return resolve(name_or_path)(**knobs)
