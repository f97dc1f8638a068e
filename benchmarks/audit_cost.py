"""What do replay audits cost? Audit time as a share of play time, in one run.

Plays NumberGuess with a scripted model that wins every play (it plays the reference
solution), so every play is replayed and gets its counterfactual replays: the worst
case for audits (with the untrained SmolLM2 of ``cpu-tiny`` few plays win, and
``benchmarks/selfplay_iteration.py`` prints the real share). The model's reply time is
simulated (``--model-seconds`` per batched model call; SmolLM2-135M on this CPU takes
seconds). Prints the audit seconds, the play seconds and their ratio (target <= 10%),
and the same run without audits as the baseline.

    python benchmarks/audit_cost.py [--plays 16] [--model-seconds 1.0]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from spade_envs.agent import RolloutConfig, RolloutEngine, matched_specs, resolve_envs
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.registry import Registry
from spade_envs.sandbox import WorkerPool


class SolutionModel(ChatModel):
    """Replies with the reference solution of each play's episode (found beforehand)."""

    name = "solution"

    def __init__(self, answers: dict[str, list[str]], seconds: float) -> None:
        self.answers, self.seconds = answers, seconds

    def generate(self, conversations, params=None):
        time.sleep(self.seconds)
        out = []
        for conversation in conversations:
            first = conversation[1]["content"]
            turn = sum(1 for m in conversation if m["role"] == "assistant")
            actions = self.answers[first]
            text = actions[min(turn, len(actions) - 1)]
            out.append(Completion(text=text, token_ids=(1,), logprobs=(-0.1,)))
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plays", type=int, default=16)
    parser.add_argument("--model-seconds", type=float, default=1.0)
    parser.add_argument("--env", default="NumberGuess")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{os.path.join(tmp, 'audit.db')}"
        registry = Registry(url)
        targets = resolve_envs([args.env], registry)
        specs = matched_specs(targets, args.plays, hint=False)
        from spade_envs.runtime import open_record

        answers = {}
        with WorkerPool(size=2) as pool:
            for spec in specs:
                env = open_record(targets[0], pool=pool)
                observation, _ = env.reset(seed=spec.env_seed)
                answers[observation] = env.solution()
                env.close()
            rows = []
            for share in (None, 0.1):
                config = RolloutConfig(max_concurrent=8, seed=0, audit_share=share)
                model = SolutionModel(answers, args.model_seconds)
                engine = RolloutEngine(model, config, registry=registry, pool=pool)
                started = time.perf_counter()
                episodes = engine.run(specs, targets)
                rows.append((share, time.perf_counter() - started, engine.stats, episodes))
    (_, base, _, _), (_, audited, stats, episodes) = rows
    wins = sum(e.won for e in episodes)
    print(f"{args.plays} plays of {args.env}, {wins} won, model {args.model_seconds:g} s a call")
    print(f"without audits: {base:.1f} s")
    print(
        f"with audits:    {audited:.1f} s; {stats.audits} plays replayed in "
        f"{stats.audit_seconds:.2f} s (counterfactuals included), "
        f"{stats.audit_failures} could not be replayed, {len(stats.quarantined)} quarantined"
    )
    play_seconds = audited - stats.audit_seconds
    print(
        f"audit time / play time: {stats.audit_seconds / play_seconds:.1%} (target <= 10%); "
        f"whole-run ratio {audited / base:.2f}x"
    )


if __name__ == "__main__":
    main()
