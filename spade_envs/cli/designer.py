"""``spade-envs generate``: run the Environment Designer from the command line."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..core.metadata import SKILLS
from .errors import SpadeCommand, options_checked
from .options import SuggestChoice

__all__ = ["DESIGNER_COMMANDS"]


@click.command("generate", cls=SpadeCommand)
@click.option(
    "--model",
    "model_spec",
    default="smollm2",
    show_default=True,
    help="smollm2 (the packaged SmolLM2-135M-Instruct), a local Hugging Face model "
    "directory, openai:<base url>[#model] or vllm:<path>.",
)
@click.option("--n", type=click.IntRange(1, 100_000), default=8, show_default=True)
@click.option(
    "--skill", type=SuggestChoice(SKILLS, "skill"), help="Default: cycle through every skill."
)
@click.option(
    "--mode",
    type=SuggestChoice(["auto", "scaffold", "new", "edit"], "mode"),
    default="auto",
    show_default=True,
    help="scaffold: fill a parent's declared holes (JSON; small models); new/edit: whole "
    "modules; auto: scaffold for models under 1B parameters, else new.",
)
@click.option(
    "--parent",
    help="scaffold: the registry ID whose holes every attempt fills (default: drawn per "
    "attempt among versions with holes).",
)
@click.option(
    "--repair",
    type=click.IntRange(0, 10),
    default=1,
    show_default=True,
    help="Repair rounds: rejected code goes back with the validator's report.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(exists=True),
    help="Grounding documents (JSONL, Parquet, a directory); default: the sample corpus.",
)
@click.option(
    "--budget",
    type=SuggestChoice(["fast", "default", "thorough"], "budget"),
    default="fast",
    show_default=True,
    help="Validation budget.",
)
@click.option("--batch-size", type=click.IntRange(1, 256), default=4, show_default=True)
@click.option(
    "--max-tokens",
    type=click.IntRange(16, 32_768),
    help="Longest reply [default: 64 for scaffold, 1536 for new/edit].",
)
@click.option("--temperature", type=click.FloatRange(0.0, 2.0), default=0.8, show_default=True)
@click.option(
    "--embedder",
    type=SuggestChoice(["auto", "minilm", "hashing"], "embedder"),
    default="auto",
    show_default=True,
    help="Embedder of the novelty check and the memory.",
)
@click.option(
    "--constrained/--free",
    default=True,
    show_default=True,
    help="scaffold: decode each reply under its parent's JSON Schema (llguidance here, "
    "structured outputs in vLLM, response_format for openai: servers; a filling that does "
    "not parse cannot be written); --free samples unconstrained text.",
)
@click.option(
    "--hints/--no-hints",
    default=False,
    show_default=True,
    help="Also ask the model for a strategy hint for each registered environment.",
)
def generate(
    model_spec: str,
    n: int,
    skill: str | None,
    mode: str,
    parent: str | None,
    repair: int,
    seed: int,
    corpus_path: str | None,
    budget: str,
    batch_size: int,
    max_tokens: int | None,
    temperature: float,
    embedder: str,
    constrained: bool,
    hints: bool,
) -> None:
    """Generate N environments: prompt -> model -> validate (-> repair) -> novelty -> register.

    Prints a progress bar, then how many were generated, parsed, valid, novel and
    registered, the failed attempts by kind (model_error, no_code, truncated, invalid,
    validator_error, not_novel, ...) and the most common rejection reasons. Exits with
    status 1 when every attempt failed outside the written code (the model request, the
    prompt or the validator itself): then nothing was designed at all.

    \b
    Examples:
      spade-envs generate --model smollm2 --n 8 --skill logic
      spade-envs generate --mode scaffold --parent spade/NumberGuess-v1 --n 16
      spade-envs generate --model openai:http://127.0.0.1:8000 --n 64 --mode edit --repair 2
    """
    from ..corpus import open_corpus, sample_corpus
    from ..generator import Designer, DesignerConfig, HintWriter
    from ..generator.pipeline import resolve_mode
    from ..generator.scaffold import Scaffold
    from ..llm import load_model
    from ..memory import Memory, MemoryConfig
    from ..registry import Registry

    corpus = open_corpus(corpus_path) if corpus_path else sample_corpus()
    registry = Registry(seeds=True)
    memory = Memory(registry, MemoryConfig(embedder=embedder))
    if parent is not None:  # refuse a parent without holes before loading any model
        if mode not in ("scaffold", "auto"):
            raise click.UsageError(f"--parent is for --mode scaffold (got --mode {mode}).")
        registry.register_seeds()
        record = registry.get(parent)  # an unknown ID: exit 1, with close matches
        with options_checked("'--parent'"):  # a parent without holes: a usage error
            Scaffold(record.source, record.id)
    click.echo(f"loading {model_spec} ...", err=True)
    with load_model(model_spec) as model:
        # A named parent means scaffold mode, whatever size auto would read off the model.
        chosen = "scaffold" if parent is not None else resolve_mode(mode, model)
        if chosen == "scaffold" and parent is None:  # a named parent registered them above
            registry.register_seeds()  # the packaged parents with holes
        config = DesignerConfig(
            n=n,
            skill=skill,
            mode=chosen,
            parent=parent,
            repair_rounds=repair,
            budget=budget,
            batch_size=batch_size,
            temperature=temperature,
            max_tokens=max_tokens or (64 if chosen == "scaffold" else 1536),
            seed=seed,
            constrained=constrained,
        )
        designer = Designer(model, registry, memory, corpus, config)
        with click.progressbar(length=n, label="designing", file=sys.stderr) as bar:

            def advance(_attempt: Any) -> None:
                bar.update(1)

            report = designer.run(progress=advance)
        click.echo(report.table())
        registered = [a for a in report.attempts if a.stage == "registered"]
        if hints and registered:
            writer = HintWriter(model)
            for attempt, hint in zip(
                registered, writer.write([a.code for a in registered], seed=seed)
            ):
                if hint.ok:
                    registry.set_hint(attempt.env_id, hint.text)
                click.echo(f"hint for {attempt.env_id}: " + ("stored" if hint.ok else hint.reason))
    for attempt in registered:
        click.echo(f"registered {attempt.env_id}")
    if report.nothing_designed:
        failed = ", ".join(f"{n} {kind}" for kind, n in report.failures.items() if n)
        first = report.attempts[0].reason
        raise click.ClickException(
            f"Every one of the {len(report.attempts)} attempts failed before any code could "
            f"be judged ({failed}); the first: {first}. Check that the model loads or its "
            "server answers, and that the sandbox runs (`spade-envs play NumberGuess --auto "
            "solution`)."
        )


DESIGNER_COMMANDS = (generate,)
