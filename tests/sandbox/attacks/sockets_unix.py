# attack: sockets expect: denied denied-unless: no-seccomp(create_unix_socket, runner_socket_in_bound_dir)
"""Every way to a host Unix socket: PostgreSQL's (trust auth: a superuser), MariaDB's,
one this test listens on in the host's /tmp, one it listens on inside sys.prefix (a
directory bubblewrap binds read-only), the abstract namespace, and syslog's datagram
socket.

Without seccomp, creating a socket is allowed (bubblewrap has no say over system calls),
and a socket file inside a bound directory stays connectable through the read-only bind:
network namespaces do not cover filesystem Unix sockets, only /run, /var/run and /tmp
being fresh tmpfs keeps the usual ones away. That is what a missing seccomp layer costs.
"""

import json
import socket

from spade_envs import TextEnv


def _connect(path):
    def attempt():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(path)
            return f"connected to {path!r}"

    return attempt


def _create():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.close()
    return "created an AF_UNIX socket"


def _syslog():
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"<13>spade attack", "/dev/log")
        return "sent to /dev/log"


ATTEMPTS = {
    "create_unix_socket": _create,
    "postgres_run": _connect("/run/postgresql/.s.PGSQL.5432"),
    "postgres_var_run": _connect("/var/run/postgresql/.s.PGSQL.5432"),
    "mariadb": _connect("/run/mysqld/mysqld.sock"),
    "runner_socket_in_host_tmp": _connect("@@UNIX_SOCKET@@"),
    "runner_socket_in_bound_dir": _connect("@@BOUND_UNIX_SOCKET@@"),
    "runner_abstract_socket": _connect("\0@@ABSTRACT_SOCKET@@"),
    "syslog_datagram": _syslog,
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
