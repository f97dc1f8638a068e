"""Duck-typed environments: a class named ``*Env`` with ``reset``/``step``, as the SPADE code's
designers write them, adapted to the :class:`TextEnv` protocol.

The wrapped class may return ``obs`` or ``(obs, info)`` from ``reset(seed=None)`` and
``(obs, reward, done, info)`` or ``(obs, reward, terminated, truncated, info)`` from
``step(action)``. Because such code often draws from the module-level ``random``,
the adapter seeds it from the episode seed before ``reset`` and ``step``, so the
same seed still gives the same episode.
"""

from __future__ import annotations

import inspect
import random

from ..error import EnvContractError
from .text_env import StepResult, TextEnv

__all__ = ["is_duck_env_class", "duck_env_class"]


def is_duck_env_class(obj: object) -> bool:
    """A class named ``*Env`` (not a protocol class) with ``reset`` and ``step`` methods."""
    return (
        isinstance(obj, type)
        and obj.__name__.endswith("Env")
        and callable(getattr(obj, "reset", None))
        and callable(getattr(obj, "step", None))
        and not issubclass(obj, TextEnv)
    )


def duck_env_class(inner: type) -> type:
    """A :class:`TextEnv` subclass, named like ``inner``, that drives an ``inner`` instance."""
    accepts_seed = "seed" in inspect.signature(inner.reset).parameters

    class Adapter(TextEnv):
        skill = str(getattr(inner, "skill", "general"))
        description = str(getattr(inner, "description", inner.__doc__ or ""))
        max_turns = int(getattr(inner, "max_turns", 20))
        reward_range = tuple(getattr(inner, "reward_range", (0.0, 1.0)))

        def _reset(self) -> str:
            seed = self.rng.randrange(2**31)
            random.seed(seed)
            self._stream = random.Random(seed)
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
                observation, reward, done, info = result
            else:
                observation, reward, terminated, truncated, info = result
                done = terminated or truncated
            return observation, reward, bool(done), info if isinstance(info, dict) else {}

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
            # The SPADE code's solution() returns the bare answer of a one-shot puzzle;
            # the action that submits it is that answer in \boxed{}.
            answer = str(answer)
            if any(mark in answer for mark in ("\\boxed{", "<answer>", "<tool_call>")):
                return [answer]
            return [f"\\boxed{{{answer}}}"]

    Adapter.__name__ = Adapter.__qualname__ = inner.__name__
    Adapter.__module__ = inner.__module__
    Adapter.wrapped = inner
    return Adapter
