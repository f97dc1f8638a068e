# attack: proc expect: denied denied-unless: no-bwrap(host_processes_visible, parent_cmdline, parent_status)
"""/proc of other processes: how many are visible, the test process's command line,
environment (API keys live there), memory, file descriptors, root and working
directory, and pid 1's environment.

Without bubblewrap there is no PID namespace: other processes, their command lines and
status are visible to any uid (hidepid is not set); their environment, memory and
descriptors stay closed to the worker's own uid.
"""

import json
import os

from spade_envs import TextEnv

PARENT = int("@@PARENT_PID@@")


def _count():
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    if len(pids) <= 5:
        raise PermissionError(f"only {len(pids)} processes visible")
    return f"{len(pids)} processes visible"


def _read(path):
    def attempt():
        with open(path, "rb") as handle:
            return f"read {path}: {handle.read(120)!r}"

    return attempt


def _listing(path):
    def attempt():
        return f"{path} lists {sorted(os.listdir(path))[:8]}"

    return attempt


def _readlink(path):
    def attempt():
        return f"{path} -> {os.readlink(path)}"

    return attempt


ATTEMPTS = {
    "host_processes_visible": _count,
    "parent_cmdline": _read(f"/proc/{PARENT}/cmdline"),
    "parent_status": _read(f"/proc/{PARENT}/status"),
    "parent_environ": _read(f"/proc/{PARENT}/environ"),
    "parent_mem": _read(f"/proc/{PARENT}/mem"),
    "parent_fds": _listing(f"/proc/{PARENT}/fd"),
    "parent_root": _listing(f"/proc/{PARENT}/root/"),
    "parent_cwd": _readlink(f"/proc/{PARENT}/cwd"),
    "pid1_environ": _read("/proc/1/environ"),
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
