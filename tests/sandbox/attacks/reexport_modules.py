# attack: forgery expect: denied denied-unless: no-seccomp(run_program, run_second_python) no-bwrap(read_git_config, list_repository)
"""Re-exports through package modules: os, subprocess, shutil, signal and tempfile taken
from spade_envs.sandbox.isolation, .process and spade_envs.validation.validator
instead of being imported. The static filter refuses such imports; open_env has no
static filter at all, so the sandbox must hold whatever the module imports.

Without seccomp a program runs (inside the sandbox); without bubblewrap the repository
is readable (world-readable files).
"""

import json

from spade_envs import TextEnv
from spade_envs.sandbox.isolation import os, shutil, subprocess
from spade_envs.sandbox.process import signal, tempfile
from spade_envs.validation.validator import sys


def _run():
    result = subprocess.run(["/bin/true"], timeout=5)
    return f"ran /bin/true (exit {result.returncode})"


def _git_config():
    with open("/work/main/.git/config") as handle:
        return f"read .git/config: {handle.read(60)!r}"


def _list_repository():
    entries = os.listdir("@@CWD@@")
    if ".git" not in entries:
        raise PermissionError(f"the repository shows only {sorted(entries)[:8]}")
    return f"lists {sorted(entries)[:8]}"


def _write_package():
    path = os.path.join(os.path.dirname(os.path.dirname(tempfile.__file__)), "@@MARK_NAME@@")
    shutil.copyfile("/etc/hostname", "@@PACKAGE_MARK@@")
    return f"copied into the package ({path})"


def _signal_parent():
    os.kill(int("@@PARENT_PID@@"), signal.SIG_DFL)
    return "signalled the test process"


def _exec_python():
    result = subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, timeout=5)
    if result.returncode != 0:
        raise PermissionError(result.stderr.decode()[-120:])
    return "ran a second Python"


ATTEMPTS = {
    "run_program": _run,
    "read_git_config": _git_config,
    "list_repository": _list_repository,
    "write_package": _write_package,
    "signal_parent": _signal_parent,
    "run_second_python": _exec_python,
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
