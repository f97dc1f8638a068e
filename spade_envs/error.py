"""Every error spade-envs raises on purpose.

One base class, :class:`SpadeError`, so callers can catch everything the library
raises deliberately. Each message says what was wrong and what to do about it;
unknown names come with close-match suggestions.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "SpadeError",
    "UnknownEnvironmentError",
    "EnvContractError",
    "EnvLoadError",
    "InvalidKnobError",
    "ToolError",
    "IllegalMove",
    "StepTimeout",
    "SandboxError",
    "SandboxTimeout",
    "SandboxCrashed",
    "SandboxProtocolError",
    "SandboxBroken",
    "SandboxUnavailable",
    "SandboxStartFailed",
    "UntrustedCodeError",
    "EnvCodeError",
    "MissingExtraError",
    "TORCH_CPU_INSTALL",
    "install_advice",
    "close_matches",
    "suggest",
]

#: The torch release every extra that needs torch pins (``[train]``, ``[memory]``).
TORCH_VERSION = "2.13.0"
#: PyPI's ``torch`` wheel for Linux is the CUDA build; this index has the CPU one.
TORCH_CPU_INSTALL = (
    f"pip install torch=={TORCH_VERSION} --index-url https://download.pytorch.org/whl/cpu"
)
#: The extras whose packages include torch.
_TORCH_EXTRAS = ("train", "memory")


def close_matches(name: str, candidates: Iterable[str], *, n: int = 3) -> list[str]:
    """Up to ``n`` of ``candidates`` close to ``name``, closest first (case ignored)."""
    by_lower: dict[str, str] = {}
    for candidate in candidates:
        by_lower.setdefault(candidate.lower(), candidate)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.6)
    return [by_lower[c] for c in close]


def suggest(name: str, candidates: Iterable[str], *, n: int = 3) -> str:
    """Return a ``" Did you mean ...?"`` sentence for ``name``, or ``""`` when nothing is close.

    Matching ignores case, so ``numberguess`` still finds ``NumberGuess``.
    """
    close = close_matches(name, candidates, n=n)
    if not close:
        return ""
    return f" Did you mean {', '.join(repr(c) for c in close)}?"


def install_advice(extra: str) -> str:
    """How to install the ``[extra]`` of spade-envs, pinned: one or two shell lines.

    For an extra with torch, the CPU wheel comes first (a bare ``pip install`` of the
    extra would resolve PyPI's CUDA build of torch on Linux); the pins are the extra's.

    Example:
        >>> print(install_advice("parquet"))
        pip install 'spade-envs[parquet]'
    """
    line = f"pip install 'spade-envs[{extra}]'"
    if extra in _TORCH_EXTRAS:
        return f"{TORCH_CPU_INSTALL}   # CPU-only machines; skip with a GPU\n{line}"
    return line


class SpadeError(Exception):
    """Base class of every error raised deliberately by spade-envs."""


class MissingExtraError(SpadeError, ImportError):
    """An optional dependency is not installed; the message names the extra to install.

    Attributes:
        extra: The spade-envs extra that provides the missing packages (``train``, ...).
        missing: The import names that were not found.
    """

    def __init__(self, what: str, missing: Iterable[str], extra: str):
        self.extra = extra
        self.missing = tuple(missing)
        lines = "\n".join(f"  {line}" for line in install_advice(extra).splitlines())
        super().__init__(
            f"{what} needs {', '.join(self.missing)} (not installed), from the [{extra}] "
            f"extra. Install it with:\n{lines}"
        )


class UnknownEnvironmentError(SpadeError, LookupError):
    """A name or path does not identify an environment.

    Attributes:
        name: What was asked for (a name, or an ID when ``what`` is "environment version").
        known: The candidates it was compared with, sorted.
        what: "seed environment", "registered environment", "environment version" or
            "environment" (a seed or a registered name).
    """

    def __init__(self, name: str, known: Iterable[str], *, what: str = "seed environment"):
        known = sorted(known)
        self.name = name
        self.known = known
        self.what = what
        hint = suggest(name, known)
        if what == "seed environment":
            advice = (
                f"`spade-envs list-seeds` lists the {len(known)} seeds; a registry ID "
                "(spade/<Name>-v<N>) or the path of a .py file that defines one environment "
                "class works too."
            )
        elif what == "environment version":
            advice = f"Registered versions of it: {', '.join(known)}."
        elif what == "environment":  # a seed or a registered name
            advice = (
                "`spade-envs list-seeds` lists the seeds, `spade-envs list` the registered "
                "versions; the path of a .py file works too."
            )
        else:
            advice = "`spade-envs list` lists the registered versions."
        super().__init__(f"No {what} named {name!r}.{hint} {advice}")


class EnvContractError(SpadeError):
    """An environment broke the protocol (wrong return type, bad reward, ...).

    This is the environment author's bug, not the caller's; the message names the
    method and what it returned so the author (human or model) can fix it.
    """


class EnvLoadError(SpadeError):
    """Environment source could not be loaded into exactly one environment class."""


class InvalidKnobError(SpadeError, TypeError):
    """A difficulty knob passed to an environment does not exist or has a bad value."""


class ToolError(SpadeError):
    """Raised inside a ``tool_*`` method to report a failed call to the agent.

    The message becomes the observation (``"Error: <message>"``); the episode goes on.
    """


class IllegalMove(SpadeError):
    """Raised inside :meth:`TextGame._move` when a player's move is not legal.

    The player loses its turn and sees the message in its next observation.
    """


class StepTimeout(SpadeError, TimeoutError):
    """Trusted, in-process environment code ran past its wall-clock deadline.

    Raised by :func:`spade_envs.agent.deadline.deadline` through ``SIGALRM``; it stops
    Python-level loops and sleeps, not a single long C call (only the sandbox can).
    """


class SandboxError(SpadeError):
    """Something went wrong running environment code in the sandbox."""


class SandboxTimeout(SandboxError, TimeoutError):
    """A sandboxed call exceeded its wall-clock budget; the worker was killed."""


class SandboxCrashed(SandboxError):
    """The sandbox worker died (killed by a limit, a signal, or the code itself)."""


class SandboxProtocolError(SandboxError):
    """The worker sent something that is not a valid answer (too large, malformed)."""


class SandboxBroken(SandboxError):
    """The sandboxed environment was killed earlier and cannot be used any more."""


class SandboxUnavailable(SandboxError):
    """The requested isolation cannot be provided on this machine."""


class SandboxStartFailed(SandboxCrashed):
    """A worker died before it was ready, so before any environment code ran in it.

    The machine's fault, never the environment's: the validator raises it instead of
    reporting the environment as invalid.
    """


class UntrustedCodeError(SandboxError):
    """Code that is not a packaged seed was asked to run outside the sandbox.

    In-process execution (``isolation="none"``) of designer-written or imported code
    needs the caller's explicit ``trust_code=True`` (``--trust-code`` on the CLI).
    """


class EnvCodeError(SandboxError):
    """The environment's own code raised an exception inside the sandbox.

    Attributes:
        exc_type: Name of the exception class raised in the worker.
        remote_traceback: The traceback text from the worker (for repair prompts).
    """

    def __init__(self, message: str, *, exc_type: str = "", remote_traceback: str = ""):
        super().__init__(message)
        self.exc_type = exc_type
        self.remote_traceback = remote_traceback


class HintUnavailable(EnvCodeError):
    """The twin that answers ``hint()`` (a fresh worker replaying the episode) failed or
    ran past its deadline. The episode being played is untouched and goes on."""
