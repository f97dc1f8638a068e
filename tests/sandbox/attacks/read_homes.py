# attack: homes expect: denied denied-unless: no-bwrap(home_listing, home_files, etc_passwd)
"""Other users' homes and the system's secrets: /root (root's .bashrc, ssh keys, the
pyenv tree the interpreter lives in), every /home/*, /etc/shadow, host ssh keys.

The interpreter may live under /root (pyenv), so bubblewrap binds that one directory:
nothing else of /root may show. Without bubblewrap the worker, as its own unprivileged
uid, still cannot enter /root (0700) or read /etc/shadow, but world-readable homes and
/etc/passwd are readable: what a missing bubblewrap layer costs.
"""

import json
import os

from spade_envs import TextEnv


def _read(path):
    def attempt():
        with open(path, "rb") as handle:
            return f"read {len(handle.read(4096))} bytes of {path}"

    return attempt


def _root_listing():
    entries = os.listdir("/root")
    extra = [e for e in entries if e != ".pyenv"]
    if not extra:
        raise PermissionError(f"/root shows only {entries}")
    return f"/root lists {sorted(extra)[:10]}"


def _home_listing():
    entries = os.listdir("/home")
    if not entries:
        raise PermissionError("/home is empty")
    return f"/home lists {sorted(entries)[:10]}"


def _glob(directory, prefix=""):
    """Paths directly in ``directory`` whose names start with ``prefix`` (not the glob
    module: a worker without bubblewrap cannot import it after its uid drop)."""
    found = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return found
    for entry in entries:
        path = os.path.join(directory, entry)
        if entry.startswith(prefix):
            found.append(path)
    return found


def _home_files():
    paths = [p for home in _glob("/home") for p in _glob(home)]
    for path in paths:
        try:
            with open(path, "rb") as handle:
                handle.read(1)
            return f"read {path}"
        except OSError:
            continue
    raise PermissionError("no readable file under /home")


def _pyenv_outside_interpreter():
    found = [p for p in _glob("/root/.pyenv") if not p.endswith("/versions")]
    if not found:
        raise PermissionError("only the interpreter's directory is visible")
    return f"sees {found[:5]}"


def _host_keys():
    keys = [p for p in _glob("/etc/ssh", "ssh_host_") if p.endswith("_key")]
    for path in keys + _glob("/root/.ssh"):
        try:
            with open(path, "rb") as handle:
                handle.read(1)
            return f"read {path}"
        except OSError:
            continue
    raise PermissionError("no readable key")


ATTEMPTS = {
    "root_bashrc": _read("/root/.bashrc"),
    "root_listing": _root_listing,
    "root_pyenv_outside_interpreter": _pyenv_outside_interpreter,
    "ssh_keys": _host_keys,
    "home_listing": _home_listing,
    "home_files": _home_files,
    "etc_shadow": _read("/etc/shadow"),
    "etc_passwd": _read("/etc/passwd"),
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
