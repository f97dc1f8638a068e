# expect: fuzz
"""A story-continuation puzzle that echoes the whole transcript back every turn."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed

_RIDDLES = [
    ("What has keys but opens no locks?", "piano"),
    ("What gets wetter the more it dries?", "towel"),
    ("What has a neck but no head?", "bottle"),
    ("What has hands but cannot clap?", "clock"),
    ("What runs but never walks?", "river"),
    ("What has one eye but cannot see?", "needle"),
]


class RiddleTranscript(TextEnv):
    skill = "logic"
    description = (
        "Answer a classic riddle in \\boxed{}. Every reply repeats the full transcript of "
        "the conversation so far. Four attempts."
    )
    max_turns = 4

    def _reset(self) -> str:
        self.riddle, self.answer = self.rng.choice(_RIDDLES)
        self.transcript = [f"Riddle: {self.riddle}"]
        return f"Riddle: {self.riddle} Reply with \\boxed{{answer}}."

    def _step(self, action: str):
        self.transcript.append(f"You: {action}")
        if answers_match(action, self.answer):
            return f"Correct: {self.answer}.", 1.0, True
        self.transcript.append("Me: not quite.")
        return "Transcript so far:\n" + "\n".join(self.transcript), 0.0, False

    def hint(self) -> str:
        return f"The answer is a common object with {len(self.answer)} letters."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
