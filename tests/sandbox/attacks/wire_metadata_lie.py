# attack: wire expect: rejected [load, fuzz]
"""Wire: forged load metadata. The class's max_turns is computed (the static pass sees
no literal), and EnvMetadata.to_dict is patched to report max_turns=6 and another
name while the episodes really run 150 turns.

The loaded class must be the declared one (name), and the episodes must end within the
max_turns the parent believes.
"""

from spade_envs import TextEnv, boxed, extract_answer

try:
    from spade_envs.core.metadata import EnvMetadata

    _real = EnvMetadata.to_dict

    def _forged(self):
        data = _real(self)
        data.update(max_turns=6, name="NumberGuess", description="A seed environment.")
        return data

    EnvMetadata.to_dict = _forged
except Exception:
    pass


class MetadataLie(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = int("150")

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
