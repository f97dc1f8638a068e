"""The worker's seccomp filter: an allow-list, everything else fails with ``EPERM``.

A deny-list misses what it does not name (``io_uring`` once created sockets past one),
so the filter allows only what a single-threaded Python worker that has finished its
imports needs to serve requests, and answers every other system call with ``EPERM``
(a clean ``PermissionError`` in Python, not a killed process). Denied by construction,
among others: creating processes or threads (``clone``, ``clone3``, ``fork``,
``vfork``), running programs (``execve``), every socket family and ``io_uring``,
``ptrace`` and ``process_vm_*``, ``bpf``, ``userfaultfd``, ``keyctl``,
``perf_event_open``, mounts and namespaces, signalling other processes, changing
uids, opening a file for writing, creating or removing files.

The table below is the whole list and why each entry is there. A name unknown on this
architecture (``open`` on aarch64, say) is skipped.
"""

from __future__ import annotations

import errno
import os
from typing import Any

__all__ = ["ALLOWED", "DENIED_PROBES", "build_filter", "install"]

#: Allowed system calls, grouped by why a worker needs them.
ALLOWED: dict[str, str] = {
    # memory: the allocator, mmap'd libraries, ctypes closures
    "brk": "heap growth",
    "mmap": "the allocator and loaded libraries",
    "munmap": "the allocator",
    "mremap": "the allocator",
    "mprotect": "the allocator, guard pages",
    "madvise": "the allocator returns memory",
    # reading files and pipes (opening is restricted to read-only below)
    "read": "the request pipe, files opened read-only",
    "readv": "buffered reads",
    "pread64": "zipimport and mmap'd reads",
    "write": "the answer pipe and /dev/null",
    "writev": "buffered writes to the answer pipe",
    "lseek": "file positions",
    "close": "closing descriptors",
    "close_range": "closing descriptors",
    "fstat": "open() and imports",
    "stat": "imports (path finder)",
    "lstat": "imports (path finder)",
    "newfstatat": "imports (path finder)",
    "statx": "os.stat",
    "open": "opening files; read-only unless under bubblewrap (an argument rule)",
    "openat": "opening files; read-only unless under bubblewrap (an argument rule)",
    "readlink": "os.path.realpath",
    "readlinkat": "os.path.realpath",
    "getdents64": "listing a directory for the import system",
    "access": "os.access",
    "faccessat": "os.access",
    "faccessat2": "os.access",
    "getcwd": "os.getcwd",
    "fcntl": "descriptor flags and duplicates only, no locks (an argument rule)",
    "dup": "descriptor copies",
    "dup2": "descriptor copies",
    "dup3": "descriptor copies",
    "ioctl": "isatty and FIONREAD only (an argument rule)",
    "poll": "waiting for a request",
    "ppoll": "waiting for a request",
    "select": "time.sleep on some builds",
    "pselect6": "time.sleep on some builds",
    # signals within this process
    "rt_sigaction": "Python's signal handling",
    "rt_sigprocmask": "Python's signal handling",
    "rt_sigreturn": "returning from a signal handler",
    "sigaltstack": "faulthandler",
    "tgkill": "raising a signal in this process only (an argument rule)",
    "kill": "os.kill of this process only (an argument rule)",
    # time
    "clock_gettime": "time.time and time.monotonic",
    "clock_getres": "time.get_clock_info",
    "gettimeofday": "the clock",
    "time": "the clock",
    "nanosleep": "time.sleep (wall-clock limits bound it)",
    "clock_nanosleep": "time.sleep (wall-clock limits bound it)",
    # facts about this process
    "getpid": "os.getpid, random seeding",
    "gettid": "threading identity",
    "getppid": "os.getppid",
    "getuid": "os.getuid",
    "geteuid": "os.geteuid",
    "getgid": "os.getgid",
    "getegid": "os.getegid",
    "getgroups": "os.getgroups",
    "getresuid": "os.getresuid",
    "getresgid": "os.getresgid",
    "getpgrp": "os.getpgrp",
    "getpgid": "os.getpgid",
    "getsid": "os.getsid",
    "getrusage": "resource.getrusage, time.process_time",
    "times": "os.times",
    "prlimit64": "resource.getrlimit: reading this process's limits only (an argument rule)",
    "getrlimit": "resource.getrlimit",
    "sysinfo": "memory facts",
    "uname": "platform facts",
    "sched_getaffinity": "os.cpu_count",
    "sched_yield": "the GIL",
    "getcpu": "sched_getcpu",
    "getrandom": "os.urandom, random.SystemRandom, hash seeds",
    # synchronisation inside one thread and clean exits
    "futex": "locks (the GIL, import locks)",
    "set_robust_list": "glibc bookkeeping",
    "rseq": "glibc bookkeeping",
    "restart_syscall": "restarting a sleep after a signal",
    "exit": "ending the process",
    "exit_group": "ending the process",
}

#: Flags that make an ``open``/``openat`` write, create or truncate (refused).
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: ioctl requests a worker may make: terminal query (isatty), bytes readable, close-on-exec,
#: non-blocking (Linux numbers, the same on x86_64 and aarch64).
_IOCTLS = (0x5401, 0x541B, 0x5421, 0x5450, 0x5451)

#: fcntl commands a worker may use: F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL,
#: F_DUPFD_CLOEXEC (locks on a readable host file could stall its writers).
_FCNTLS = (0, 1, 2, 3, 4, 1030)

#: Calls a test makes inside a worker to prove they are denied: (name, a reason).
DENIED_PROBES: dict[str, str] = {
    "socket": "any socket family",
    "socketpair": "connected socket pairs",
    "connect": "reaching a host socket",
    "io_uring_setup": "io_uring (IORING_OP_SOCKET and friends)",
    "io_uring_enter": "io_uring",
    "io_uring_register": "io_uring",
    "clone": "processes and threads",
    "clone3": "processes and threads",
    "fork": "processes",
    "vfork": "processes",
    "execve": "running programs",
    "execveat": "running programs",
    "ptrace": "debugging other processes",
    "process_vm_readv": "reading other processes",
    "process_vm_writev": "writing other processes",
    "bpf": "kernel programs",
    "userfaultfd": "page-fault races",
    "keyctl": "kernel keyrings",
    "add_key": "kernel keyrings",
    "perf_event_open": "performance counters",
    "mount": "mounts",
    "umount2": "mounts",
    "pivot_root": "mounts",
    "chroot": "mounts",
    "unshare": "namespaces",
    "setns": "namespaces",
    "setuid": "privilege changes",
    "setresuid": "privilege changes",
    "setgid": "privilege changes",
    "mknodat": "device files",
    "memfd_create": "anonymous executable files",
    "pipe2": "new pipes",
    "unlinkat": "removing files",
    "mkdirat": "creating directories",
    "renameat2": "renaming files",
    "openat2": "opening files without the read-only rule",
    "name_to_handle_at": "file handles",
    "open_by_handle_at": "escaping mounts through file handles",
    "init_module": "kernel modules",
    "kexec_load": "replacing the kernel",
    "reboot": "rebooting",
    "setrlimit": "raising limits",
    "personality": "execution domains",
    "prctl": "process attributes",
    "seccomp": "changing the filter",
    "epoll_create1": "event loops (not needed)",
    "eventfd2": "event descriptors (not needed)",
}


def build_filter(pid: int | None = None, *, writable_files: bool = False) -> Any:
    """The filter for a worker whose pid is ``pid`` (default: this process); not loaded.

    Args:
        pid: The process that may signal itself (``tgkill``).
        writable_files: Allow opening files for writing. Only under bubblewrap, where
            every bind is read-only and the one writable place is a private, sized
            ``/tmp``; without it the worker would see the host's file system.

    Raises:
        ImportError, OSError: libseccomp or pyseccomp is missing.
    """
    import pyseccomp as sc

    pid = os.getpid() if pid is None else pid
    flt = sc.SyscallFilter(sc.ERRNO(errno.EPERM))
    read_only = not writable_files
    rules: dict[str, list[tuple[Any, ...]]] = {
        "open": [(sc.Arg(1, sc.MASKED_EQ, _WRITE_FLAGS, 0),) if read_only else ()],
        "openat": [(sc.Arg(2, sc.MASKED_EQ, _WRITE_FLAGS, 0),) if read_only else ()],
        "ioctl": [(sc.Arg(1, sc.EQ, request),) for request in _IOCTLS],
        "fcntl": [(sc.Arg(1, sc.EQ, command),) for command in _FCNTLS],
        "tgkill": [(sc.Arg(0, sc.EQ, pid),)],
        "kill": [(sc.Arg(0, sc.EQ, pid),)],
        # prlimit64(0, resource, NULL, old): read this process's own limit, set nothing.
        "prlimit64": [(sc.Arg(0, sc.EQ, 0), sc.Arg(2, sc.EQ, 0))],
    }
    for name in ALLOWED:
        try:
            for args in rules.get(name, [()]):
                flt.add_rule(sc.ALLOW, name, *args)
        except (OSError, ValueError, RuntimeError):
            pass  # not a system call on this architecture
    return flt


def install(*, writable_files: bool = False) -> None:
    """Load the filter into this process (irreversible; it has no other threads)."""
    build_filter(writable_files=writable_files).load()
