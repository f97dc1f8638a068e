# attack: forgery expect: denied denied-unless: no-bwrap(builtins_open_canary) no-seccomp(builtins_subprocess, sys_modules_os_system)
"""Modules the import filter forbids, reached through the suite adapters' own import.

``ReasoningGymTask._classes()`` and ``RlveTask._task_class()`` import ``self.module``
with ``import_leaf`` and return ``getattr(module, <class attribute>)``: any attribute
of any module under ``reasoning_gym.`` or ``Gym.environments.``. A subclass calls them
itself with ``dataset_class = "__builtins__"`` (the builtins dict: ``__import__``,
``open``) or ``env_class = "sys"`` (RLVE's max_no_conflicting_bombs imports sys, and
``sys.modules`` holds ``os``). None of it is visible to the static pass (the names are
string constants, the calls are the adapter's), which passes this module; only the
sandbox stands between it and the host.

Without bubblewrap the canary file is world-readable; without seccomp the worker may
fork (as ``processes_bounded`` documents); the network namespace still refuses the
connection.
"""

import json

from spade_envs import ReasoningGymTask, RlveTask


def _rlve_sys():
    """An RLVE adapter made at run time (one environment class per module)."""
    attributes = {"module": "Gym.environments.max_no_conflicting_bombs.environment"}
    attributes["env_class"] = "sys"
    return type("SysTask", (RlveTask,), attributes)()._task_class()


def _connect(builtins):
    sock = builtins["__import__"]("socket").create_connection(("127.0.0.1", @@TCP_PORT@@), 3)
    sock.close()
    return "connected to the runner's listener"


def _read(builtins):
    with builtins["open"]("@@CANARY_FILE@@", encoding="utf-8") as handle:
        text = handle.read()
    if "@@CANARY_SECRET@@" not in text:
        raise PermissionError("readable but without the secret")
    return "read the canary: " + text[:60]


def _subprocess(builtins):
    done = builtins["__import__"]("subprocess").run(["/bin/true"], timeout=5, check=True)
    return f"ran /bin/true ({done.returncode})"


def _os_system(sys_module):
    status = sys_module.modules["os"].system("true")
    if status != 0:
        raise PermissionError(f"system() returned {status}")
    return "os.system ran"


class Probe(ReasoningGymTask):
    skill = "code"
    description = "An attack probe: every attempt runs in reset()."
    max_turns = 1
    module = "reasoning_gym.utils"
    dataset_class = "__builtins__"
    config_class = "Decimal"

    def _reset(self):
        self.why = {}
        verdicts = {}
        try:
            builtins, _ = self._classes()
        except BaseException as exc:
            builtins = None
            self.why["classes"] = f"{type(exc).__name__}: {exc}"[:200]
        try:
            sys_module = _rlve_sys()
        except BaseException as exc:
            sys_module = None
            self.why["task_class"] = f"{type(exc).__name__}: {exc}"[:200]
        attempts = {
            "builtins_connect_runner_tcp": (_connect, builtins),
            "builtins_open_canary": (_read, builtins),
            "builtins_subprocess": (_subprocess, builtins),
            "sys_modules_os_system": (_os_system, sys_module),
        }
        for name, (attempt, argument) in attempts.items():
            try:
                if argument is None:
                    raise LookupError("the adapter did not hand the module over")
                outcome = attempt(argument)
            except BaseException as exc:  # SystemExit from a failed exec included
                verdicts[name] = "denied"
                self.why[name] = f"{type(exc).__name__}: {exc}"[:200]
            else:
                verdicts[name] = f"ESCAPED: {outcome}"[:300]
        return json.dumps(verdicts)

    def _reset_info(self):
        return {"turn": 0, "why": getattr(self, "why", {})}

    def _step(self, action):
        return "done", 0.0, True, {}

    def solution(self):
        return ["done"]
