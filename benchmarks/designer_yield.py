"""What does each designer choice buy? Yield of one model by mode, decoding and repair, in one run.

For each condition (mode ``scaffold``, ``new`` or ``edit``; for scaffold, replies decoded
freely or under the filling's JSON Schema; with and without a repair round) the designer
attempts environments into a fresh registry that holds the 32 seeds (the memory's
references, the edit mode's parents, the scaffold mode's parents with holes). Prints,
per condition: how many replies were generated, parsed, valid, novel and registered,
the parse failures (replies that do not parse into the holes' keys and types: no JSON,
unclosed, wrong keys or types, out of bounds, truncated) apart from fillings that parse
but break a relation between holes, the share registered (the yield), those counts per
minute of wall time, and the rejection reasons by kind. The baseline of the replies per
minute is the model's raw generation rate, measured in the same run: one batch of
``--batch-size`` replies to a short fixed prompt under the same token budget and
temperature, nothing else (no designer prompt, no parsing, no validation); the ratio
(generated replies per minute over raw replies per minute) is the share of the model's
raw speed that the designer keeps, its own cost and its long prompts' prefill being the
rest. Then the cost of constrained
decoding: the model's time per decoding step (one token for every row of a batch) with
and without the schema, and the part of it spent computing the grammar's masks. The
model is loaded once. Whole-module modes write long replies and are slow on a CPU, so
they get their own (smaller) attempt count.

    python benchmarks/designer_yield.py [--model smollm2] [--n 40] [--n-full 8]
        [--modes scaffold,new,edit] [--repairs 0,1] [--decoding free,schema]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any


class Timer:
    """Seconds and calls of one measured thing."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    def wrap(self, owner: Any, name: str) -> None:
        """Count every call of ``owner.name`` (a method, patched on its class)."""
        inner = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.calls += 1

        setattr(owner, name, timed)


class StepTimer(Timer):
    """Decoding steps after the first of each batch: the time from one call of the sampler
    to the next is one forward pass of the batch plus one draw (masks included), with no
    prefill in it, so free and constrained steps compare whatever the replies' lengths."""

    def wrap(self, owner: Any, name: str) -> None:
        inner = getattr(owner, name)
        last: dict[int, float] = {}

        def timed(sampler: Any, *args: Any, **kwargs: Any) -> Any:
            now = time.perf_counter()
            if id(sampler) in last:
                self.seconds += now - last[id(sampler)]
                self.calls += 1
            last[id(sampler)] = now
            return inner(sampler, *args, **kwargs)

        setattr(owner, name, timed)


def measure_decoding() -> tuple[Timer, Timer]:
    """Timers of decoding steps and of grammar masks (transformers backend)."""
    from spade_envs.llm.sampling import SeededSampler
    from spade_envs.llm.structured import RowMasks

    steps, masks = StepTimer(), Timer()
    steps.wrap(SeededSampler, "__call__")  # called once per decoding step of a batch
    masks.wrap(RowMasks, "allowed")
    return steps, masks


def raw_rate(
    model: Any, max_tokens: int, batch_size: int, temperature: float, seed: int
) -> tuple[float, float]:
    """The baseline: (replies per minute, mean tokens per reply) of one plain ``generate``
    of ``batch_size`` replies to a short prompt under the same budget and temperature."""
    from spade_envs.llm import SamplingParams

    prompt = [{"role": "user", "content": "Write a long, detailed story about a robot."}]
    params = SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=seed)
    model.generate([prompt], SamplingParams(max_tokens=2))  # warm-up
    started = time.perf_counter()
    replies = model.generate([prompt] * batch_size, params)
    minutes = (time.perf_counter() - started) / 60
    return batch_size / minutes, sum(len(r.token_ids) for r in replies) / batch_size


def parse_failures(report: Any) -> tuple[int, int]:
    """(replies that did not parse into a filling, fillings refused for a relation only)."""
    from spade_envs.generator.outcomes import DesignerFailure

    relation = unparsed = 0
    for attempt in report.attempts:
        if attempt.failure is None or attempt.stage.value != "generated":
            continue
        if attempt.failure == DesignerFailure.BROKEN_RELATION:
            relation += 1
        else:
            unparsed += 1
    return unparsed, relation


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--n", type=int, default=40, help="attempts per scaffold condition")
    parser.add_argument("--n-full", type=int, default=8, help="attempts per new/edit condition")
    parser.add_argument("--modes", default="scaffold,new,edit")
    parser.add_argument("--repairs", default="0,1")
    parser.add_argument(
        "--decoding",
        default="free,schema",
        help="scaffold replies: free, and/or schema (under the filling's JSON Schema)",
    )
    parser.add_argument("--max-tokens", type=int, default=768, help="new/edit replies")
    parser.add_argument("--scaffold-tokens", type=int, default=64, help="scaffold replies")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skill", default="", help="'' cycles through every skill")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from spade_envs.corpus import sample_corpus
    from spade_envs.generator import Designer, DesignerConfig
    from spade_envs.llm import load_model
    from spade_envs.memory import HashingEmbedder, Memory, MemoryConfig
    from spade_envs.registry import Registry
    from spade_envs.validation import Validator

    steps, masks = measure_decoding()
    corpus = sample_corpus()
    start = time.perf_counter()
    model = load_model(args.model)
    print(
        f"model {model.name} ({model.parameter_count or '?'} parameters) loaded in "
        f"{time.perf_counter() - start:.1f} s",
        flush=True,
    )
    rows = []
    modes = [m for m in args.modes.split(",") if m]
    repairs = [int(r) for r in args.repairs.split(",") if r]
    decodings = [d for d in args.decoding.split(",") if d]
    if not set(decodings) <= {"free", "schema"}:
        parser.error(f"--decoding takes free and/or schema, got {args.decoding!r}")
    budgets = {args.scaffold_tokens if m == "scaffold" else args.max_tokens for m in modes}
    raw = {
        budget: raw_rate(model, budget, args.batch_size, args.temperature, args.seed)
        for budget in sorted(budgets)
    }
    for budget, (per_minute, tokens) in raw.items():
        print(
            f"raw generation, {budget} tokens: {per_minute:.1f} replies per minute "
            f"({tokens:.0f} tokens each)",
            flush=True,
        )
    with tempfile.TemporaryDirectory() as tmp, Validator("fast", pool_size=2) as validator:
        for mode in modes:
            scaffold = mode == "scaffold"
            for decoding in decodings if scaffold else ["free"]:
                for repair in repairs:
                    registry = Registry(f"sqlite:///{tmp}/{mode}-{decoding}-{repair}.db")
                    registry.register_seeds()
                    memory = Memory(
                        registry, MemoryConfig(index="exact"), embedder=HashingEmbedder()
                    )
                    config = DesignerConfig(
                        n=args.n if scaffold else args.n_full,
                        skill=args.skill or None,
                        mode=mode,
                        repair_rounds=repair,
                        budget="fast",
                        batch_size=args.batch_size,
                        max_tokens=args.scaffold_tokens if scaffold else args.max_tokens,
                        temperature=args.temperature,
                        seed=args.seed,
                        constrained=decoding == "schema",
                    )
                    designer = Designer(
                        model, registry, memory, corpus, config, validator=validator
                    )
                    tag = f"[{mode} {decoding} r{repair}]"
                    before = (steps.seconds, steps.calls, masks.seconds, masks.calls)
                    report = designer.run(
                        progress=lambda a, tag=tag: print(
                            f"  {tag} attempt {a.index}: {a.stage}"
                            + (f" ({a.failure})" if a.failure else f" {a.env_id}"),
                            flush=True,
                        )
                    )
                    spent = (
                        steps.seconds - before[0],
                        steps.calls - before[1],
                        masks.seconds - before[2],
                        masks.calls - before[3],
                    )
                    rows.append((mode, decoding, repair, report, spent, raw[config.max_tokens][0]))
                    print(report.table(top=5), flush=True)
                    registry.close()
    model.close()
    summary(rows)


def summary(rows: list[tuple[str, str, int, Any, tuple[float, int, float, int], float]]) -> None:
    """The tables; ``vs raw`` is generated replies per minute over the raw generation rate
    of the same budget (the last item of a row)."""
    print()
    print(
        "mode      decoding repair  attempts generated parsed unparsed relation valid novel "
        "registered  yield  per minute (gen / valid / registered)  gen vs raw"
    )
    for mode, decoding, repair, report, _, raw in rows:
        c, minutes = report.counts, report.seconds / 60
        n = len(report.attempts)
        unparsed, relation = parse_failures(report)
        print(
            f"{mode:<9} {decoding:<8} {repair:>6}  {n:>8} {c['generated']:>9} {c['parsed']:>6} "
            f"{unparsed:>8} {relation:>8} {c['valid']:>5} {c['novel']:>5} {c['registered']:>10}  "
            f"{c['registered'] / n:5.1%}  {c['generated'] / minutes:6.1f} / "
            f"{c['valid'] / minutes:.2f} / {c['registered'] / minutes:.2f}  "
            f"({report.seconds:.0f} s)  {c['generated'] / minutes / raw:.2f}x of {raw:.1f}"
        )
    print()
    print("rejections by kind (attempts)")
    kinds = sorted({k for *_, r, _, _ in rows for k, v in r.failures.items() if v})
    print(f"{'mode':<9} {'decoding':<8} {'repair':>6}  " + " ".join(f"{k:>13}" for k in kinds))
    for mode, decoding, repair, report, _, _ in rows:
        failures = Counter(report.failures)
        print(
            f"{mode:<9} {decoding:<8} {repair:>6}  " + " ".join(f"{failures[k]:>13}" for k in kinds)
        )
    print()
    print(
        "decoding cost (transformers backend): a step is one forward pass and one draw for "
        "every row of a batch, prefill left out"
    )
    print(
        f"{'mode':<9} {'decoding':<8} {'repair':>6}  {'step s':>8} {'steps':>6} "
        f"{'ms/step':>8} {'mask ms/step':>12}"
    )
    per_step: dict[str, list[float]] = {}
    for mode, decoding, repair, _, (seconds, count, mask_seconds, mask_calls), _ in rows:
        if not count:
            continue
        ms = 1000 * seconds / count
        mask_ms = 1000 * mask_seconds / mask_calls if mask_calls else 0.0
        per_step.setdefault(decoding, []).append(ms)
        if decoding == "schema":
            per_step.setdefault("mask", []).append(mask_ms)
        print(
            f"{mode:<9} {decoding:<8} {repair:>6}  {seconds:>8.1f} {count:>6} {ms:>8.1f} "
            f"{mask_ms:>12.2f}"
        )
    if per_step.get("free") and per_step.get("schema"):
        free = sum(per_step["free"]) / len(per_step["free"])
        schema = sum(per_step["schema"]) / len(per_step["schema"])
        mask = sum(per_step["mask"]) / len(per_step["mask"])
        print(
            f"cost of constrained decoding per token: {schema / free:.3f}x the time of a free "
            f"step ({schema:.1f} vs {free:.1f} ms); the grammar masks alone take {mask:.2f} ms "
            f"per step, {mask / free:.2%} of a free step"
        )


if __name__ == "__main__":
    main()
