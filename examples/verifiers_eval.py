"""Evaluate a served model on registry environments with verifiers 0.4 (run it from
``.venv-verifiers``: ``make .venv-verifiers``).

Serve a model first, from the main venv (any OpenAI-compatible server works; it must
stream, as verifiers' harness asks for streams)::

    .venv/bin/python -m spade_envs.llm.server smollm2 --port 8000

then::

    .venv-verifiers/bin/python examples/verifiers_eval.py NumberGuess --seeds 4

Each task is one (pinned version, seed); verifiers' ``Env.run_episode`` plays it with its
``null`` harness (a plain chat loop) while the environment runs in our sandbox. Prints
one line per episode and a JSON summary (``--json``): episodes, failures by kind, wins,
the mean return, and the share of wall time spent in environment calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("envs", nargs="+", help="spade/<Name>-v<N> IDs (or bare names)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--model", default="smollm2", help="the served model's name")
    parser.add_argument("--registry", help="registry URL (default: the shared one)")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per version, from 0")
    parser.add_argument("--hint", action="store_true", help="show every play the hint")
    parser.add_argument("--max-turns", type=int, help="cap the model's turns")
    parser.add_argument("--max-tokens", type=int, default=128, help="per reply")
    parser.add_argument("--concurrency", type=int, default=2, help="episodes at once")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENAI_API_KEY", "unused")  # a local server needs none

    import verifiers.v1 as vf

    from spade_envs.integrations.verifiers import load_environment

    started = time.perf_counter()  # reading the tasks' prompts is environment time too
    env = load_environment(
        args.envs,
        registry=args.registry,
        num_seeds=args.seeds,
        hint=args.hint,
        max_turns=args.max_turns,
    )
    tasks = list(env.taskset)
    ctx = vf.ModelContext(
        model=args.model,
        client=vf.EvalClientConfig(base_url=args.base_url, api_key_var="OPENAI_API_KEY"),
        sampling=vf.SamplingConfig(max_tokens=args.max_tokens),
    )
    gate = asyncio.Semaphore(args.concurrency)

    async def one(task):
        async with gate:
            episode = await env.run_episode(task, ctx)
        trace = episode.traces[0] if episode.traces else None
        spade = (trace.info.get("spade") if trace else None) or {}
        score = trace.rewards.get("episode_return") if trace else None
        print(
            f"{task.data.name}: "
            + (f"return {score.value:g}" if score else f"failed ({spade.get('failure')})")
            + f", {trace.num_turns if trace else 0} turn(s)",
            flush=True,
        )
        return episode

    async def run_all():
        async with env.serving():
            return await asyncio.gather(*(one(t) for t in tasks))

    episodes = asyncio.run(run_all())
    wall = time.perf_counter() - started
    counts = env.counts.metrics()
    returns = [
        e.traces[0].rewards["episode_return"].value
        for e in episodes
        if e.traces and "episode_return" in e.traces[0].rewards
    ]
    summary = {
        **counts,
        "episodes": len(episodes),
        "mean_return": sum(returns) / len(returns) if returns else None,
        "wall_s": round(wall, 2),
        "env_share": counts["spade/env_seconds"] / wall if wall else 0.0,
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"{len(episodes)} episodes, {int(counts['spade/wins'])} won, "
            f"{int(counts['spade/failed'])} failed; environments "
            f"{counts['spade/env_seconds']:.2f} s of {wall:.1f} s "
            f"({100 * summary['env_share']:.2f}%)"
        )
    return summary


if __name__ == "__main__":
    main()
