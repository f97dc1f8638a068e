# attack: sockets expect: denied denied-unless: no-seccomp(create_inet_socket, create_inet6_socket, udp_send)
"""AF_INET and AF_INET6 to this host's services: PostgreSQL on 127.0.0.1:5432 (trust
auth), Redis on 127.0.0.1:6379 and [::1]:6379, the test's own TCP listener, and UDP.
Only 127.0.0.1 and ::1 are ever contacted.

Without seccomp, creating sockets and sending UDP into the network namespace's loopback
(which leads nowhere) work; connections to the host never do.
"""

import json
import socket

from spade_envs import TextEnv


def _tcp(family, host, port):
    def attempt():
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect((host, port))
            return f"connected to {host}:{port}"

    return attempt


def _create(family):
    def attempt():
        socket.socket(family, socket.SOCK_STREAM).close()
        return f"created a socket of family {family}"

    return attempt


def _udp_send():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"spade", ("127.0.0.1", int("@@TCP_PORT@@")))
        return "sent a UDP datagram"


def _udp_dns():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(2)
        query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
        sock.sendto(query, ("127.0.0.53", 53))
        return f"DNS answered {len(sock.recv(512))} bytes"


def _create_connection():
    socket.create_connection(("127.0.0.1", 5432), timeout=2).close()
    return "socket.create_connection reached PostgreSQL"


ATTEMPTS = {
    "create_inet_socket": _create(socket.AF_INET),
    "create_inet6_socket": _create(socket.AF_INET6),
    "postgres_tcp": _tcp(socket.AF_INET, "127.0.0.1", 5432),
    "postgres_create_connection": _create_connection,
    "redis_tcp": _tcp(socket.AF_INET, "127.0.0.1", 6379),
    "redis_tcp6": _tcp(socket.AF_INET6, "::1", 6379),
    "runner_listener": _tcp(socket.AF_INET, "127.0.0.1", int("@@TCP_PORT@@")),
    "udp_send": _udp_send,
    "udp_dns_resolver": _udp_dns,
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
