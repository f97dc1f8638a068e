# attack: forgery expect: denied denied-unless: all(subs_write_host_tmp) no-bwrap(equals_read_canary) no-seccomp(subs_run_program, subs_write_host_tmp)
"""What the static filter cannot see: the values math_verify returns. ``parse()`` gives
sympy expressions, and their methods turn a string argument into an expression with
sympy's parser, which evaluates it as Python with ``exec``, ``open`` and ``__import__``
in scope: ``parse("$1$")[0].equals("...")`` and ``.subs(1, "...")`` run any code. This
module uses only ``from math_verify import parse`` and names no forbidden call (the
code is in strings), so it passes the static checks: the static pass is a filter, the
sandbox is the wall, and it must hold here in every configuration.

Without bubblewrap the canary next to the test's directory is world-readable; without
seccomp a program runs inside bubblewrap (as ``processes_bounded`` documents). The network
namespace refuses the connection. Under bubblewrap /tmp is the worker's own, so the write
lands there (the runner checks that no mark appeared in the host's /tmp); without it,
seccomp refuses opening a file for writing.
"""

import json

from math_verify import parse

from spade_envs import TextEnv

_ONE = parse("$1$")[0]


def _equals(code):
    """``exec`` returns None, so success compares 1 with 1."""
    if _ONE.equals(f"(exec({code!r}) or 1)") is not True:
        raise PermissionError("equals() did not run the code")


def _subs(code):
    if _ONE.subs(1, f"(exec({code!r}) or 2)") != 2:
        raise PermissionError("subs() did not run the code")


def _connect():
    _equals(
        "import socket\n"
        "with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:\n"
        "    sock.settimeout(3)\n"
        "    sock.connect(('127.0.0.1', int('@@TCP_PORT@@')))"
    )
    return "connected to the runner's listener"


def _read_canary():
    _equals(
        "text = open('@@CANARY_FILE@@', encoding='utf-8').read()\n"
        "if '@@CANARY_SECRET@@' not in text:\n"
        "    raise PermissionError('readable but without the secret')"
    )
    return "read the canary through equals()"


def _run_program():
    _subs("import subprocess\nsubprocess.run(['/bin/true'], check=True)")
    return "ran /bin/true through subs()"


def _write_mark():
    _subs("open('@@HOST_TMP_MARK@@', 'w').write('written through subs()')")
    return "wrote a file in /tmp"


def _signal_parent():
    _equals("import os\nos.kill(int('@@PARENT_PID@@'), 0)")
    return "signalled the test process"


ATTEMPTS = {
    "equals_connect_runner_tcp": _connect,
    "equals_read_canary": _read_canary,
    "subs_run_program": _run_program,
    "subs_write_host_tmp": _write_mark,
    "equals_signal_parent": _signal_parent,
}


class Probe(TextEnv):
    skill = "code"
    description = "An attack probe: every attempt runs in reset()."
    max_turns = 1

    def _reset(self):
        self.why = {}
        verdicts = {}
        for name, attempt in ATTEMPTS.items():
            try:
                outcome = attempt()
            except BaseException as exc:  # SystemExit from a failed exec included
                verdicts[name] = "denied"
                self.why[name] = f"{type(exc).__name__}: {exc}"[:200]
            else:
                verdicts[name] = f"ESCAPED: {outcome}"[:300]
        return json.dumps(verdicts)

    def _reset_info(self):
        return {"turn": 0, "why": getattr(self, "why", {})}

    def _step(self, action):
        return "done", 0.0, True

    def hint(self):
        return "none"

    def solution(self):
        return ["done"]
