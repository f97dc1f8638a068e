"""Validations in parallel processes: the checks run in the validating process (Hypothesis
included), so threads in one process would share one interpreter lock.

Each validation process is our own code (``python -m spade_envs.validation.child``),
trusted like the parent; it keeps one :class:`~.validator.Validator` with its own sandbox
workers and answers one JSON line per job. Started as a module rather than through
``multiprocessing``, so a caller's script needs no ``if __name__ == "__main__"`` guard.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ..error import SandboxStartFailed, SandboxUnavailable, SpadeError
from .budget import Budget
from .report import ValidationReport

__all__ = ["run_in_processes"]


class _Process:
    """One validation process and its two pipes."""

    def __init__(self, settings: dict[str, Any]):
        self._process = subprocess.Popen(
            [sys.executable, "-m", "spade_envs.validation.child", json.dumps(settings)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def validate(self, source: str, filename: str, suite_import: bool = False) -> ValidationReport:
        job = {"source": source, "filename": filename, "suite_import": suite_import}
        line = json.dumps(job) + "\n"
        try:
            self._process.stdin.write(line.encode("utf-8", "surrogatepass"))
            self._process.stdin.flush()
            answer = self._process.stdout.readline()
        except (BrokenPipeError, OSError):
            answer = b""
        if not answer:
            code = self._process.poll()
            raise SpadeError(
                f"a validation process ended unexpectedly (exit code {code}); its error is "
                "printed above. Validate the sources one at a time to find the cause."
            )
        text = answer.decode("utf-8", "surrogatepass")
        data = json.loads(text)
        if "error" in data and "checks" not in data:
            kind = {"SandboxUnavailable": SandboxUnavailable}.get(
                data.get("type"), SandboxStartFailed
            )
            raise kind(str(data["error"]))
        return ValidationReport.from_json(text)

    def close(self) -> None:
        for stream in (self._process.stdin, self._process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def run_in_processes(
    sources: list[str],
    *,
    budget: Budget,
    processes: int,
    seed: int | None,
    static_gate: bool,
    suite_import: bool = False,
) -> Iterator[tuple[int, ValidationReport]]:
    """Validate ``sources`` in ``processes`` processes; yields ``(index, report)`` as each ends.

    Raises:
        SpadeError: A validation process died (its error went to stderr).
    """
    settings = {"budget": budget.to_dict(), "seed": seed, "static_gate": static_gate}
    jobs: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    for index in range(len(sources)):
        jobs.put(index)
    done: queue.SimpleQueue[tuple[int, ValidationReport | BaseException]] = queue.SimpleQueue()
    workers = [_Process(settings) for _ in range(processes)]

    def serve(process: _Process) -> None:
        while True:
            try:
                index = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                report = process.validate(sources[index], f"<env {index}>", suite_import)
                done.put((index, report))
            except BaseException as exc:  # handed to the caller's thread
                done.put((index, exc))
                return

    threads = [threading.Thread(target=serve, args=(w,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    try:
        for _ in range(len(sources)):
            index, result = done.get()
            if isinstance(result, BaseException):
                raise result
            yield index, result
    finally:
        while True:  # stop handing out jobs, then let each process finish and exit
            try:
                jobs.get_nowait()
            except queue.Empty:
                break
        for worker in workers:
            worker.close()
