"""A validation process (see :mod:`.processes`): one job per line on stdin, one report
per line on stdout. Not imported by the package, so ``python -m`` runs it cleanly."""

from __future__ import annotations

import json
import os
import sys

from ..error import SpadeError
from .budget import Budget
from .validator import Validator


def main() -> None:
    """A validation process: one job per line on stdin, one report per line on stdout."""
    settings = json.loads(sys.argv[1])
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="surrogatepass")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    budget = Budget(**settings["budget"])
    with Validator(
        budget, pool_size=2, seed=settings["seed"], static_gate=settings["static_gate"]
    ) as validator:
        for line in sys.stdin:
            job = json.loads(line)
            try:
                report = validator.validate(
                    job["source"],
                    filename=job["filename"],
                    suite_import=job.get("suite_import") is True,
                )
            except SpadeError as exc:  # no verdict (no worker could start): say why
                answer = json.dumps({"error": str(exc), "type": type(exc).__name__})
            else:
                answer = report.to_json()
            protocol.write(answer + "\n")
            protocol.flush()


if __name__ == "__main__":
    main()
