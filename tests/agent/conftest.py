"""Shared pieces of the agent tests: a scripted deterministic chat model, a registry in
a temporary SQLite file, and small environments that hang or crash on purpose."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from spade_envs.llm.base import ChatModel, Completion


def guess_reply(conversation, seed):
    """A reply that depends only on the conversation and the seed (like a seeded model)."""
    rng = random.Random(f"{seed}|{len(conversation)}|{conversation[-1]['content']}")
    system = conversation[0]["content"]
    if "<tool_call>" in system:
        if len(conversation) <= 2:
            return '<tool_call>{"name": "select", "arguments": {"table": "products"}}</tool_call>'
        return f"<answer>city {rng.randint(1, 3)}</answer>"
    return f"My guess: \\boxed{{{rng.randint(1, 100)}}}"


class ScriptedModel(ChatModel):
    """A deterministic chat model: ``reply(conversation, seed)`` makes each reply.

    Records the size of every batch it is asked for, so tests can check batching.
    """

    name = "scripted"

    def __init__(self, reply: Callable = guess_reply):
        self.reply = reply
        self.batches: list[int] = []

    def generate(self, conversations, params=None):
        self.batches.append(len(conversations))
        out = []
        for i, conversation in enumerate(conversations):
            seed = params.seed_for(i) if params is not None else None
            made = self.reply(conversation, seed)
            if isinstance(made, Completion):
                out.append(made)
                continue
            prompt = tuple(len(m["content"]) for m in conversation)
            tokens = tuple(ord(c) % 97 for c in made[:40])
            out.append(
                Completion(
                    text=made,
                    token_ids=tokens,
                    logprobs=tuple(-0.1 * (k + 1) for k in range(len(tokens))),
                    prompt_token_ids=prompt,
                )
            )
        return out


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """An empty registry in a temporary SQLite file, also the default (SPADE_REGISTRY_URL)."""
    from spade_envs.registry import Registry

    url = f"sqlite:///{tmp_path / 'registry.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    reg = Registry(url)
    yield reg
    reg.close()


HANGING_ENV = """
from spade_envs import TextEnv


class HangingEnv(TextEnv):
    skill = "logic"
    description = "Loops forever on its second step."
    max_turns = 5

    def _reset(self):
        return "Say anything. Answer with \\\\boxed{x}."

    def _step(self, action):
        if self.turn >= 2:
            while True:
                pass
        return "Go on.", 0.0, False

    def hint(self):
        return "Any answer will do."

    def solution(self):
        return ["x"]
"""

CRASHING_ENV = """
import os

from spade_envs import TextEnv


class CrashingEnv(TextEnv):
    skill = "logic"
    description = "Raises on its first step (or, as EXITING_ENV, kills its own process)."
    max_turns = 5
    hard = False

    def _reset(self):
        return "Say anything. Answer with \\\\boxed{x}."

    def _step(self, action):
        if self.hard:
            os._exit(3)
        raise RuntimeError("boom")

    def hint(self):
        return "Any answer will do."

    def solution(self):
        return ["x"]
"""

EXITING_ENV = CRASHING_ENV.replace("hard = False", "hard = True")

BAD_REWARD_ENV = """
from spade_envs import TextEnv


class BadRewardEnv(TextEnv):
    skill = "logic"
    description = "Its step answers a reward that is not a finite number."
    max_turns = 5

    def _reset(self):
        return "Say anything. Answer with \\\\boxed{x}."

    def _step(self, action):
        return "Go on.", 0.0, False

    def step(self, action):  # past TextEnv's own reward check, as a duck-typed env would be
        observation, _reward, terminated, truncated, info = super().step(action)
        return observation, REWARD, terminated, truncated, info

    def hint(self):
        return "Any answer will do."

    def solution(self):
        return ["x"]
"""


def bad_reward_env(reward: str) -> str:
    """BAD_REWARD_ENV answering ``reward`` (Python source, e.g. ``float('nan')``)."""
    return BAD_REWARD_ENV.replace("REWARD,", f"{reward},")


LYING_ENV = """
from spade_envs import TextEnv


class LyingEnv(TextEnv):
    skill = "logic"
    description = "Ends at once, claiming success whatever it scored."
    max_turns = 1

    def _reset(self):
        return "Say anything. Answer with \\\\boxed{x}."

    def _step(self, action):
        return "Over.", REWARD, True

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        info["success"] = CLAIM
        return observation, reward, terminated, truncated, info

    def hint(self):
        return "Any answer will do."

    def solution(self):
        return ["x"]
"""


def lying_env(reward: float, claim: bool) -> str:
    """LYING_ENV scoring ``reward`` and setting ``info["success"] = claim``."""
    return LYING_ENV.replace("REWARD,", f"{reward!r},").replace("= CLAIM", f"= {claim!r}")
