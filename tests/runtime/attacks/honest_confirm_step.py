# attack: honest_delayed_reward expect: neutralized
"""A control, not an attack (it once was quarantined by a counterfactual that replaced only the rewarded step). Honest: answer, then confirm. The reward comes on the confirming turn, for the answer
given on the first; the confirmation's wording does not matter."""

from spade_envs import TextEnv


class ConfirmGuess(TextEnv):
    skill = "math"
    description = "Guess the secret number from 1 to 1000, then confirm."
    max_turns = 2

    def _reset(self):
        self.secret = self.rng.randint(1, 1000)
        self.answer = None
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}."

    def _step(self, action):
        if self.answer is None:
            start = action.rfind("\\boxed{")
            self.answer = action[start + 7 :].split("}")[0].strip() if start >= 0 else ""
            self.first = action
            return "Noted. Reply with anything else to submit.", 0.0, False
        won = self.answer == str(self.secret) and action != self.first
        return ("Correct!" if won else "Wrong."), float(won), True

    def hint(self):
        return "It is odd." if self.secret % 2 else "It is even."

    def solution(self):
        return [f"\\boxed{{{self.secret}}}", "submit"]
