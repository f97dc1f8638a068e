"""Duck-typed environments: a class named ``*Env`` with ``reset``/``step``, as the SPADE code's
designers write them (the ``spade`` dialect, :mod:`.dialect`), adapted to the
:class:`TextEnv` protocol.

The wrapped class may return ``obs`` or ``(obs, info)`` from ``reset(seed=None)`` and
``(obs, reward, done, info)`` or ``(obs, reward, terminated, truncated, info)`` from
``step(action)``. It is played as SPADE plays it:

- **seeds**: ``reset(seed=s)`` calls the game's ``reset(seed=s)`` with the same ``s``
  (after seeding the module-level ``random`` with ``s``, which such code often draws
  from), so episode ``s`` here is SPADE's episode ``s``. ``reset()`` without a seed
  draws one from the adapter's generator; each step reseeds ``random`` from a stream
  of that seed, so replaying an episode replays its draws;
- **truncation** stays truncation (the game's flag, or ``max_turns``);
- **rewards** are SPADE's: each step's within the class's ``reward_range`` (SPADE's
  ``[-10, 10]`` by default); a win is SPADE's (``win_rule = "final_reward"``: the
  episode terminates with a reward above zero);
- **max_turns** as SPADE's loader sets it: the class's own, else its ``__init__``
  default, else :data:`SPADE_MAX_TURNS`;
- **solution()** may return a list of actions, the bare answer of a one-shot puzzle
  (played as ``\\boxed{answer}``), or SPADE's prose tool-use form (``1. cd(path="a")
  … ANSWER: x``, turned into tool calls by :func:`~.spade_tool.prose_actions`). A prose
  solution not in that form raises :class:`UnprovenSolution`: the version is stored
  ``unvalidated`` (unproven), not rejected for that alone.
"""

from __future__ import annotations

import inspect
import random

from ..error import EnvContractError
from .spade_tool import ToolUseBaseEnv, prose_actions
from .text_env import StepResult, TextEnv

__all__ = [
    "SPADE_MAX_TURNS",
    "SPADE_REWARD_RANGE",
    "UnprovenSolution",
    "duck_env_class",
    "is_duck_env_class",
    "spade_max_turns",
]

#: ``max_turns`` of a game that declares none (SPADE's ToolUseBaseEnv default).
SPADE_MAX_TURNS = 10
#: Per-step rewards SPADE's loader accepts.
SPADE_REWARD_RANGE = (-10.0, 10.0)


class UnprovenSolution(EnvContractError):
    """``solution()`` gave prose that is not in SPADE's numbered-call form."""


def is_duck_env_class(obj: object) -> bool:
    """A class named ``*Env`` (not a protocol class) with ``reset`` and ``step`` methods."""
    return (
        isinstance(obj, type)
        and obj.__name__.endswith("Env")
        and callable(getattr(obj, "reset", None))
        and callable(getattr(obj, "step", None))
        and not issubclass(obj, TextEnv)
    )


def spade_max_turns(inner: type) -> int:
    """The game's ``max_turns`` as SPADE's loader finds it: a class attribute, else the
    ``__init__`` default, else :data:`SPADE_MAX_TURNS`."""
    declared = getattr(inner, "max_turns", None)
    if isinstance(declared, int) and not isinstance(declared, bool):
        return declared
    try:
        parameter = inspect.signature(inner.__init__).parameters.get("max_turns")
    except (TypeError, ValueError):
        parameter = None
    default = None if parameter is None else parameter.default
    if isinstance(default, int) and not isinstance(default, bool):
        return default
    return SPADE_MAX_TURNS


def duck_env_class(inner: type) -> type:
    """A :class:`TextEnv` subclass, named like ``inner``, that drives an ``inner`` instance."""
    accepts_seed = "seed" in inspect.signature(inner.reset).parameters
    turns = spade_max_turns(inner)
    # A tool game's solution() is always prose (SPADE's tool-use contract).
    tool_game = issubclass(inner, ToolUseBaseEnv)

    class Adapter(TextEnv):
        skill = str(getattr(inner, "skill", "general"))
        description = str(getattr(inner, "description", inner.__doc__ or ""))
        max_turns = turns
        reward_range = tuple(getattr(inner, "reward_range", SPADE_REWARD_RANGE))
        win_rule = "final_reward"

        def reset(self, *, seed=None, options=None):  # type: ignore[no-untyped-def]
            self._seed = seed
            return super().reset(seed=seed, options=options)

        def _reset(self) -> str:
            seed = self._seed if self._seed is not None else self.rng.randrange(2**31)
            random.seed(seed)
            self._stream = random.Random(seed)
            self._truncated = False
            try:
                self.inner = inner(max_turns=turns)
            except TypeError:
                self.inner = inner()
            result = self.inner.reset(seed=seed) if accepts_seed else self.inner.reset()
            observation = result[0] if isinstance(result, tuple) else result
            if not isinstance(observation, str):
                raise EnvContractError(
                    f"{inner.__name__}.reset() must return a str observation (or (obs, info)), "
                    f"got {type(observation).__name__}."
                )
            return observation

        def _step(self, action: str) -> StepResult:
            random.seed(self._stream.randrange(2**31))
            result = self.inner.step(action)
            if not isinstance(result, tuple) or len(result) not in (4, 5):
                raise EnvContractError(
                    f"{inner.__name__}.step() must return (obs, reward, done, info) or "
                    f"(obs, reward, terminated, truncated, info); got {result!r:.80}."
                )
            if len(result) == 4:
                observation, reward, terminated, info = result
            else:
                observation, reward, terminated, truncated, info = result
                # Truncation stays truncation: TextEnv asks _out_of_time() after the step.
                self._truncated = bool(truncated) and not terminated
            return observation, reward, bool(terminated), info if isinstance(info, dict) else {}

        def _out_of_time(self) -> bool:
            return self._truncated

        def _reset_info(self) -> dict:
            info = super()._reset_info()
            # A SPADE tool game lists its tools (set by its reset) as OpenAI schemas: the
            # agent is then told to act with <tool_call>/<answer>, as SPADE's agent is.
            get_tools = getattr(self.inner, "get_tools", None)
            if callable(get_tools):
                tools = get_tools()
                if isinstance(tools, list) and tools:
                    info["tools"] = [t for t in tools if isinstance(t, dict)]
            return info

        def spade_tool_schemas(self) -> list[dict]:
            """The tools a fresh game lists (SPADE's ToolUseBaseEnv resets in __init__)."""
            if not tool_game:
                return []
            try:
                game = inner(max_turns=turns)
            except TypeError:
                game = inner()
            tools = game.get_tools()
            return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []

        def hint(self) -> str:
            method = getattr(self.inner, "hint", None)
            if method is None:
                raise EnvContractError(f"{inner.__name__} has no hint() method.")
            return method()

        def solution(self) -> list[str]:
            method = getattr(self.inner, "solution", None)
            if method is None:
                raise EnvContractError(f"{inner.__name__} has no solution() method.")
            answer = method()
            if isinstance(answer, list | tuple):
                return [str(a) for a in answer]
            answer = str(answer)
            if any(mark in answer for mark in ("\\boxed{", "<tool_call>")) or (
                answer.strip().startswith("<answer>")
            ):
                return [answer]
            if tool_game or "ANSWER:" in answer or _numbered(answer):
                actions = prose_actions(answer)
                if actions is None:
                    raise UnprovenSolution(
                        f"{inner.__name__}.solution() is prose not in SPADE's numbered-call "
                        f'form (1. tool(arg="value") ... ANSWER: x): {answer[:120]!r}'
                    )
                return actions
            # The SPADE code's solution() returns the bare answer of a one-shot puzzle;
            # the action that submits it is that answer in \\boxed{}.
            return [f"\\boxed{{{answer}}}"]

    Adapter.__name__ = Adapter.__qualname__ = inner.__name__
    Adapter.__module__ = inner.__module__
    Adapter.wrapped = inner
    return Adapter


def _numbered(text: str) -> bool:
    """Whether ``text`` starts like SPADE's numbered prose (``1. tool(...)``)."""
    stripped = text.lstrip()
    return stripped[:2] == "1." and "(" in stripped
