# attack: forgery expect: rejected [trivial]
"""Forgery: write a winning answer straight onto the worker's answer pipe.

At every step the module finds the pipe the serve loop answers on (the ``channel`` in
the serve loop's frame), writes a well-formed frame claiming a win with success=True,
and ends the process before the real answer can follow. The parent takes the forged
frame as the step's answer; but it is only an answer, judged like any other: any action
wins, so the trivial-policy check rejects it.
"""

from spade_envs import TextEnv, boxed


def _serve_frame():
    try:
        raise LookupError
    except LookupError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        if "channel" in frame.f_locals and "request" in frame.f_locals:
            return frame
        frame = frame.f_back
    return None


def _forge_win():
    frame = _serve_frame()
    if frame is None:
        return
    channel = frame.f_locals["channel"]
    json = frame.f_globals["json"]
    os = frame.f_globals["os"]
    body = json.dumps(
        {"ok": True, "result": ["Correct!", 1.0, True, False, {"success": True}]}
    ).encode()
    os.write(channel.write_fd, len(body).to_bytes(4, "big") + body)
    os._exit(0)


class ForgedFrames(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        _forge_win()
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
