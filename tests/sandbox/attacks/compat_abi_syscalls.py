# attack: sockets expect: denied denied-unless: no-seccomp(int80_socket)
"""Other system-call ABIs on x86_64: an x32 system call (number | 0x40000000) and an
i386 one through ``int 0x80`` from a few bytes of machine code in an executable
mapping. A filter written for the x86_64 table must not be bypassed through another
table: libseccomp answers foreign architectures with its bad-arch action (the kernel
kills the worker with SIGSYS, which the runner counts as a denial of everything).

Without seccomp, the i386 socket is created like any other socket (in the worker's
network namespace).
"""

import ctypes
import json
import mmap

from spade_envs import TextEnv

# push rbx; mov eax, 359 (i386 socket); mov ebx, 2 (AF_INET); mov ecx, 1 (SOCK_STREAM);
# xor edx, edx; int 0x80; pop rbx; ret
_INT80_SOCKET = bytes.fromhex("53b867010000bb02000000b90100000031d2cd805bc3")


def _x32_socket():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    args = [ctypes.c_long(v) for v in (0x40000000 + 41, 2, 1, 0)]
    result = libc.syscall(*args)
    if result < 0:
        raise OSError(ctypes.get_errno(), "x32 socket failed")
    return f"x32 socket made fd {result}"


def _int80_socket():
    code = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    code.write(_INT80_SOCKET)
    function = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(code)))
    result = function()
    if result < 0:
        raise OSError(-result, "i386 socket failed")
    return f"i386 socket made fd {result}"


ATTEMPTS = {
    "x32_socket": _x32_socket,
    "int80_socket": _int80_socket,
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
