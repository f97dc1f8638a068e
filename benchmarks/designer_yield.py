"""What does each designer choice buy? Yield of one model by mode and repair, in one run.

For each condition (mode ``scaffold``, ``new`` or ``edit``, with and without a repair
round) the designer attempts environments into a fresh registry that holds the 32 seeds
(the memory's references, the edit mode's parents, the scaffold mode's parents with
holes). Prints, per condition: how many replies were generated, parsed, valid, novel and
registered, the share registered (the yield), those counts per minute of wall time, and
the rejection reasons by kind; the model is loaded once. Whole-module modes write long
replies and are slow on a CPU, so they get their own (smaller) attempt count.

    python benchmarks/designer_yield.py [--model smollm2] [--n 40] [--n-full 8]
        [--modes scaffold,new,edit] [--repairs 0,1]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--n", type=int, default=40, help="attempts per scaffold condition")
    parser.add_argument("--n-full", type=int, default=8, help="attempts per new/edit condition")
    parser.add_argument("--modes", default="scaffold,new,edit")
    parser.add_argument("--repairs", default="0,1")
    parser.add_argument("--max-tokens", type=int, default=768, help="new/edit replies")
    parser.add_argument("--scaffold-tokens", type=int, default=64, help="scaffold replies")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skill", default="", help="'' cycles through every skill")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from spade_envs.corpus import sample_corpus
    from spade_envs.generator import Designer, DesignerConfig
    from spade_envs.llm import load_model
    from spade_envs.memory import HashingEmbedder, Memory, MemoryConfig
    from spade_envs.registry import Registry
    from spade_envs.validation import Validator

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
    with tempfile.TemporaryDirectory() as tmp, Validator("fast", pool_size=2) as validator:
        for mode in modes:
            for repair in repairs:
                registry = Registry(f"sqlite:///{tmp}/{mode}-{repair}.db")
                registry.register_seeds()
                memory = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
                scaffold = mode == "scaffold"
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
                )
                designer = Designer(model, registry, memory, corpus, config, validator=validator)
                tag = f"[{mode} r{repair}]"
                report = designer.run(
                    progress=lambda a, tag=tag: print(
                        f"  {tag} attempt {a.index}: {a.stage}"
                        + (f" ({a.failure})" if a.failure else f" {a.env_id}"),
                        flush=True,
                    )
                )
                rows.append((mode, repair, report))
                print(report.table(top=5), flush=True)
                registry.close()
    model.close()

    print()
    print(
        "mode      repair  attempts generated parsed valid novel registered  yield  "
        "per minute (gen / valid / registered)"
    )
    for mode, repair, report in rows:
        c, minutes = report.counts, report.seconds / 60
        n = len(report.attempts)
        print(
            f"{mode:<9} {repair:>6}  {n:>8} {c['generated']:>9} {c['parsed']:>6} {c['valid']:>5} "
            f"{c['novel']:>5} {c['registered']:>10}  {c['registered'] / n:5.0%}  "
            f"{c['generated'] / minutes:6.1f} / {c['valid'] / minutes:.2f} / "
            f"{c['registered'] / minutes:.2f}  ({report.seconds:.0f} s)"
        )
    print()
    print("rejections by kind (attempts)")
    kinds = sorted({k for _, _, r in rows for k, v in r.failures.items() if v})
    print(f"{'mode':<9} {'repair':>6}  " + " ".join(f"{k:>13}" for k in kinds))
    for mode, repair, report in rows:
        failures = Counter(report.failures)
        print(f"{mode:<9} {repair:>6}  " + " ".join(f"{failures[k]:>13}" for k in kinds))


if __name__ == "__main__":
    main()
