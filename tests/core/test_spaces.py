from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from spade_envs import UnicodeText
from spade_envs.core.spaces import TextObservation


def test_contains_any_unicode_within_length():
    space = UnicodeText(10)
    assert space.contains("a b, c!\n") and space.contains("漢字😀\x00") and space.contains("")
    assert not space.contains("x" * 11)
    assert not space.contains(b"bytes") and not space.contains(3)


def test_min_length_is_respected():
    assert not UnicodeText(5, min_length=1).contains("")


def test_gymnasium_text_rejects_what_unicode_text_accepts():
    assert not gym.spaces.Text(20).contains("hello world")
    assert UnicodeText(20).contains("hello world")


def test_sample_is_seeded_and_varied():
    a = [UnicodeText(100, seed=3).sample() for _ in range(1)]
    b = [UnicodeText(100, seed=3).sample() for _ in range(1)]
    assert a == b
    space = UnicodeText(100, seed=5)
    samples = [space.sample() for _ in range(200)]
    assert all(space.contains(s) for s in samples)
    joined = "".join(samples)
    assert any(not c.isascii() for c in joined) and " " in joined and "\x00" in joined


def test_batch_space_for_vector_envs():
    batched = batch_space(UnicodeText(50), 3)
    assert isinstance(batched, gym.spaces.Tuple) and len(batched) == 3


def test_text_observation_is_a_str_with_dtype():
    obs = TextObservation("hi")
    assert obs == "hi" and isinstance(obs, str) and obs.dtype == np.dtype(str)


def test_async_vector_env_carries_any_unicode_through_shared_memory():
    from tests.core.test_text_env import Counter

    vec = gym.vector.AsyncVectorEnv([lambda: Counter(upper=3) for _ in range(2)])
    try:
        observations, _ = vec.reset(seed=0)
        assert observations == ("Guess 1..3", "Guess 1..3")
        observations, *_ = vec.step(("\\boxed{9}", "ü漢😀"))
        assert observations == ("no", "no") and isinstance(observations, tuple)
    finally:
        vec.close()
