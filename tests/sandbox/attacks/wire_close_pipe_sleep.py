# attack: wire expect: contained
"""Wire: close the answer pipe during reset() and stay alive (bounded: 6 s asleep).

The parent reads end-of-file, takes the worker for dead and waits for it to exit. It
must kill it and raise SandboxCrashed, not raise subprocess.TimeoutExpired from its
wait, and not leave the worker running.
"""

import os
import time

from spade_envs import TextEnv


class ClosedPipeSleep(TextEnv):
    skill = "code"
    description = "A wire attack."
    max_turns = 3

    def _reset(self):
        for fd in range(3, 12):
            try:
                if os.fstat(fd).st_mode & 0o170000 == 0o010000:  # a pipe
                    os.close(fd)
            except OSError:
                pass
        time.sleep(6)
        return "never seen"

    def _step(self, action):
        return "ok", 0.0, False

    def hint(self):
        return "none"

    def solution(self):
        return ["x"]
