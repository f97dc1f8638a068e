# attack: io-uring expect: denied denied-unless: no-seccomp(io_uring_setup, io_uring_enter_reachable, io_uring_socket)
"""io_uring, for real: set up a ring through ctypes (io_uring_setup is system call 425,
io_uring_enter 426 on x86_64), map its queues, and submit IORING_OP_SOCKET (opcode 45)
and IORING_OP_CONNECT (16): to PostgreSQL's Unix socket, to 127.0.0.1:5432 and to this
test's listeners. io_uring creates sockets without the socket(2) system call a filter
may be watching; a deny-list once missed exactly this.

Without seccomp, io_uring works and makes sockets (they are the kernel's sockets in the
worker's network namespace, whose loopback leads nowhere, and /run is a fresh tmpfs);
connections to the host must fail in every configuration.
"""

import ctypes
import json
import mmap
import socket
import struct

from spade_envs import TextEnv

SYS_IO_URING_SETUP, SYS_IO_URING_ENTER = 425, 426
IORING_OP_CONNECT, IORING_OP_SOCKET = 16, 45
IORING_ENTER_GETEVENTS = 1
IORING_OFF_SQ_RING, IORING_OFF_CQ_RING, IORING_OFF_SQES = 0, 0x8000000, 0x10000000

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class Ring:
    """A minimal io_uring: one submission at a time, waiting for its completion."""

    def __init__(self, entries=4):
        params = ctypes.create_string_buffer(120)  # struct io_uring_params
        fd = _libc.syscall(SYS_IO_URING_SETUP, entries, params)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "io_uring_setup failed")
        self.fd = fd
        (sq_entries, cq_entries) = struct.unpack_from("II", params, 0)
        sq = struct.unpack_from("IIIIIII", params, 40)  # head tail mask entries flags dropped array
        cq = struct.unpack_from("IIIIII", params, 80)  # head tail mask entries overflow cqes
        self.sq_off, self.cq_off = sq, cq
        self.sq_ring = mmap.mmap(fd, sq[6] + sq_entries * 4, offset=IORING_OFF_SQ_RING)
        self.cq_ring = mmap.mmap(fd, cq[5] + cq_entries * 16, offset=IORING_OFF_CQ_RING)
        self.sqes = mmap.mmap(fd, sq_entries * 64, offset=IORING_OFF_SQES)
        self.keep = []

    def submit(self, opcode, fd=0, addr=0, length=0, off=0):
        tail = struct.unpack_from("I", self.sq_ring, self.sq_off[1])[0]
        mask = struct.unpack_from("I", self.sq_ring, self.sq_off[2])[0]
        index = tail & mask
        sqe = struct.pack(
            "BBHiQQIIQHHiQQ", opcode, 0, 0, fd, off, addr, length, 0, 7, 0, 0, 0, 0, 0
        )
        self.sqes[index * 64 : index * 64 + 64] = sqe
        struct.pack_into("I", self.sq_ring, self.sq_off[6] + 4 * index, index)
        struct.pack_into("I", self.sq_ring, self.sq_off[1], tail + 1)
        done = _libc.syscall(SYS_IO_URING_ENTER, self.fd, 1, 1, IORING_ENTER_GETEVENTS, None, 0)
        if done < 0:
            raise OSError(ctypes.get_errno(), "io_uring_enter failed")
        cq_head = struct.unpack_from("I", self.cq_ring, self.cq_off[0])[0]
        cq_mask = struct.unpack_from("I", self.cq_ring, self.cq_off[2])[0]
        cqe = self.cq_off[5] + 16 * (cq_head & cq_mask)
        _, result, _ = struct.unpack_from("QiI", self.cq_ring, cqe)
        struct.pack_into("I", self.cq_ring, self.cq_off[0], cq_head + 1)
        return result

    def socket(self, family, kind):
        # IORING_OP_SOCKET: fd = domain, off = type, len = protocol
        result = self.submit(IORING_OP_SOCKET, fd=family, off=kind, length=0)
        if result < 0:
            raise OSError(-result, "IORING_OP_SOCKET failed")
        return result

    def connect(self, sock, address):
        buffer = ctypes.create_string_buffer(address, len(address))
        self.keep.append(buffer)
        result = self.submit(
            IORING_OP_CONNECT, fd=sock, addr=ctypes.addressof(buffer), off=len(address)
        )
        if result < 0:
            raise OSError(-result, "IORING_OP_CONNECT failed")
        return result


def _unix_address(path):
    raw = path.encode()
    return struct.pack("H", socket.AF_UNIX) + raw + b"\0" * (108 - len(raw))


def _inet_address(host, port):
    return (
        struct.pack("H", socket.AF_INET)
        + struct.pack("!H", port)
        + socket.inet_aton(host)
        + bytes(8)
    )


def _setup():
    ring = Ring()
    _libc.close(ring.fd)
    return "io_uring_setup returned a ring"


def _enter_reachable():
    result = _libc.syscall(SYS_IO_URING_ENTER, -1, 0, 0, 0, None, 0)
    errno = ctypes.get_errno()
    if result < 0 and errno == 1:  # EPERM: the filter answered
        raise PermissionError("io_uring_enter: EPERM")
    return f"io_uring_enter reached the kernel (errno {errno})"


def _socket():
    ring = Ring()
    fd = ring.socket(socket.AF_INET, socket.SOCK_STREAM)
    _libc.close(fd)
    return f"IORING_OP_SOCKET made fd {fd}"


def _connect(family, address, label):
    def attempt():
        ring = Ring()
        fd = ring.socket(family, socket.SOCK_STREAM)
        ring.connect(fd, address)
        return f"IORING_OP_CONNECT reached {label}"

    return attempt


ATTEMPTS = {
    "io_uring_setup": _setup,
    "io_uring_enter_reachable": _enter_reachable,
    "io_uring_socket": _socket,
    "io_uring_connect_postgres_unix": _connect(
        socket.AF_UNIX, _unix_address("/run/postgresql/.s.PGSQL.5432"), "PostgreSQL's socket"
    ),
    "io_uring_connect_postgres_var_run": _connect(
        socket.AF_UNIX, _unix_address("/var/run/postgresql/.s.PGSQL.5432"), "PostgreSQL's socket"
    ),
    "io_uring_connect_runner_unix": _connect(
        socket.AF_UNIX, _unix_address("@@UNIX_SOCKET@@"), "the runner's socket"
    ),
    "io_uring_connect_postgres_tcp": _connect(
        socket.AF_INET, _inet_address("127.0.0.1", 5432), "127.0.0.1:5432"
    ),
    "io_uring_connect_runner_tcp": _connect(
        socket.AF_INET, _inet_address("127.0.0.1", int("@@TCP_PORT@@")), "the runner's listener"
    ),
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
