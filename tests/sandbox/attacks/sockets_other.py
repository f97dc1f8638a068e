# attack: sockets expect: denied denied-unless: no-seccomp(socketpair, netlink_create, alg_create, vsock_create, raw_syscall_socket)
"""The other socket families: netlink (routing tables, interfaces), packet sockets (raw
frames), AF_ALG (the kernel's crypto API, a frequent source of kernel bugs), AF_VSOCK
(to the hypervisor, not covered by network namespaces), socketpair, and socket(2)
called through ctypes to get past any Python-level wrapper.

Without seccomp, creating these works (network namespaces decide only what they can
reach); the netlink socket then sees only the namespace's own loopback, and packet
sockets need CAP_NET_RAW, which the dropped uid lacks. No vsock connection is tried.
"""

import ctypes
import json
import socket
import struct

from spade_envs import TextEnv

AF_ALG, AF_VSOCK = 38, 40


def _socketpair():
    a, b = socket.socketpair()
    a.close()
    b.close()
    return "made a socketpair"


def _create(family, kind, proto=0):
    def attempt():
        socket.socket(family, kind, proto).close()
        return f"created family {family}"

    return attempt


def _netlink_interfaces():
    """Dump the links over NETLINK_ROUTE; seeing more than loopback is seeing the host."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as sock:
        sock.settimeout(2)
        sock.bind((0, 0))
        # nlmsghdr(len, RTM_GETLINK=18, NLM_F_REQUEST|NLM_F_DUMP=0x301, seq, pid) + ifinfomsg
        body = struct.pack("BxHiII", socket.AF_UNSPEC, 0, 0, 0, 0)
        sock.send(struct.pack("IHHII", 16 + len(body), 18, 0x301, 1, 0) + body)
        names = []
        while True:
            data = sock.recv(65536)
            offset = 0
            while offset < len(data):
                length, kind = struct.unpack_from("IH", data, offset)
                if kind == 3:  # NLMSG_DONE
                    others = [n for n in names if n != "lo"]
                    if not others:
                        raise PermissionError(f"only loopback is visible: {names}")
                    return f"sees interfaces {names}"
                attr = offset + 16 + 16
                while attr < offset + length:
                    alen, atype = struct.unpack_from("HH", data, attr)
                    if atype == 3:  # IFLA_IFNAME
                        names.append(data[attr + 4 : attr + alen].rstrip(b"\0").decode())
                    attr += (alen + 3) & ~3
                offset += (length + 3) & ~3


def _raw_syscall_socket():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(41, socket.AF_INET, socket.SOCK_STREAM, 0)  # socket(2) on x86_64
    if fd < 0:
        raise OSError(ctypes.get_errno(), "socket(2) failed")
    libc.close(fd)
    return "socket(2) through ctypes"


ATTEMPTS = {
    "socketpair": _socketpair,
    "netlink_create": _create(socket.AF_NETLINK, socket.SOCK_RAW),
    "netlink_sees_host_interfaces": _netlink_interfaces,
    "packet_socket": _create(socket.AF_PACKET, socket.SOCK_RAW, 0x0300),
    "alg_create": _create(AF_ALG, socket.SOCK_SEQPACKET),
    "vsock_create": _create(AF_VSOCK, socket.SOCK_STREAM),
    "raw_syscall_socket": _raw_syscall_socket,
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
