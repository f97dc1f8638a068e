"""Build the shipped sample corpus from the Python standard library's own docstrings.

The texts are the docstrings of standard-library modules, classes, functions and
methods, as the running interpreter ships them (no network, nothing written by
hand): each document is the module docstring and/or the docstrings of a run of its
members, each introduced by the member's qualified name and signature. They are
part of CPython, under the Python Software Foundation License Version 2.

Reproducible: the same Python version gives the same file byte for byte (module
lists and members are walked in a fixed, sorted order). Run it as a command, in a
fresh interpreter: a host process may patch the attributes it reads (pytest, for
one, replaces ``threading.excepthook``). Run::

    python -m spade_envs.corpus.build_sample            # rewrite data/sample.jsonl
    python -m spade_envs.corpus.build_sample --check    # exit 1 if it would change
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import platform
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["LICENCE", "MODULES", "build_documents", "main", "render"]

LICENCE = "PSF-2.0 (Python Software Foundation License Version 2; CPython standard library)"

# Topics, each with the standard-library modules whose docstrings stand for it.
MODULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("algorithms", ("heapq", "bisect", "functools", "itertools", "graphlib", "operator")),
    (
        "data structures",
        ("collections", "array", "queue", "dataclasses", "enum", "weakref", "copy"),
    ),
    (
        "text processing",
        (
            "string",
            "re",
            "textwrap",
            "difflib",
            "unicodedata",
            "codecs",
            "shlex",
            "fnmatch",
            "tokenize",
        ),
    ),
    ("dates and times", ("datetime", "calendar", "time", "sched")),
    ("mathematics", ("math", "cmath", "decimal", "fractions", "statistics", "random", "numbers")),
    (
        "networking",
        (
            "socket",
            "ipaddress",
            "urllib.parse",
            "http.client",
            "http.cookies",
            "smtplib",
            "selectors",
        ),
    ),
    (
        "data formats",
        (
            "json",
            "csv",
            "configparser",
            "pickle",
            "base64",
            "struct",
            "xml.etree.ElementTree",
            "hashlib",
        ),
    ),
    ("compression and archives", ("zipfile", "tarfile", "gzip", "bz2", "lzma", "zlib")),
    ("files", ("pathlib", "shutil", "tempfile", "glob", "filecmp", "io", "sqlite3")),
    ("concurrency", ("threading", "subprocess", "concurrent.futures", "asyncio.queues", "signal")),
    (
        "developer tools",
        (
            "argparse",
            "logging",
            "contextlib",
            "unittest.case",
            "doctest",
            "timeit",
            "warnings",
            "inspect",
        ),
    ),
)

MIN_WORDS = 100  # a document shorter than this gives a designer too little to build on
TARGET_WORDS = 600  # start a new document past this
MAX_WORDS = 1500  # hard ceiling per document
DEFAULT_OUT = Path(__file__).parent / "data" / "sample.jsonl"

_GENERIC = ("Return self", "Implement ", "Initialize self", "Create and return a new object")


def _doc(obj: Any) -> str:
    raw = getattr(obj, "__doc__", None)
    if not isinstance(raw, str):
        return ""
    text = inspect.cleandoc(raw).strip()
    # Slot wrappers of C types carry one-line boilerplate, not documentation.
    if len(text.split()) < 4 or text.startswith(_GENERIC):
        return ""
    return text


def _signature(obj: Any) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
    # Reprs with addresses differ between runs; very long ones are noise.
    return "" if " at 0x" in text or len(text) > 200 else text


def _public_members(module: Any) -> list[tuple[str, Any]]:
    short = module.__name__.rsplit(".", 1)[-1]
    homes = {module.__name__, "_" + short, module.__name__.rsplit(".", 1)[0] + "._" + short}
    names = getattr(module, "__all__", None)
    chosen = []
    for name in sorted(names if names is not None else dir(module)):
        if name.startswith("_"):
            continue
        obj = getattr(module, name, None)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            continue
        # Without __all__, keep only what the module defines (or its C accelerator).
        if names is None and getattr(obj, "__module__", None) not in homes:
            continue
        chosen.append((name, obj))
    return chosen


def _method_items(cls: type, prefix: str) -> Iterator[tuple[str, str]]:
    for name in sorted(vars(cls)):
        if name.startswith("_"):
            continue
        raw = vars(cls)[name]
        target = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
        if not (inspect.isroutine(target) or isinstance(target, property)):
            continue
        text = _doc(target)
        if not text:
            continue
        signature = "" if isinstance(target, property) else _signature(target)
        yield f"{prefix}.{name}", f"{prefix}.{name}{signature}\n\n{text}"


def _items(module_name: str) -> Iterator[tuple[str, str]]:
    """``(qualified name, text)`` for the module and each documented member, in order."""
    module = importlib.import_module(module_name)
    seen: set[str] = set()
    text = _doc(module)
    if text:
        seen.add(text)
        yield module_name, f"Module {module_name}\n\n{text}"
    for name, obj in _public_members(module):
        qualified = f"{module_name}.{name}"
        text = _doc(obj)
        if text and text not in seen:  # aliases share one docstring
            seen.add(text)
            kind = "class " if inspect.isclass(obj) else ""
            yield qualified, f"{kind}{qualified}{_signature(obj)}\n\n{text}"
        if inspect.isclass(obj):
            for method, body in _method_items(obj, qualified):
                key = body.split("\n\n", 1)[1]
                if key not in seen:
                    seen.add(key)
                    yield method, body


def _split_long(name: str, text: str) -> Iterator[tuple[str, str]]:
    """Split an item over ``TARGET_WORDS`` words at paragraph breaks."""
    if len(text.split()) <= TARGET_WORDS:
        yield name, text
        return
    chunk: list[str] = []
    words = 0
    for paragraph in text.split("\n\n"):
        size = len(paragraph.split())
        if chunk and words + size > TARGET_WORDS:
            yield name, "\n\n".join(chunk)
            chunk, words = [], 0
        chunk.append(paragraph)
        words += size
    if chunk:
        yield name, "\n\n".join(chunk)


def _documents_of(module_name: str) -> Iterator[tuple[list[str], str]]:
    """Pack a module's items into documents of MIN_WORDS..MAX_WORDS words."""
    packed: list[tuple[list[str], str]] = []
    names: list[str] = []
    parts: list[str] = []
    words = 0
    for item_name, item in _items(module_name):
        for name, text in _split_long(item_name, item):
            size = len(text.split())
            if parts and words + size > TARGET_WORDS and words >= MIN_WORDS:
                packed.append((names, "\n\n".join(parts)))
                names, parts, words = [], [], 0
            if not names or names[-1] != name:
                names.append(name)
            parts.append(text)
            words += size
    if parts:
        if words >= MIN_WORDS or not packed:
            packed.append((names, "\n\n".join(parts)))
        else:  # a short tail joins the module's previous document
            last_names, last_text = packed[-1]
            packed[-1] = (last_names + names, last_text + "\n\n" + "\n\n".join(parts))
    for names, text in packed:
        if MIN_WORDS <= len(text.split()) <= MAX_WORDS:
            yield names, text


def build_documents() -> list[dict[str, str]]:
    """Every sample document as ``{"text", "source", "licence", "topic", "python"}``."""
    version = platform.python_version()
    records = []
    with warnings.catch_warnings():
        # Reading deprecated aliases (typing.io and the like) warns; that is not news here.
        warnings.simplefilter("ignore")
        for topic, modules in MODULES:
            for module_name in modules:
                for names, text in _documents_of(module_name):
                    source = (
                        f"CPython {version} standard library docstrings, module {module_name}: "
                        + ", ".join(names)
                    )
                    records.append(
                        {
                            "text": text,
                            "source": source,
                            "licence": LICENCE,
                            "topic": topic,
                            "python": version,
                        }
                    )
    return records


def render(records: Sequence[dict[str, str]]) -> bytes:
    """The JSONL bytes of ``records`` (UTF-8, one object per line, ``\\n`` endings)."""
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    return ("\n".join(lines) + "\n").encode("utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write (or ``--check``) the sample corpus; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m spade_envs.corpus.build_sample",
        description="Build the sample grounding corpus from Python standard-library docstrings.",
        epilog="Example: python -m spade_envs.corpus.build_sample --check",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="where to write (default: %(default)s)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the file differs from a fresh build",
    )
    args = parser.parse_args(argv)
    records = build_documents()
    data = render(records)
    sizes = sorted(len(r["text"].split()) for r in records)
    summary = (
        f"{len(records)} documents, {len(data):,} bytes, {sizes[0]}..{sizes[-1]} words "
        f"(median {sizes[len(sizes) // 2]}), Python {platform.python_version()}"
    )
    if args.check:
        current = args.out.read_bytes() if args.out.is_file() else b""
        if current != data:
            print(f"{args.out} differs from a fresh build ({summary}).", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date: {summary}.")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    print(f"wrote {args.out}: {summary}.")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
