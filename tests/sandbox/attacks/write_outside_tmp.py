# attack: write expect: denied denied-unless: all(tmp, var_tmp, dev_shm) no-seccomp(tmp, var_tmp, dev_shm)
"""Writing outside the sandbox's /tmp: marks in the host's /tmp, the launching
directory, the installed package (code that every later import would run), sys.prefix;
/var/tmp and /dev/shm; a world-writable file the test created (append, truncate,
chmod, touch, and a read lock, which interferes without writing); links.

Under bubblewrap /tmp, /var/tmp and /dev/shm are fresh, private tmpfs, so writing
there works and touches nothing of the host: the module cannot tell, so those three
may report success there, and the runner checks the host's paths itself.
"""

import json
import os
import sys

from spade_envs import TextEnv


def _create(path):
    def attempt():
        with open(path, "w") as handle:
            handle.write("spade attack")
        return f"wrote {path}"

    return attempt


def _victim(operation):
    def attempt():
        operation("@@VICTIM_FILE@@")
        return f"{operation.__name__} changed the victim file"

    return attempt


def append(path):
    with open(path, "a") as handle:
        handle.write("pwned\n")


def truncate(path):
    os.truncate(path, 0)


def chmod(path):
    os.chmod(path, 0o777)


def touch(path):
    os.utime(path, (0, 0))


def _lock():
    """A read lock on a host file, through a descriptor opened read-only: no write, but
    a writer of that file (SQLite takes exactly such locks) now waits or fails."""
    import fcntl

    with open("@@VICTIM_FILE@@", "rb") as handle:
        fcntl.lockf(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return "holds a lock on the victim file"


def _link():
    os.link("@@VICTIM_FILE@@", "@@CWD_MARK@@")
    return "hard-linked the victim into the launching directory"


def _symlink():
    os.symlink("/etc/passwd", "@@HOST_TMP_MARK@@")
    return "made a symlink in the host's /tmp"


def _mkdir():
    os.mkdir("@@CWD_MARK@@")
    return "made a directory in the launching directory"


ATTEMPTS = {
    "tmp": _create("@@HOST_TMP_MARK@@"),
    "launching_dir": _create("@@CWD_MARK@@"),
    "package_dir": _create("@@PACKAGE_MARK@@"),
    "sys_prefix": _create(os.path.join(sys.prefix, "@@MARK_NAME@@")),
    "usr_lib": _create("/usr/lib/@@MARK_NAME@@"),
    "var_tmp": _create("/var/tmp/@@MARK_NAME@@"),
    "dev_shm": _create("/dev/shm/@@MARK_NAME@@"),
    "victim_append": _victim(append),
    "victim_truncate": _victim(truncate),
    "victim_chmod": _victim(chmod),
    "victim_touch": _victim(touch),
    "victim_read_lock": _lock,
    "hard_link": _link,
    "symlink": _symlink,
    "mkdir": _mkdir,
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
