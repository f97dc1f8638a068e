from __future__ import annotations

import pickle

import gymnasium as gym
import pytest

from spade_envs import EnvContractError, InvalidKnobError, TextEnv, boxed, describe, extract_answer
from spade_envs.core.episodes import play_episode


class Counter(TextEnv):
    skill = "math"
    description = "Say the hidden number; feedback tells the distance."
    max_turns = 4
    knobs = {"upper": 10, "scale": 1.0}

    def _reset(self):
        self.secret = self.rng.randint(1, self.upper)
        return f"Guess 1..{self.upper}"

    def _step(self, action):
        answer = extract_answer(action)
        if answer == str(self.secret):
            return "yes", 1.0, True
        return "no", 0.0, False, {"guess": answer}

    def hint(self):
        return "small" if self.secret <= self.upper // 2 else "large"

    def solution(self):
        return [boxed(self.secret)]


class BadReward(Counter):
    def _step(self, action):
        return "x", 2.0, False


class NanReward(Counter):
    def _step(self, action):
        return "x", float("nan"), False


class WrongTuple(Counter):
    def _step(self, action):
        return "x", 0.0


class BytesObservation(Counter):
    def _reset(self):
        return b"bytes"


def test_is_a_gymnasium_env_with_text_spaces():
    env = Counter()
    assert isinstance(env, gym.Env)
    observation, info = env.reset(seed=1)
    assert env.observation_space.contains(observation) and info == {"turn": 0}


def test_same_seed_same_episode_and_unseeded_reset_continues_the_stream():
    env = Counter(upper=1000)
    env.reset(seed=5)
    first = env.secret
    env.reset()
    after = env.secret
    env.reset(seed=5)
    assert env.secret == first
    env.reset()
    assert env.secret == after


def test_truncates_at_max_turns_and_reports_success():
    env = Counter()
    episode = play_episode(env, ["\\boxed{-1}"] * 10, seed=0)
    assert len(episode.transitions) == 4
    assert episode.transitions[-1].truncated and not episode.transitions[-1].terminated
    assert not episode.won


def test_win_sets_success_in_info():
    env = Counter()
    env.reset(seed=2)
    *_, info = env.step(env.solution()[0])
    assert info["success"] is True and env.won


def test_step_after_the_end_does_not_raise_and_gives_no_reward():
    env = Counter()
    env.reset(seed=2)
    env.step(env.solution()[0])
    observation, reward, terminated, truncated, info = env.step(env.solution()[0])
    assert (observation, reward, terminated, truncated) == ("yes", 0.0, True, False)
    assert info["episode_over"] is True


def test_non_str_actions_are_coerced():
    env = Counter()
    env.reset(seed=0)
    observation, *_ = env.step(None)
    assert observation == "no"


def test_knobs_override_defaults_and_bad_knobs_are_clear():
    assert Counter(upper=3).upper == 3
    assert Counter(scale=2).scale == 2.0
    with pytest.raises(InvalidKnobError, match=r"no difficulty knob 'uper'.*Did you mean 'upper'"):
        Counter(uper=3)
    with pytest.raises(InvalidKnobError, match=r"Knob 'upper' of Counter must be int"):
        Counter(upper="3")
    with pytest.raises(InvalidKnobError, match="must be int"):
        Counter(upper=True)


def test_render_mode_is_checked():
    with pytest.raises(EnvContractError, match="render_mode='human' is not supported"):
        Counter(render_mode="human")


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (BadReward, r"reward 2.0, outside reward_range \(0.0, 1.0\)"),
        (NanReward, "reward nan"),
        (WrongTuple, r"must return \(observation, reward, terminated\)"),
    ],
)
def test_contract_violations_name_the_method(cls, message):
    env = cls()
    env.reset(seed=0)
    with pytest.raises(EnvContractError, match=message):
        env.step("x")


def test_reset_must_return_text():
    with pytest.raises(
        EnvContractError, match=r"_reset\(\) must return the first observation as str"
    ):
        BytesObservation().reset(seed=0)


def test_huge_observations_are_clipped():
    class Loud(Counter):
        def _step(self, action):
            return "x" * 100_000, 0.0, False

    env = Loud()
    env.reset(seed=0)
    observation, *_ = env.step("")
    assert len(observation) <= env.max_observation_length and observation.endswith("truncated ...]")


def test_envs_pickle_mid_episode():
    env = Counter(upper=50)
    env.reset(seed=9)
    env.step("\\boxed{0}")
    copy = pickle.loads(pickle.dumps(env))
    assert copy.secret == env.secret and copy.turn == 1
    assert copy.step(copy.solution()[0])[1] == 1.0


def test_describe_reads_class_metadata():
    meta = describe(Counter)
    assert (meta.name, meta.kind, meta.skill, meta.max_turns) == ("Counter", "text", "math", 4)
    assert meta.knobs == {"upper": 10, "scale": 1.0}
    assert meta.to_dict()["reward_range"] == [0.0, 1.0]


def test_missing_hooks_say_what_to_implement():
    class Empty(TextEnv):
        pass

    with pytest.raises(NotImplementedError, match=r"Empty must implement _reset\(\) -> str"):
        Empty().reset()


def test_vector_env_steps_text_envs():
    envs = gym.vector.SyncVectorEnv([lambda: Counter(upper=3) for _ in range(3)])
    observations, _ = envs.reset(seed=0)
    assert len(observations) == 3 and all(isinstance(o, str) for o in observations)
    observations, rewards, *_ = envs.step(("\\boxed{1}", "\\boxed{2}", "\\boxed{3}"))
    assert len(rewards) == 3
    envs.close()


def test_overriding_reset_with_super_reset_for_seeding():
    class Direct(TextEnv):
        max_turns = 2

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.secret = self.rng.randint(1, 1000)
            return f"secret drawn ({self.turn})", {}

        def _step(self, action):
            return "ok", 0.0, False

    env = Direct()
    first = env.reset(seed=4)
    secret = env.secret
    assert first == ("secret drawn (0)", {})
    env.reset(seed=4)
    assert env.secret == secret
