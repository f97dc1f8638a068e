# attack: spade-dialect expect: denied denied-unless: all(write_host_tmp) no-seccomp(run_program, write_host_tmp) no-bwrap(read_secret, list_cwd, write_host_tmp)
"""SPADE-dialect source (no imports at all) that reaches the host through the names the
dialect predefines: ``random._os`` is the ``os`` module, ``json.decoder`` leads to ``re``
and ``sys``-free helpers, and ``ToolUseBaseEnv``'s module globals are searched for
anything useful. A predefined name must widen nothing: each is a module environment code
could import anyway, so the sandbox's layers must deny every attempt exactly as they do
for an explicit import.

Without seccomp a program runs (inside the sandbox); without bubblewrap the test's
working directory is visible (world-readable files). Inside the sandbox the probe cannot
tell its private /tmp from the host's, so ``write_host_tmp`` may report a write: the
runner looks for the mark on the host itself.
"""


def _os():
    return random._os  # the os module, reached through the predefined `random`


def _run():
    status = _os().system("/bin/true")
    if status != 0:
        raise PermissionError(f"system() returned {status}")
    return "ran /bin/true"


def _read_secret():
    fd = _os().open("@@CANARY_FILE@@", _os().O_RDONLY)
    try:
        data = _os().read(fd, 200).decode()
    finally:
        _os().close(fd)
    return f"read {data[:60]!r}"


def _list_cwd():
    entries = _os().listdir("@@CWD@@")
    if ".git" not in entries:  # the sandbox binds only the venv and the package there
        raise PermissionError(f"the repository shows only {sorted(entries)[:8]}")
    return f"lists {sorted(entries)[:6]}"


def _write_mark():
    fd = _os().open("@@HOST_TMP_MARK@@", _os().O_WRONLY | _os().O_CREAT, 0o644)
    _os().close(fd)
    return "wrote a file in the host's /tmp"


def _signal_parent():
    _os().kill(int("@@PARENT_PID@@"), 0)
    return "signalled the test process"


def _tool_base_globals():
    found = getattr(ToolUseBaseEnv.step, "__glob" + "als__")
    useful = sorted(k for k in found if k in ("os", "sys", "subprocess", "socket", "open"))
    if useful:
        return f"ToolUseBaseEnv's module holds {useful}"
    raise PermissionError("ToolUseBaseEnv's module globals hold nothing that reaches the host")


ATTEMPTS = {
    "run_program": _run,
    "read_secret": _read_secret,
    "list_cwd": _list_cwd,
    "write_host_tmp": _write_mark,
    "signal_parent": _signal_parent,
    "tool_base_globals": _tool_base_globals,
}


class ProbeEnv:
    """An attack probe in SPADE's dialect: every attempt runs in reset()."""

    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        verdicts = {}
        for name, attempt in ATTEMPTS.items():
            try:
                outcome = attempt()
            except BaseException:
                verdicts[name] = "denied"
            else:
                verdicts[name] = f"ESCAPED: {outcome}"[:300]
        return json.dumps(verdicts), {}

    def step(self, action):
        return "over", 0.0, True, False, {}
