"""The designer pipeline: prompt -> model -> code -> validate (-> repair) -> novelty -> register.

Every generation attempt is accounted for, whatever goes wrong: a model error, a reply
without code, a module that does not parse, a validation failure, a near-copy of a
stored environment. Each failed attempt carries its kind (``Attempt.failure``, a
:class:`~spade_envs.generator.outcomes.DesignerFailure`) and its reason; the
:class:`DesignerReport` counts both. Nothing in one attempt can stop the batch. Rejected
validations get up to ``repair_rounds`` more turns in the same conversation, with the
validator's report as feedback.

Modes:
    new: a new environment grounded on a corpus document and on memory (similar and
        high-hint-gain references, too-easy and too-hard negative examples).
    edit: a variant of a high-hint-gain environment (as ACCEL mutates levels); when the
        memory has no played environment of the skill, a validated one is used, and
        with none at all the attempt falls back to ``new`` (recorded).
    scaffold: new values for the declared holes of a parent (:mod:`.scaffold`), as a
        JSON object; the filled parent is a complete module that takes the same road
        (gate, novelty -- of the filling, against the parent and its whole family --,
        registration with the parent and the filling as lineage). For small models,
        which cannot write whole modules. With ``constrained`` (the default) the reply is
        decoded under the filling's JSON Schema (:mod:`.schema`), so it always parses
        into the right keys and types; a parent whose holes no schema can describe is
        refused for that attempt (``prompt_error``, naming the hole).
    auto: ``scaffold`` for models under :data:`SCAFFOLD_BELOW_PARAMETERS` parameters,
        ``new`` for larger ones and for models of unknown size (remote servers).
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.metadata import SKILLS
from ..error import SpadeError
from .extract import extract_code
from .outcomes import AttemptStage, DesignerFailure
from .parents import Parent, ScaffoldParents, aim
from .prompts import EDIT_CHANGES, DesignerPrompts, Reference, describe_stats, prompt_sha256
from .scaffold import FillingError, RelationBroken, parse_filling
from .schema import SchemaError, filling_schema

__all__ = [
    "ATTEMPT_FAILURES",
    "INFRASTRUCTURE_FAILURES",
    "MODES",
    "SCAFFOLD_BELOW_PARAMETERS",
    "Attempt",
    "Designer",
    "DesignerConfig",
    "DesignerReport",
]

MODES = ("new", "edit", "scaffold")
#: Models smaller than this get ``scaffold`` under ``mode="auto"``: SmolLM2-135M registers
#: nothing in ``new``/``edit`` (it cannot copy a 50-line module) and fills holes well
#: enough (``benchmarks/designer_yield.py``); no model between 135M and this size could be
#: measured here, so the bound is a placeholder until one is.
SCAFFOLD_BELOW_PARAMETERS = 1_000_000_000
#: Stages an attempt passes, in order (:class:`AttemptStage`); it stops at the first it fails.
STAGES = tuple(AttemptStage)
#: Why an attempt failed (:class:`DesignerFailure`).
ATTEMPT_FAILURES = tuple(DesignerFailure)
#: Failures that say nothing about the code the model wrote
#: (:attr:`DesignerFailure.infrastructure`).
INFRASTRUCTURE_FAILURES = tuple(f for f in DesignerFailure if f.infrastructure)


@dataclass(frozen=True)
class DesignerConfig:
    """Settings of one designer run (``spade-envs generate`` fills it from its options).

    Attributes:
        n: Environments to attempt.
        skill: Target skill; None cycles through every skill.
        mode: ``new``, ``edit``, ``scaffold`` or ``auto`` (by the model's size).
        parent: ``scaffold`` only: the registry ID whose holes every attempt fills
            (None draws a parent with holes per attempt, preferring the learnable band).
        repair_rounds: Extra turns a rejected attempt gets, with the validator's feedback.
        novelty_threshold: Minimum distance (1 - cosine) to the nearest stored environment.
        held_out: ``scaffold`` only: environment names that are never parents (a
            trainer's evaluation seeds), nor are their scaffolded children.
        filling_threshold: ``scaffold`` only: minimum
            :func:`~spade_envs.generator.scaffold.filling_distance` of a filling to its
            parent's values and to every version of its family (same base name).
        budget: Validation budget (``fast``, ``default``, ``thorough``).
        difficulty: Words for the prompt (``easy``, ``medium``, ``hard``).
        references: Similar environments shown in a ``new`` prompt.
        batch_size: Conversations sent to the model at once.
        temperature: Sampling temperature.
        max_tokens: Longest reply.
        seed: Seeds document sampling, skill/parent choice and model sampling.
        run_id: Recorded with every registered environment (default: a new UUID).
        constrained: ``scaffold`` only: decode each reply under its filling's JSON Schema
            (``SamplingParams.json_schema``; :func:`~.schema.filling_schema` of the hole
            the attempt changes, required, and the parent's other numeric holes), so a
            reply always parses; relations between holes are still checked after
            parsing. False lets the model write freely, as before.
    """

    n: int = 8
    skill: str | None = None
    mode: str = "auto"
    parent: str | None = None
    repair_rounds: int = 1
    novelty_threshold: float = 0.05
    filling_threshold: float = 0.05
    held_out: tuple[str, ...] = ()
    budget: str = "fast"
    difficulty: str = "medium"
    references: int = 1
    batch_size: int = 4
    temperature: float = 0.8
    max_tokens: int = 1536
    seed: int = 0
    run_id: str | None = None
    constrained: bool = True

    def __post_init__(self) -> None:
        if self.mode not in (*MODES, "auto"):
            raise SpadeError(f"mode must be one of {(*MODES, 'auto')}, got {self.mode!r}.")
        if self.parent is not None and self.mode not in ("scaffold", "auto"):
            raise SpadeError(f"parent= is for mode 'scaffold' (got mode {self.mode!r}).")
        if self.skill is not None and self.skill not in SKILLS:
            import difflib

            close = difflib.get_close_matches(str(self.skill), SKILLS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise SpadeError(f"skill must be one of {SKILLS}, got {self.skill!r}.{hint}")
        if self.n < 1 or self.batch_size < 1 or self.repair_rounds < 0:
            raise SpadeError("n and batch_size must be at least 1, repair_rounds at least 0.")


@dataclass
class Attempt:
    """One environment the designer was asked for, and how far it got.

    ``stage`` is how far it got; ``failure`` why it stopped (None while nothing failed, and
    once registered); ``reason`` says the same in words, for people and repair prompts.
    Both are string-valued enums, so :func:`dataclasses.asdict` gives JSON-ready words and
    ``Attempt(**fields)`` turns such words back into members.
    """

    index: int
    mode: str
    skill: str
    stage: AttemptStage = AttemptStage.REQUESTED
    reason: str = ""
    failure: DesignerFailure | None = None
    rounds: int = 0  # model turns used (1 + repairs)
    env_id: str = ""
    document_id: int | None = None
    parent_id: str = ""
    prompt_sha256: str = ""
    code: str = ""
    #: How new the attempt was: 1 - cosine to the nearest stored environment (new, edit),
    #: or the filling distance to its family (scaffold); compared with the matching threshold.
    novelty: float | None = None
    #: scaffold: the holes the reply filled (parsed), and every hole's resulting value.
    filling: dict[str, Any] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict, repr=False)
    ignored_keys: list[str] = field(default_factory=list)  # keys naming no hole
    messages: list[dict[str, str]] = field(default_factory=list, repr=False)
    reply: str = field(default="", repr=False)
    # The last reply's tokens and their log-probs: what a trainer's designer update needs
    # (``messages`` is always the prompt that reply answered).
    reply_token_ids: list[int] = field(default_factory=list, repr=False)
    prompt_token_ids: list[int] = field(default_factory=list, repr=False)
    reply_logprobs: list[float] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        # Words read back from a checkpoint (or passed by hand) become members.
        self.stage = AttemptStage.of(self.stage)
        self.failure = DesignerFailure.of(self.failure)

    @property
    def repaired(self) -> bool:
        return self.rounds > 1 and self.stage.rank >= AttemptStage.VALID.rank


@dataclass
class DesignerReport:
    """What a run produced: per-attempt records, stage counts and rejection reasons."""

    model: str
    config: DesignerConfig
    attempts: list[Attempt] = field(default_factory=list)
    seconds: float = 0.0
    mode: str = ""  # the mode used (``config.mode`` with ``auto`` resolved)

    def count(self, stage: str | AttemptStage) -> int:
        """Attempts that reached ``stage`` (see :data:`STAGES`)."""
        rank = AttemptStage.of(stage).rank
        return sum(1 for a in self.attempts if a.stage.rank >= rank)

    @property
    def counts(self) -> dict[str, int]:
        out = {stage.value: self.count(stage) for stage in STAGES}
        out["repaired"] = sum(1 for a in self.attempts if a.repaired)
        return out

    @property
    def reasons(self) -> Counter[str]:
        return Counter(a.reason for a in self.attempts if a.reason)

    @property
    def failures(self) -> dict[str, int]:
        """Failed attempts per :class:`DesignerFailure` value (every kind, 0 included)."""
        counts = Counter(a.failure for a in self.attempts if a.failure is not None)
        return {kind.value: counts.get(kind, 0) for kind in DesignerFailure}

    @property
    def nothing_designed(self) -> bool:
        """Whether every attempt failed for a reason outside the written code
        (:attr:`DesignerFailure.infrastructure`): the model, the prompt or the validator."""
        return bool(self.attempts) and all(
            a.failure is not None and a.failure.infrastructure for a in self.attempts
        )

    def table(self, top: int = 5) -> str:
        """A summary table: counts per stage and the most common rejection reasons."""
        counts = self.counts
        mode = self.mode or self.config.mode
        lines = [f"designer run: {self.model}, mode {mode}, {self.seconds:.0f} s"]
        for stage in STAGES:
            lines.append(f"  {stage.value:<11} {counts[stage]:>5}")
        lines.append(f"  {'repaired':<11} {counts['repaired']:>5}  (valid only after a repair)")
        failed = ", ".join(f"{n} {kind}" for kind, n in self.failures.items() if n)
        if failed:
            lines.append(f"failed attempts: {failed} of {len(self.attempts)}")
        if self.reasons:
            lines.append("top rejection reasons:")
            for reason, n in self.reasons.most_common(top):
                lines.append(f"  {n:>4}  {reason}")
        return "\n".join(lines)


def _short_reason(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Designer:
    """Runs the designer pipeline with one model over one registry.

    Args:
        model: A :class:`spade_envs.llm.ChatModel`.
        registry: A :class:`spade_envs.registry.Registry`.
        memory: A :class:`spade_envs.memory.Memory` over the same registry.
        corpus: A :class:`spade_envs.corpus.Corpus` of grounding documents.
        config: The run's settings.
        validator: A :class:`spade_envs.validation.Validator` (one is made, and closed,
            when omitted).
    """

    def __init__(
        self,
        model: Any,
        registry: Any,
        memory: Any,
        corpus: Any,
        config: DesignerConfig | None = None,
        validator: Any = None,
    ):
        self.model = model
        self.registry = registry
        self.memory = memory
        self.corpus = corpus
        self.config = config or DesignerConfig()
        self.prompts = DesignerPrompts()
        self.run_id = self.config.run_id or uuid.uuid4().hex
        self._validator = validator
        self._own_validator = validator is None
        self._rng = random.Random(self.config.seed)
        self.mode = resolve_mode(self.config.mode, model)
        self._parents: ScaffoldParents | None = None
        self._drawn: dict[int, Parent] = {}  # attempt index -> the parent it fills
        self._schemas: dict[int, dict[str, Any]] = {}  # attempt index -> its reply's schema
        if self.mode == "scaffold":  # a named parent without holes is refused here
            self._parents = ScaffoldParents(
                registry, memory, self._rng, self.config.parent, held_out=self.config.held_out
            )

    # ----- the run --------------------------------------------------------------------------
    def run(self, progress: Callable[[Attempt], None] | None = None) -> DesignerReport:
        """Attempt ``config.n`` environments; ``progress`` is called as each one finishes."""
        from ..llm.base import SamplingParams
        from ..validation import Validator

        if self._validator is None:
            self._validator = Validator(self.config.budget, pool_size=2)
        report = DesignerReport(
            getattr(self.model, "name", str(self.model)), self.config, mode=self.mode
        )
        start = time.perf_counter()
        self.memory.sync()
        try:
            for first in range(0, self.config.n, self.config.batch_size):
                count = min(self.config.batch_size, self.config.n - first)
                batch = [self._prepare(first + i) for i in range(count)]
                report.attempts.extend(batch)
                # An attempt whose prompt could not be built (prompt_error) is never sent.
                pending = [
                    a for a in batch if a.stage is AttemptStage.REQUESTED and a.failure is None
                ]
                for _round in range(1 + self.config.repair_rounds):
                    if not pending:
                        break
                    params = SamplingParams(
                        temperature=self.config.temperature,
                        max_tokens=self.config.max_tokens,
                        seed=self.config.seed * 100_003 + pending[0].index * 17 + _round,
                    )
                    replies = self._generate(pending, params)
                    retry = []
                    for attempt, completion in zip(pending, replies):
                        attempt.rounds += 1
                        if self._judge(attempt, completion):
                            retry.append(attempt)
                    pending = [a for a in retry if _round < self.config.repair_rounds]
                for attempt in batch:
                    if progress is not None:
                        progress(attempt)
        finally:
            if self._own_validator and self._validator is not None:
                self._validator.close()
                self._validator = None
        report.seconds = time.perf_counter() - start
        return report

    def _generate(self, pending: list[Attempt], params: Any) -> list[Any]:
        """The model's replies to ``pending``; attempts with a schema are decoded under it
        (one request per attempt, item ``i`` seeded ``params.seed + i`` as in a batch)."""
        conversations = [a.messages for a in pending]
        if not any(a.index in self._schemas for a in pending):
            return self.model.generate(conversations, params)
        each = [
            replace(params, seed=params.seed_for(i), json_schema=self._schemas.get(a.index))
            for i, a in enumerate(pending)
        ]
        return self.model.generate_each(conversations, each)

    def _prepare(self, index: int) -> Attempt:
        """Choose the skill, document and references, and build the first prompt."""
        skill = self.config.skill or SKILLS[(self.config.seed + index) % len(SKILLS)]
        attempt = Attempt(index=index, mode=self.mode, skill=skill)
        try:
            if self.mode == "scaffold":
                attempt.messages = self._scaffold_prompt(attempt)
                attempt.prompt_sha256 = prompt_sha256(attempt.messages)
                return attempt
            document = self.corpus.sample(1, seed=self.config.seed * 1_000_003 + index)[0]
            attempt.document_id = self.registry.add_document(document.text, source=document.doc_id)
            messages = None
            if self.config.mode == "edit":
                messages = self._edit_prompt(attempt, document.text)
            if messages is None:
                attempt.mode = "new"
                messages = self._new_prompt(skill, document.text)
            attempt.messages = messages
            attempt.prompt_sha256 = prompt_sha256(messages)
        except SchemaError as exc:  # the parent's holes cannot be constrained: refused
            attempt.reason = _short_reason(f"no reply schema: {exc}", 240)
            attempt.failure = DesignerFailure.PROMPT_ERROR
        except SpadeError as exc:
            attempt.reason = _short_reason(f"prompt: {exc}")
            attempt.failure = DesignerFailure.PROMPT_ERROR
        return attempt

    def _new_prompt(self, skill: str, document: str) -> list[dict[str, str]]:
        references = [
            Reference(hit.record.id, hit.record.source, "similar to the document")
            for hit in self.memory.similar(document, k=self.config.references)
        ]
        for record, stats in self.memory.high_hint_gain(skill=skill, k=1):
            if record.id not in {r.env_id for r in references}:
                references.append(
                    Reference(record.id, record.source, f"high hint gain: {describe_stats(stats)}")
                )
        negatives = [
            Reference(record.id, "", f"too easy ({describe_stats(stats)})")
            for record, stats in self.memory.too_easy(k=1)
        ] + [
            Reference(record.id, "", f"too hard ({describe_stats(stats)})")
            for record, stats in self.memory.too_hard(k=1)
        ]
        return self.prompts.new(
            document=document,
            skill=skill,
            difficulty=self.config.difficulty,
            references=references,
            negatives=negatives,
        )

    def _scaffold_prompt(self, attempt: Attempt) -> list[dict[str, str]]:
        assert self._parents is not None
        parent = self._parents.choose(attempt.skill)
        self._drawn[attempt.index] = parent
        attempt.parent_id, attempt.skill = parent.record.id, parent.record.skill
        children = []
        for child in self._parents.children(parent.record.id)[:4]:
            changed = {
                k: v for k, v in child.values.items() if v != parent.scaffold.defaults().get(k)
            }
            outcome = describe_stats(child.stats) if child.stats else "not played yet"
            children.append((json.dumps(changed, ensure_ascii=False)[:200], outcome))
        # The memory's examples of what misses the band, by name and outcome only (short
        # prompts are what keep a small model in the answer format).
        examples = [
            (record.id, f"too easy ({describe_stats(stats)})")
            for record, stats in self.memory.too_easy(k=1)
        ] + [
            (record.id, f"too hard ({describe_stats(stats)})")
            for record, stats in self.memory.too_hard(k=1)
        ]
        scaffold = parent.scaffold
        offered = scaffold.numeric_holes() or [h.name for h in scaffold.holes if h.kind == "value"]
        focus = self._rng.choice(offered or [h.name for h in scaffold.holes])
        if self.config.constrained:
            # The hole the prompt asks to change is required and written first; the other
            # holes of its kind may follow (a rule hole is refused here, naming it).
            names = [focus, *(name for name in offered if name != focus)]
            self._schemas[attempt.index] = filling_schema(scaffold, names, required=[focus])
        return self.prompts.scaffold(
            examples=examples,
            parent_id=parent.record.id,
            scaffold=scaffold,
            skill=parent.record.skill,
            description=parent.record.description,
            aim=aim(parent.stats),
            focus=focus,
            children=children,
        )

    def _edit_prompt(self, attempt: Attempt, document: str) -> list[dict[str, str]] | None:
        played = self.memory.high_hint_gain(skill=attempt.skill, k=5)
        if played:
            parent, stats = self._rng.choice(played)
            win_rate, hint_gain = stats.win_rate, stats.hint_gain
        else:
            candidates = self.registry.list(skill=attempt.skill, status="validated", limit=50)
            candidates = [c for c in candidates if c.kind == "text"] or candidates
            if not candidates:
                return None
            parent, win_rate, hint_gain = self._rng.choice(candidates), 0.5, 0.0
        attempt.parent_id = parent.id
        return self.prompts.edit(
            parent=Reference(parent.id, parent.source, "high hint gain"),
            skill=attempt.skill,
            win_rate=win_rate,
            hint_gain=hint_gain,
            change=self._rng.choice(EDIT_CHANGES),
            document=document,
        )

    # ----- judging one reply ----------------------------------------------------------------
    def _judge(self, attempt: Attempt, completion: Any) -> bool:
        """Take one reply through parse -> validate -> novelty -> register.

        Returns:
            True when the attempt should get a repair turn.
        """
        attempt.stage, attempt.failure = AttemptStage.REQUESTED, None
        if not completion.ok:
            attempt.reason = _short_reason(f"model error: {completion.error}")
            attempt.failure = DesignerFailure.MODEL_ERROR
            return False
        attempt.stage, attempt.reply = AttemptStage.GENERATED, completion.text
        attempt.reply_token_ids = list(completion.token_ids or [])
        # A reply decoded under a schema keeps no recorded log-probs: vLLM reports them
        # after its grammar mask (renormalised), the transformers backend before it; the
        # trainer then computes the behaviour log-probs itself, from the raw model alike.
        constrained = attempt.index in self._schemas
        attempt.reply_logprobs = [] if constrained else list(completion.logprobs or [])
        attempt.prompt_token_ids = list(completion.prompt_token_ids or [])
        if attempt.mode == "scaffold":
            return self._judge_filling(attempt, completion)
        extraction = extract_code(completion.text)
        if not extraction.ok:
            if completion.finish_reason == "length" and extraction.reason != "no code":
                attempt.reason = "truncated (hit max_tokens)"
                attempt.failure = DesignerFailure.TRUNCATED
            else:
                attempt.reason = f"no usable code: {extraction.reason}"
                attempt.failure = DesignerFailure.NO_CODE
            return self._ask_repair(attempt, completion.text, f"- {attempt.reason}")
        attempt.stage, attempt.code = AttemptStage.PARSED, extraction.code
        return self._gate(attempt, completion.text)

    def _judge_filling(self, attempt: Attempt, completion: Any) -> bool:
        """A scaffold reply: parse the filling, fill the parent, then the common road."""
        parent, reply = self._drawn[attempt.index], completion.text
        attempt.filling, attempt.values, attempt.code, attempt.ignored_keys = {}, {}, "", []
        try:
            filling, ignored = parse_filling(reply, parent.scaffold)
            code, _name = parent.scaffold.fill(filling)
        except FillingError as exc:
            if completion.finish_reason == "length":
                attempt.reason = "truncated (hit max_tokens)"
                attempt.failure = DesignerFailure.TRUNCATED
            elif isinstance(exc, RelationBroken):
                attempt.reason = _short_reason(f"broken relation: {exc}")
                attempt.failure = DesignerFailure.BROKEN_RELATION
            else:
                attempt.reason = _short_reason(f"bad filling: {exc}")
                attempt.failure = DesignerFailure.BAD_FILLING
            return self._ask_repair(attempt, reply, f"- {exc}")
        attempt.filling, attempt.ignored_keys = filling, ignored
        attempt.values = {**parent.scaffold.defaults(), **filling}
        attempt.code = code
        attempt.stage = AttemptStage.PARSED
        return self._gate(attempt, reply)

    def _novelty(self, attempt: Attempt, code: str, meta: Any) -> tuple[float, str]:
        """The attempt's novelty score and the nearest stored version's ID."""
        if attempt.mode == "scaffold":
            return self._parents.novelty(self._drawn[attempt.index], attempt.values)
        novelty = self.memory.novelty(code, meta.description, meta.skill)
        return novelty.score, (novelty.nearest.record.id if novelty.nearest else "?")

    def _gate(self, attempt: Attempt, reply: str) -> bool:
        """Validate -> novelty -> register ``attempt.code``; True asks for a repair turn."""
        try:
            report = self._validator.validate(attempt.code, filename=f"designer-{attempt.index}.py")
        except SpadeError as exc:  # the validator itself could not run: not the code's fault
            attempt.reason = _short_reason(f"validator: {type(exc).__name__}: {exc}")
            attempt.failure = DesignerFailure.VALIDATOR_ERROR
            return False
        if not report.passed:
            failure = report.failures[0] if report.failures else None
            attempt.reason = _short_reason(
                f"invalid: {failure.name}: {failure.reason}" if failure else "invalid"
            )
            attempt.failure = DesignerFailure.INVALID
            return self._ask_repair(attempt, reply, report.feedback())
        attempt.stage = AttemptStage.VALID
        from ..validation.static import static_metadata

        meta = static_metadata(
            attempt.code,
            origin="designer",
            parents=(attempt.parent_id,) if attempt.parent_id else (),
        )
        attempt.novelty, near = self._novelty(attempt, attempt.code, meta)
        threshold = (
            self.config.filling_threshold
            if attempt.mode == "scaffold"
            else self.config.novelty_threshold
        )
        if attempt.novelty < threshold:
            what = "filling distance" if attempt.mode == "scaffold" else "distance"
            attempt.reason = f"not novel: {what} {attempt.novelty:.3f} from {near}"
            attempt.failure = DesignerFailure.NOT_NOVEL
            if attempt.mode == "scaffold":  # a filling is cheap to redo: say what to avoid
                return self._ask_repair(
                    attempt,
                    reply,
                    f"- these values are (nearly) those of {near}; choose values that differ "
                    f"by more than {self.config.filling_threshold:.0%}",
                )
            return False
        attempt.stage = AttemptStage.NOVEL
        extra: dict[str, Any] = {
            "designer_run": self.run_id,
            "mode": attempt.mode,
            "rounds": attempt.rounds,
        }
        if attempt.mode == "scaffold":
            extra["scaffold"] = {
                "parent": attempt.parent_id,
                "filled": attempt.filling,
                "values": attempt.values,
                "ignored_keys": attempt.ignored_keys,
                "constrained": attempt.index in self._schemas,
            }
        try:
            record = self.registry.register(
                attempt.code,
                meta,
                status="validated",
                document_id=attempt.document_id,
                model=getattr(self.model, "name", ""),
                run_id=None,
                prompt_sha256=attempt.prompt_sha256,
                extra=extra,
                report=report,
            )
        except SpadeError as exc:
            attempt.reason = _short_reason(f"registry: {exc}")
            attempt.failure = DesignerFailure.REGISTRY_ERROR
            return False
        attempt.stage, attempt.env_id, attempt.reason = AttemptStage.REGISTERED, record.id, ""
        attempt.failure = None
        self.memory.sync()  # later attempts in this run see it when judging novelty
        return False

    def _ask_repair(self, attempt: Attempt, reply: str, feedback: str) -> bool:
        if attempt.rounds > self.config.repair_rounds:
            return False
        attempt.messages = self.prompts.repair(
            attempt.messages, reply, feedback, scaffold=attempt.mode == "scaffold"
        )
        return True


def resolve_mode(mode: str, model: Any) -> str:
    """``mode`` with ``auto`` resolved by the model's size (``parameter_count``)."""
    if mode != "auto":
        return mode
    size = getattr(model, "parameter_count", None)
    return "scaffold" if size and size < SCAFFOLD_BELOW_PARAMETERS else "new"
