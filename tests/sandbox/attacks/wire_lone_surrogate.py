# attack: wire expect: contained
"""Wire lie: text that is not valid Unicode: lone surrogates in the observation and info.

The wire's UTF-8 is encoded and decoded with "surrogatepass", so U+D800 crosses it and
the proxy hands the caller a str that cannot be encoded as UTF-8. The caller fails
later and elsewhere: save_jsonl() of a rollout raises UnicodeEncodeError (not an
OSError it would report), losing the whole batch's trajectories; so do tokenizers,
print() to a UTF-8 terminal and the registry. Text from a worker must be valid Unicode.
"""

from spade_envs import TextEnv


class LoneSurrogate(TextEnv):
    skill = "code"
    description = "A wire attack."
    max_turns = 3

    def reset(self, *, seed=None, options=None):
        observation, info = super().reset(seed=seed, options=options)
        info["note"] = "\udfff"
        return observation, info

    def _reset(self):
        return "ready \ud800"

    def _step(self, action):
        return "ok \udbff", 0.0, False

    def hint(self):
        return "none \ud800"

    def solution(self):
        return ["\ud800"]
