"""Runs in ``.venv-verifiers`` (verifiers 0.4 pins openai<3, so it has a venv of its own):
plays registry tasks with :func:`spade_envs.integrations.verifiers.load_environment` and
verifiers' own ``Env.run_episode`` against an OpenAI-compatible server.

``python verifiers_runner.py`` serves runs, one JSON request a line on stdin, until stdin
closes: one process plays every run of a test session (importing verifiers and spade-envs
takes seconds, each time). A request has ``registry``, ``envs`` (or ``query``: a Query's
fields), ``base_url``, ``model`` and optionally ``num_seeds``, ``first_seed``, ``seeds``,
``hint``, ``allow_unvalidated``, ``max_turns``, ``max_tokens`` and ``step`` (before each
task print ``{"next": <task info>}`` and wait for a line on stdin, so a scripted server can
be told what to answer). A run prints one JSON line per episode, then ``{"counts": ...}``;
a refused selection prints ``{"error": ...}`` instead. Anything else that fails is a
traceback on stderr and an exit (status 1); ``verifiers_support.run_verifiers`` then
starts a fresh runner for the next request.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time


def play(args: dict) -> None:
    """One run: every task of the selection, through verifiers' ``Env.run_episode``."""
    from spade_envs.error import SpadeError
    from spade_envs.integrations.verifiers import Query, load_environment

    try:
        env = load_environment(
            Query(**args["query"]) if "query" in args else args["envs"],
            registry=args["registry"],
            num_seeds=args.get("num_seeds", 1),
            first_seed=args.get("first_seed", 0),
            seeds=args.get("seeds", ()),
            hint=args.get("hint", False),
            allow_unvalidated=args.get("allow_unvalidated", False),
            max_turns=args.get("max_turns"),
        )
        tasks = list(env.taskset)
    except SpadeError as exc:
        print(json.dumps({"error": str(exc), "type": type(exc).__name__}), flush=True)
        return
    import verifiers.v1 as vf

    ctx = vf.ModelContext(
        model=args["model"],
        client=vf.EvalClientConfig(base_url=args["base_url"], api_key_var="SPADE_TEST_KEY"),
        sampling=vf.SamplingConfig(max_tokens=args.get("max_tokens"), temperature=0.7),
    )

    async def episodes() -> None:
        async with env.serving():
            for task in tasks:
                if args.get("step"):
                    print(json.dumps({"next": task.data.info}), flush=True)
                    sys.stdin.readline()
                started = time.perf_counter()
                episode = await env.run_episode(task, ctx)
                trace = episode.traces[0] if episode.traces else None
                row = {
                    "task": task.data.info,
                    "prompt": task.data.prompt,
                    "ok": episode.ok,
                    "trace_ok": trace.ok if trace else None,
                    "errors": [f"{e.type}: {e.message}" for e in episode.errors],
                    "spade": trace.info.get("spade") if trace else None,
                    "rewards": {k: (v.value if v else None) for k, v in trace.rewards.items()}
                    if trace
                    else {},
                    "turns": trace.num_turns if trace else 0,
                    "wall_s": time.perf_counter() - started,
                }
                print(json.dumps(row), flush=True)

    try:
        asyncio.run(episodes())
    finally:
        # Each run names its own registry (a test's temporary file): the next run of
        # this process must not hold it open.
        env.taskset.registry().close()
    print(json.dumps({"counts": env.counts.metrics()}), flush=True)


def main() -> int:
    os.environ.setdefault("SPADE_TEST_KEY", "unused")
    # Imported once, before the first request: what every run would otherwise pay.
    import spade_envs.integrations.verifiers  # noqa: F401

    for line in sys.stdin:
        if line.strip():
            play(json.loads(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
