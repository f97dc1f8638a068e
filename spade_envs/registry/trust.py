"""What the registry trusts: seed names are reserved, and never-validated code says so.

A seed's name (``NumberGuess``, ``Nim``, ...) stands for the packaged seed and nothing
else: :func:`check_seed_name` refuses to register other code under it (in any letter
case), so ``spade/NumberGuess-v<N>`` can never be designer-written or imported code
wearing a seed's name. :func:`warn_unvalidated` is what ``gym.make`` says about a version
whose code was never validated (imported with ``--no-validate``) or was rejected.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ..error import SpadeError

if TYPE_CHECKING:
    from .records import QuarantineEvidence

__all__ = [
    "UNVALIDATED_STATUSES",
    "QuarantinedEnvWarning",
    "ReservedNameError",
    "RetiredEnvWarning",
    "UnvalidatedEnvWarning",
    "check_seed_name",
    "reserved_seed",
    "warn_quarantined",
    "warn_retired",
    "warn_unvalidated",
]


class ReservedNameError(SpadeError):
    """Code that is not a packaged seed was registered under a seed's name."""


class UnvalidatedEnvWarning(UserWarning):
    """``gym.make`` built a version whose code was never validated (or was rejected)."""


class RetiredEnvWarning(UserWarning):
    """``gym.make`` built a retired version: it still runs, but is no longer offered."""


class QuarantinedEnvWarning(UserWarning):
    """``gym.make`` built a quarantined version: a replay of one of its plays diverged."""


def reserved_seed(name: str) -> str | None:
    """The seed whose name ``name`` is (letter case ignored), or None.

    Example:
        ``reserved_seed("numberguess") == "NumberGuess"``; ``reserved_seed("Orbit") is None``.
    """
    from ..seeds import seed_names

    wanted = name.lower() if isinstance(name, str) else ""
    for seed in seed_names():
        if seed.lower() == wanted:
            return seed
    return None


def check_seed_name(name: str, source: str) -> None:
    """Refuse ``source`` under ``name`` when the name is a seed's and the code is not that seed.

    Raises:
        ReservedNameError: ``name`` is a seed's name (in any letter case) and ``source`` is
            not byte for byte that seed's packaged module.
    """
    seed = reserved_seed(name)
    if seed is None:
        return
    from ..seeds import seed_source

    if name == seed and source == seed_source(seed):
        return
    raise ReservedNameError(
        f"{name!r} is the name of the packaged seed {seed}, and this code is not that seed: "
        f"seed names are reserved, so spade/{seed}-v<N> always means the seed itself. Rename "
        f"the environment class (e.g. 'My{seed}' or '{seed}Variant') and register it again."
    )


#: Statuses ``gym.make`` warns about: the code never passed validation here.
UNVALIDATED_STATUSES = ("unvalidated", "rejected")


def warn_unvalidated(env_id: str, status: str, *, stacklevel: int = 3) -> None:
    """Warn (:class:`UnvalidatedEnvWarning`) when ``status`` says the code was never validated."""
    if status not in UNVALIDATED_STATUSES:
        return
    if status == "rejected":
        what = f"failed validation (status 'rejected'; `spade-envs show {env_id}` says why)"
    else:
        what = (
            "was imported without validation, or validated but unproven (status "
            f"'unvalidated'; `spade-envs show {env_id}` says which): nobody showed that it "
            "can be won"
        )
    warnings.warn(
        f"{env_id} {what}. It runs in the sandbox by default all the same. Validate it with "
        f"`spade-envs revalidate {env_id}` (or spade_envs.runtime.validate_stored), which "
        "stores the report and sets its status to validated or rejected.",
        UnvalidatedEnvWarning,
        stacklevel=stacklevel,
    )


def warn_retired(env_id: str, newest_validated: str | None, *, stacklevel: int = 4) -> None:
    """Warn (:class:`RetiredEnvWarning`) that ``env_id`` is retired, naming what to use.

    Args:
        env_id: The retired version that is being made.
        newest_validated: The newest validated version of the same name, if any.
    """
    name = env_id.split("/", 1)[-1].rsplit("-v", 1)[0]
    if newest_validated is not None and newest_validated != env_id:
        advice = f"Use {newest_validated}, the newest validated version of {name}, instead."
    else:
        advice = (
            f"No validated version of {name} is registered; `spade-envs list` shows the "
            "versions that are offered."
        )
    warnings.warn(
        f"{env_id} is retired: it still runs, but is no longer offered (listings hide it). "
        f"{advice}",
        RetiredEnvWarning,
        stacklevel=stacklevel,  # by default: warn_retired, make_env, gym.make, its caller
    )


def warn_quarantined(
    env_id: str, evidence: QuarantineEvidence | None, *, stacklevel: int = 4
) -> None:
    """Warn (:class:`QuarantinedEnvWarning`) that ``env_id`` is quarantined, with the
    evidence in one line and how to clear it.

    Args:
        env_id: The quarantined version that is being made.
        evidence: Where its replay diverged (None when the registry holds none readable).
    """
    if evidence is not None:
        # One line, shortened: the texts are what an environment produced.
        why = f" Evidence: {evidence.summary(width=60)}"
        if evidence.at:
            why += f" (recorded {evidence.at[:40]})"
        why += "."
    else:
        why = " No readable evidence is stored."
    warnings.warn(
        f"{env_id} is quarantined: a replay audit diverged (replaying a play in a fresh "
        f"worker gave a different result), so it is out of pools, evaluation sets and the "
        f"designer's memory.{why} It runs all the same. Clear it with `spade-envs "
        f"revalidate {env_id}`: if it passes validation again it becomes validated.",
        QuarantinedEnvWarning,
        stacklevel=stacklevel,  # as for warn_retired
    )
