# expect: no_input
"""Caesar decoding quiz with a manual play loop at the bottom that reads input()."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed

_WORDS = ["harbor", "crystal", "lantern", "orchard", "whisper", "granite", "meadow"]


class ShiftWord(TextEnv):
    skill = "pattern"
    description = (
        "A single word was encrypted with a Caesar shift of 3. Decode it and reply with the "
        "word in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.word = self.rng.choice(_WORDS)
        self.cipher = "".join(chr((ord(c) - 97 + 3) % 26 + 97) for c in self.word)
        return f"Decode (shift 3): {self.cipher}. Reply with \\boxed{{word}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.word):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"Move each letter three places back; the first letter is '{self.word[0]}'."

    def solution(self) -> list[str]:
        return [boxed(self.word)]


if __name__ == "__main__":
    env = ShiftWord()
    observation, _ = env.reset()
    done = False
    while not done:
        print(observation)
        observation, reward, terminated, truncated, _ = env.step(input("> "))
        done = terminated or truncated
    print(observation, reward)
