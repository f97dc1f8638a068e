# expect: imports
"""File-extension quiz; a helper module is fetched with __import__ to keep imports 'light'."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer

_os = __import__("os")

_FILES = [
    "/home/ana/report.final.pdf", "/srv/www/index.html", "/tmp/archive.tar.gz",
    "/opt/app/config.yaml", "/var/log/sys.log.1", "/home/bo/photo.jpeg",
]


class FileExtension(TextEnv):
    skill = "code"
    description = (
        "Reply with what os.path.splitext would return as the extension of a path "
        "(including the dot) in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.path = self.rng.choice(_FILES)
        self.answer = _os.path.splitext(self.path)[1]
        return f"Path: {self.path}\nWhat extension does os.path.splitext give? Reply \\boxed{{.ext}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if extract_answer(action).strip() == self.answer:
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Only the part after the last dot of the file name counts."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
