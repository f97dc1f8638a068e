"""The environment card: what a Hub visitor expects at the top of an environment's page.

:func:`card` gathers, as plain data for ``env_card.html``: the example episode (the
reference solution played from seed 0 in the sandbox, see :mod:`.examples`), the
difficulty knobs with their defaults, tags (kind, skill, origin, suite, turns, tools),
licence and origin, a copyable ``pip install`` + ``gym.make`` snippet and the version
history of the name. Two routes belong to the card: the diff of one version against
another (``/env/<Name>-v<N>/diff``, by default against the previous version) and a
single-environment package (``/env/<Name>-v<N>/package.zip``, written by the same
exporter as ``spade-envs export --format package``).

Every value here is stored or model-written text; the templates escape all of it.
"""

from __future__ import annotations

import ast
import collections
import difflib
import functools
import io
import json
import re
import shutil
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..core.dialect import DIALECT_NOTES, dialect_label, dialect_of_tree
from ..core.pyparse import parse_source
from ..error import SpadeError
from ..registry.ids import parse_env_id
from .examples import Example, examples_of
from .params import HTTPError, Params, query_of
from .params import parse_slug as slug_to_id
from .render import env_href, fmt_time, qs

__all__ = [
    "card",
    "diff_lines",
    "diff_page",
    "package_download",
    "package_name",
    "parse_slug",
    "source_facts",
]

#: Versions of a name listed in the history (the newest, and always the one shown).
MAX_HISTORY = 20
#: Larger sources are not diffed in the browser (lines of either side): difflib is
#: quadratic on sources whose lines alternate kept and changed (0.2 s at 1,000 lines,
#: 0.7 s at 2,000 here), and sources are an adversary's.
MAX_DIFF_SOURCE_LINES = 1_500
#: Lines of a unified diff shown.
MAX_DIFF_LINES = 5_000
#: Seconds after which a card whose example is still being played reloads itself.
RELOAD_S = 2
_SPADE_LICENCE = "Apache-2.0"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: How to install spade-envs when its metadata names no repository: it is not on PyPI,
#: so ``pip install spade-envs`` fails (or installs someone else's package).
CLONE_INSTALL = (
    "pip install -e .   # in a clone of the spade-envs repository (it is not on PyPI); "
    "or pip install a wheel built from it"
)
#: Project-URL labels (pyproject's ``[project.urls]``) that name the code's repository.
_REPOSITORY_LABELS = ("repository", "source", "source code", "code")
_PLAIN_URL = re.compile(r"https://[A-Za-z0-9._~/:@%+-]+")


def parse_slug(slug: str) -> str:
    """``Name-v3`` (from ``/env/Name-v3``) as the ID ``spade/Name-v3``; 400 when malformed."""
    return slug_to_id(slug, "/env/NumberGuess-v1")


def _is_seed(record: Any) -> bool:
    from ..seeds import is_seed_source

    return is_seed_source(record.source)


# ----- knobs ---------------------------------------------------------------------------------


#: Dialect labels and static knobs kept, by source SHA-256 and class name (versions are
#: immutable): a first view parses its source once, a later one not at all.
FACTS_CACHE = 1024
_facts: collections.OrderedDict[tuple[str, str], tuple[str, dict[str, Any] | None]] = (
    collections.OrderedDict()
)
_facts_lock = threading.Lock()
#: Parses done by :func:`source_facts` (the tests check that a kept source is not parsed).
facts_parsed = 0


def _parse(source: str) -> ast.Module | None:
    """``source`` parsed, or None when it is not Python or is larger than the validator
    would parse (stored code can be ten times that)."""
    from ..validation.budget import Budget

    if len(source) > Budget().max_source_chars:
        return None
    try:
        return parse_source(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _knobs_in(tree: ast.Module, class_name: str) -> dict[str, Any] | None:
    """The ``knobs = {...}`` literal of ``class_name`` in ``tree`` (None: none, or not
    a literal dict)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                targets = (
                    item.targets if isinstance(item, ast.Assign) else
                    [item.target] if isinstance(item, ast.AnnAssign) and item.value else []
                )  # fmt: skip
                if any(isinstance(t, ast.Name) and t.id == "knobs" for t in targets):
                    try:
                        value = ast.literal_eval(item.value)  # type: ignore[union-attr]
                    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                        return None
                    return value if isinstance(value, dict) else None
    return None


def static_knobs(source: str, class_name: str) -> dict[str, Any] | None:
    """The ``knobs = {...}`` literal of ``class_name`` in ``source``, read without running
    it (None when the class declares none, or not as a literal, or when the source is
    larger than the validator would parse: stored code can be ten times that)."""
    tree = _parse(source)
    return None if tree is None else _knobs_in(tree, class_name)


def source_facts(record: Any) -> tuple[str, dict[str, Any] | None]:
    """The dialect label of ``record``'s source (worded as
    :func:`~spade_envs.core.dialect.dialect_label` words it) and its static knobs
    (:func:`static_knobs`), from one parse, never running the code. Kept per SHA-256 and
    class name; callers must not change the knobs."""
    global facts_parsed

    key = (record.sha256, record.class_name)
    with _facts_lock:
        found = _facts.get(key)
        if found is not None:
            _facts.move_to_end(key)
            return found
    tree = _parse(record.source)
    facts_parsed += 1
    if tree is None:  # not Python, or too large for the knobs: the dialect as usual
        facts: tuple[str, dict[str, Any] | None] = (dialect_label(record.source), None)
    else:
        dialect = dialect_of_tree(tree)
        facts = (f"{dialect.value} ({DIALECT_NOTES[dialect]})", _knobs_in(tree, record.class_name))
    with _facts_lock:
        _facts[key] = facts
        while len(_facts) > FACTS_CACHE:
            _facts.popitem(last=False)
    return facts


def _show(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)[:200]
    except (TypeError, ValueError):
        return repr(value)[:200]


def _knobs(record: Any, example: Example | None) -> dict[str, Any]:
    """Rows of the knobs table and where they were read."""
    knobs = None if example is None else example.knobs
    where = "as the class declares them, read in the sandbox"
    if knobs is None:
        knobs, where = source_facts(record)[1], "read from the source"
    rows = [
        {"name": str(k), "default": _show(v), "type": type(v).__name__}
        for k, v in sorted((knobs or {}).items(), key=lambda kv: str(kv[0]))
    ]
    return {"rows": rows, "where": where, "known": knobs is not None}


# ----- tags, licence, origin -------------------------------------------------------------------
def _tags(record: Any, example: Example | None) -> list[dict[str, str]]:
    """Tags of a version; those that are filters of the list link to it."""
    tags = [
        {"text": record.kind, "href": "/envs" + qs({"kind": record.kind}), "cls": "kind"},
    ]
    if record.skill:
        tags.append({"text": record.skill, "href": "/envs" + qs({"skill": record.skill}),
                     "cls": "skill"})  # fmt: skip
    tags.append({"text": record.origin, "href": "/envs" + qs({"origin": record.origin}),
                 "cls": "origin"})  # fmt: skip
    if record.suite:
        tags.append({"text": record.suite, "href": "/envs" + qs({"suite": record.suite}),
                     "cls": "suite"})  # fmt: skip
    turns = "single-turn" if record.max_turns <= 1 else f"multi-turn (≤ {record.max_turns:,})"
    tags.append({"text": turns, "href": "", "cls": ""})
    tools = () if example is None else example.tools
    tags.extend({"text": f"tool: {name}", "href": "", "cls": ""} for name in tools)
    if record.hint:
        tags.append({"text": "privileged hint", "href": "", "cls": ""})
    if record.document_id is not None:
        tags.append({"text": "grounded", "href": "", "cls": ""})
    extra_tags = record.extra.get("tags")
    if isinstance(extra_tags, list):
        tags.extend(
            {"text": str(t)[:60], "href": "", "cls": ""} for t in extra_tags[:20] if str(t).strip()
        )
    return tags


def _licence(record: Any) -> dict[str, Any]:
    """The licence of a version's code and where it was learnt."""
    info = record.extra.get("suite")
    info = info if isinstance(info, dict) else {}
    if record.suite:
        licence = str(info.get("licence") or "")
        if not licence:
            from ..suites.catalog import SUITES

            known = SUITES.get(record.suite)
            licence = known.licence if known else ""
        homepage = str(info.get("homepage") or "")
        return {
            "licence": licence or "not recorded",
            "basis": f"the licence of the {record.suite} suite it was imported from",
            "homepage": homepage if re.match(r"https?://[^\s]+\Z", homepage, re.I) else "",
        }
    for key in ("licence", "license"):
        stored = record.extra.get(key)
        if isinstance(stored, str) and stored.strip():
            return {"licence": stored.strip()[:100], "basis": "stored with the version",
                    "homepage": ""}  # fmt: skip
    if _is_seed(record):
        return {"licence": _SPADE_LICENCE, "basis": "a seed packaged with spade-envs",
                "homepage": ""}  # fmt: skip
    return {
        "licence": "not recorded",
        "basis": "model-written code; no licence was stored with it",
        "homepage": "",
    }


def _origin(record: Any) -> dict[str, Any]:
    made = [(k, v) for k, v in (("model", record.model), ("run", record.run_id or "")) if v]
    what = {
        "seed": "a hand-written seed environment",
        "designer": "written by the Environment Designer",
        "imported": "imported from another corpus or suite",
    }.get(record.origin, record.origin)
    return {"origin": record.origin, "what": what, "made": made,
            "created": fmt_time(record.created_at)}  # fmt: skip


# ----- snippet -------------------------------------------------------------------------------
def package_name(record: Any) -> str:
    """The import name of the single-environment package of ``record``."""
    slug = re.sub(r"[^a-z0-9]+", "_", f"{record.name}_v{record.version}".lower()).strip("_")
    return f"spade_corpus_{slug}"


def _package_stem(record: Any) -> str:
    return package_name(record).replace("_", "-")


@functools.lru_cache(maxsize=1)
def install_line() -> str:
    """The shell line that installs spade-envs: from its repository when the installed
    package's metadata names one (``pip install "git+URL"``), else :data:`CLONE_INSTALL`."""
    import importlib.metadata

    try:
        urls = importlib.metadata.metadata("spade-envs").get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:  # run from a checkout, not installed
        urls = []
    for entry in urls:
        label, _, url = str(entry).partition(",")
        url = url.strip()
        # Only a plain https address goes into the copyable shell line (no quotes, spaces).
        if label.strip().lower() in _REPOSITORY_LABELS and _PLAIN_URL.fullmatch(url):
            return f'pip install "git+{url}"'
    return CLONE_INSTALL


def _snippet(record: Any, knobs: dict[str, Any]) -> dict[str, Any]:
    ident = record.id
    make = f"gym.make({json.dumps(ident)})"
    lines = [
        "import gymnasium as gym, spade_envs",
        "",
        f"env = {make}",
        "observation, info = env.reset(seed=0)",
    ]
    rows = knobs["rows"]
    if rows and all(_IDENTIFIER.match(r["name"]) for r in rows):
        shown = ", ".join(f"{r['name']}={_py(r['default'])}" for r in rows[:6])
        lines.append(f"# difficulty knobs (defaults): gym.make({json.dumps(ident)}, {shown})")
    seed = _is_seed(record)
    package = package_name(record)
    return {
        "install": install_line(),
        "python": "\n".join(lines),
        "seed": seed,
        "package": package,
        "package_file": f"{_package_stem(record)}.zip",
        "package_python": "\n".join([f"import gymnasium as gym, {package}", "", f"env = {make}"]),
    }


def _py(shown: str) -> str:
    """A JSON-shown default as Python source (true/false/null differ)."""
    try:
        return repr(json.loads(shown))
    except ValueError:
        return shown


# ----- version history and diffs ----------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def diff_lines(old: str, new: str, old_name: str, new_name: str) -> dict[str, Any]:
    """A unified diff of two sources as ``{"lines": [{"cls", "text"}], "added", "removed",
    "cut"}``; ``cls`` is ``file``, ``hunk``, ``add``, ``del`` or ``ctx``. Versions are
    immutable, so the last 256 diffs are kept (callers must not change the result)."""
    a, b = old.splitlines(), new.splitlines()
    if max(len(a), len(b)) > MAX_DIFF_SOURCE_LINES:
        return {"lines": [], "added": 0, "removed": 0, "cut": 0,
                "too_large": max(len(a), len(b))}  # fmt: skip
    out: list[dict[str, str]] = []
    added = removed = cut = 0
    for line in difflib.unified_diff(a, b, old_name, new_name, n=3, lineterm=""):
        if line.startswith(("---", "+++")) and len(out) < 2:
            cls = "file"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls, added = "add", added + 1
        elif line.startswith("-"):
            cls, removed = "del", removed + 1
        else:
            cls = "ctx"
        if len(out) < MAX_DIFF_LINES:
            out.append({"cls": cls, "text": line})
        else:
            cut += 1
    return {"lines": out, "added": added, "removed": removed, "cut": cut, "too_large": 0}


def _history(app: Any, record: Any) -> dict[str, Any]:
    """The versions of ``record.name`` (newest first, at most :data:`MAX_HISTORY`) and the
    change of this version from the previous one."""
    registry = app.registry
    versions = registry.versions(record.name)
    shown = versions[-MAX_HISTORY:]
    if record.id not in shown:
        shown = [record.id, *shown[1:]]
    rows = []
    previous_id = ""
    for ident in reversed(shown):
        found = record if ident == record.id else registry.get(ident)
        _, number = parse_env_id(ident)
        index = versions.index(ident)
        before = versions[index - 1] if index > 0 else ""
        rows.append(
            {
                "id": ident,
                "version": number,
                "href": env_href(ident),
                "current": ident == record.id,
                "status": found.status,
                "created": fmt_time(found.created_at, date_only=True),
                "lines": found.source.count("\n") + 1,
                "sha256": found.sha256[:12],
                "diff": f"{env_href(ident)}/diff" if before else "",
                "before": before,
            }
        )
        if ident == record.id:
            previous_id = before
    against, parent = previous_id, False
    if not against:
        against, parent = _registered_parent(registry, record), True
    change = None
    if against:
        other = record if against == record.id else registry.get(against)
        found = diff_lines(other.source, record.source, against, record.id)
        change = {k: found[k] for k in ("added", "removed", "too_large")}
        change.update(against=against, parent=parent, href=f"{env_href(record.id)}/diff")
    return {
        "rows": rows,
        "total": len(versions),
        "more": len(versions) - len(shown),
        "all_href": "/envs" + qs({"name": record.name, "sort": "created"}),
        "change": change,
    }


# ----- the card ------------------------------------------------------------------------------
def card(
    app: Any, record: Any, client: str | None = None, wait_s: float | None = None
) -> dict[str, Any]:
    """Everything the card of ``record`` shows, as plain data.

    Args:
        app: The browser application.
        record: The version.
        client: Who asks (an example it starts counts against that client's cap).
        wait_s: How long to wait for an example episode not played yet (default the
            examples' ``wait_s``); ``example`` is None while it is still being played.
    """
    examples = examples_of(app)
    example = examples.get(record, wait_s=wait_s, client=client)
    knobs = _knobs(record, example)
    return {
        "example": example,
        "budget_s": examples.budget_s,
        "reload_s": RELOAD_S,
        "knobs": knobs,
        "tags": _tags(record, example),
        "licence": _licence(record),
        "origin": _origin(record),
        "snippet": _snippet(record, knobs),
        "history": _history(app, record),
        "reward_range": None if example is None else example.reward_range,
    }


def _against(app: Any, record: Any, params: Params) -> str:
    """The ID to compare ``record`` with: ``against`` (a version number of the same name,
    or ``Name-vN``), else the previous version, else its first registered parent."""
    against = params.text("against", max_chars=120)
    params.done()
    registry = app.registry
    if against:
        ident = (
            f"spade/{record.name}-v{against}"
            if against.isdigit()
            else parse_slug(against.removeprefix("spade/"))
        )
        registry.get(ident)  # 404 with suggestions when unknown
        return ident
    versions = registry.versions(record.name)
    index = versions.index(record.id)
    if index > 0:
        return versions[index - 1]
    return _registered_parent(registry, record)


def _registered_parent(registry: Any, record: Any) -> str:
    """The first parent of ``record`` that is a version ID in ``registry`` (else "")."""
    for parent in record.parents:
        try:
            parse_env_id(parent)
            registry.get(parent)
        except SpadeError:
            continue
        return parent
    return ""


def diff_page(app: Any, request: Request, slug: str) -> Response:
    """The unified diff of a version against another (default: the previous version)."""
    ident = parse_slug(slug)
    record = app.registry.get(ident)
    against = _against(app, record, Params(query_of(request)))
    diff = None
    if against:
        other = app.registry.get(against)
        diff = diff_lines(other.source, record.source, against, ident)
    versions = [v for v in app.registry.versions(record.name) if v != ident]
    return app.render(
        "env_diff.html",
        f"{ident} vs {against}" if against else f"{ident}: diff",
        active="/envs",
        record=record,
        against=against,
        diff=diff,
        others=versions[-MAX_HISTORY:],
        parents=[p for p in record.parents if _is_id(p)],
    )


def _is_id(text: str) -> bool:
    try:
        parse_env_id(text)
    except SpadeError:
        return False
    return True


def package_download(app: Any, request: Request, slug: str) -> Response:
    """This version alone as a pip-installable package (a zip), as ``spade-envs export
    --format package`` writes it; ``pip install`` the zip, then ``import`` the package."""
    from ..registry.package_export import export_package

    Params(query_of(request)).done()
    record = app.registry.get(parse_slug(slug))
    stem = _package_stem(record)
    tmp = Path(tempfile.mkdtemp(prefix="spade-web-package-"))
    try:
        directory = tmp / stem
        try:
            export_package([record], directory)
        except SpadeError as exc:
            raise HTTPError(500, f"{record.id} could not be packaged: {exc}") from exc
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
            for path in sorted(directory.rglob("*")):
                if path.is_file():
                    zipped.write(path, Path(stem) / path.relative_to(directory))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Response(
        buffer.getvalue(),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{stem}.zip"'},
    )
