# attack: launch-dir expect: denied denied-unless: no-bwrap(canary_next_to_cwd, cwd_listing, cwd_pyproject, git_config, git_config_via_venv, runs_dir)
"""Reads of the launching directory: the test's working directory, a secret file the
test created there, the repository's .git/config and runs/ (checkpoints, a registry, a
.env), also reached as a path relative to sys.prefix (the venv is bound, so ``..``
from it must not lead into the repository).

Without bubblewrap the worker sees the host's file system as an unprivileged user:
world-readable files like these are readable. That is what a missing bubblewrap layer
costs (the table in the sandbox documentation says so).
"""

import json
import os
import sys

from spade_envs import TextEnv


def _read(path, needle=None):
    def attempt():
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(4096)
        if needle is not None and needle not in text:
            raise PermissionError(f"{path} readable but without the secret")
        return f"read {path}: {text[:80]!r}"

    return attempt


def _listing(path, visible):
    def attempt():
        entries = os.listdir(path)
        seen = sorted(set(entries) & set(visible))
        if not seen:
            raise PermissionError(f"{path} shows only {sorted(entries)[:10]}")
        return f"{path} lists {seen}"

    return attempt


def _cwd():
    if os.path.realpath(os.getcwd()) != os.path.realpath("@@CWD@@"):
        raise PermissionError(f"the worker runs in {os.getcwd()}")
    return "the worker runs in the launching directory"


ATTEMPTS = {
    "canary_next_to_cwd": _read("@@CANARY_FILE@@", "@@CANARY_SECRET@@"),
    "cwd_listing": _listing("@@CWD@@", [".git", "pyproject.toml", "tests", "README.md"]),
    "cwd_pyproject": _read("@@CWD@@/pyproject.toml"),
    "cwd_dotenv": _read("@@CWD@@/.env"),
    "git_config": _read("/work/main/.git/config"),
    "git_config_via_venv": _read(os.path.join(sys.prefix, "..", ".git", "config")),
    "runs_dir": _listing("@@CWD@@", ["runs"]),
    "worker_cwd": _cwd,
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
