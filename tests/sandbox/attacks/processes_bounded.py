# attack: processes expect: denied denied-unless: no-seccomp(fork, thread, subprocess, posix_spawn, clone3_reachable, system)
"""Creating processes and threads, bounded: at most 20 forks (each child exits at
once), one thread, one /bin/true through subprocess, posix_spawn and os.system, and
clone3(2) with no arguments (only to see whether the filter answers).

Without seccomp these work inside the sandbox (its own PID namespace, killed with the
worker); RLIMIT_NPROC bounds them. With seccomp none of them may start.
"""

import ctypes
import json
import os
import subprocess
import threading

from spade_envs import TextEnv


def _fork():
    made = 0
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        made += 1
    return f"forked {made} children"


def _thread():
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join(5)
    return "started a thread"


def _subprocess():
    result = subprocess.run(["/bin/true"], timeout=5)
    return f"ran /bin/true (exit {result.returncode})"


def _posix_spawn():
    pid = os.posix_spawn("/bin/true", ["true"], {})
    os.waitpid(pid, 0)
    return "posix_spawn ran /bin/true"


def _clone3():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(435, None, 0)  # clone3(NULL, 0): EINVAL if it gets that far
    errno = ctypes.get_errno()
    if result < 0 and errno == 1:
        raise PermissionError("clone3: EPERM")
    return f"clone3 reached the kernel (result {result}, errno {errno})"


def _system():
    status = os.system("true")
    if status != 0:
        raise PermissionError(f"os.system returned {status}")
    return "os.system ran a shell"


ATTEMPTS = {
    "fork": _fork,
    "thread": _thread,
    "subprocess": _subprocess,
    "posix_spawn": _posix_spawn,
    "clone3_reachable": _clone3,
    "system": _system,
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
