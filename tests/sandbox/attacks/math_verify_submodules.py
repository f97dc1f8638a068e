# attack: forgery expect: denied denied-unless: all(sympify_write_host_tmp) no-bwrap(sympify_read_canary) no-seccomp(sympify_run_program, sympify_write_host_tmp, utils_os_system)
"""math_verify as a way around the module list: its submodules hold what the static
filter refuses to import. ``math_verify.parser.sympy.sympify`` runs a string as Python
(sympy's parser evaluates with the builtins ``exec``, ``open`` and ``__import__`` in
scope), ``math_verify.utils.os`` is ``os``. The static filter allows only ``parse``,
``verify`` and the extraction configs of the top-level package and refuses every name
used here (``tests/validation/test_math_verify.py``); ``open_env`` has no static filter,
so the sandbox must hold on its own.

Without bubblewrap the canary next to the test's directory is world-readable; without
seccomp a program runs inside bubblewrap (as ``processes_bounded`` documents). The network
namespace refuses the connection. Under bubblewrap /tmp is the worker's own, so the write
lands there (the runner checks that no mark appeared in the host's /tmp); without it,
seccomp refuses opening a file for writing.
"""

import json

import math_verify

from spade_envs import TextEnv


def _python(code):
    """Run ``code`` through sympify: ``exec`` returns None, so success gives 1."""
    result = math_verify.parser.sympy.sympify(f"(exec({code!r}) or 1)")
    if result != 1:
        raise PermissionError(f"sympify gave {result!r}")


def _connect():
    _python(
        "import socket\n"
        "with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:\n"
        "    sock.settimeout(3)\n"
        "    sock.connect(('127.0.0.1', int('@@TCP_PORT@@')))"
    )
    return "connected to the runner's listener"


def _read_canary():
    _python(
        "text = open('@@CANARY_FILE@@', encoding='utf-8').read()\n"
        "if '@@CANARY_SECRET@@' not in text:\n"
        "    raise PermissionError('readable but without the secret')"
    )
    return "read the canary through sympify"


def _run_program():
    _python("import subprocess\nsubprocess.run(['/bin/true'], check=True)")
    return "ran /bin/true through sympify"


def _write_mark():
    _python("open('@@HOST_TMP_MARK@@', 'w').write('written through sympify')")
    return "wrote a file in /tmp"


def _os_system():
    status = math_verify.utils.os.system("true")
    if status != 0:
        raise PermissionError(f"system() returned {status}")
    return "math_verify.utils.os.system ran"


def _signal_parent():
    math_verify.utils.os.kill(int("@@PARENT_PID@@"), 0)
    return "signalled the test process"


ATTEMPTS = {
    "sympify_connect_runner_tcp": _connect,
    "sympify_read_canary": _read_canary,
    "sympify_run_program": _run_program,
    "sympify_write_host_tmp": _write_mark,
    "utils_os_system": _os_system,
    "utils_os_signal_parent": _signal_parent,
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
