"""The ``package`` corpus format: a directory that ``pip install``s.

:func:`export_package` writes ``pyproject.toml`` and a package holding ``manifest.json``
(every field of every version but its source, plus the SHA-256 of the source) and one
``envs/<Name>_v<N>.py`` per version. The generated ``__init__.py`` registers every
environment with Gymnasium on import. :func:`read_package` reads such a directory back,
checking every file against its SHA-256 before anything is registered.

A package carries no trust: the manifest's ``status``, ``kind``, ``skill`` and
``max_turns`` are not read on import (see :mod:`spade_envs.runtime.imports`), ``register_into``
validates like ``spade-envs import``, and ``gym.make(..., isolation="none")`` of a
packaged environment that is not a packaged seed's exact code needs ``trust_code=True``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

from ..error import SpadeError
from ._rows import Row, check_row
from .limits import MAX_MANIFEST_BYTES, MAX_SOURCE_BYTES, is_regular, parse_json, read_regular
from .records import EnvRecord

__all__ = ["check_package_target", "export_package", "find_manifest", "read_package"]


def _package_name(out: Path, prefix: str = "spade_corpus") -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", out.name.lower()).strip("_")
    slug = re.sub(rf"^{prefix}_?", "", slug) or "corpus"
    return f"{prefix}_{slug}"


def check_package_target(out: Path) -> None:
    """Raise unless ``out`` is a new or empty directory (checked before any export work)."""
    if out.exists() and not out.is_dir():
        raise SpadeError(f"{out} is a file; the package format writes a new or empty directory.")
    if out.is_dir() and any(out.iterdir()):
        raise SpadeError(
            f"{out} is not empty; the package format writes into a new or empty directory "
            "only (nothing there was changed). Pass another path or empty it first."
        )


def export_package(records: list[EnvRecord], out: Path, *, verifiers: bool = False) -> int:
    """Write ``records`` as a pip-installable package at ``out``; returns how many.

    The package is built in ``<out>.partial`` and renamed into place, so an interrupted
    export leaves no half-written package at ``out``.

    Args:
        records: The versions.
        out: A new or empty directory.
        verifiers: Write a verifiers (0.4) environment package instead: named
            ``spade_verifiers_<slug>``, depending on verifiers, and exporting a
            ``Taskset`` and an ``Env`` (:mod:`spade_envs.integrations.verifiers`) that
            play the packaged versions, so ``vf-eval spade-verifiers-<slug>`` runs them.
    """
    package = _package_name(out, "spade_verifiers" if verifiers else "spade_corpus")
    entries = []
    files: dict[str, bytes] = {}
    for record in records:
        relative = f"envs/{record.name}_v{record.version}.py"
        try:
            files[relative] = record.source.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise SpadeError(f"{record.id}: its source is not valid Unicode ({exc}).") from None
        # Every field but the source (and the database's row key), plus where the code is.
        entries.append({**record.to_dict(source=False), "file": relative})
    manifest = {"format": "spade-envs corpus package", "format_version": 1, "envs": entries}
    from .. import __version__

    tmp = out.with_name(out.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)  # left by an interrupted export of ours
    try:
        root = tmp / package
        (root / "envs").mkdir(parents=True)
        for relative, data in files.items():
            (root / relative).write_bytes(data)  # bytes: the SHA-256 must survive newlines
        (root / "manifest.json").write_text(
            json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        init = _PACKAGE_INIT + (_VERIFIERS_INIT if verifiers else "")
        (root / "__init__.py").write_text(init, encoding="utf-8")
        dependencies = f'"spade-envs>={__version__}"'
        if verifiers:
            dependencies += ', "verifiers>=0.4,<0.5"'
        (tmp / "pyproject.toml").write_text(
            _PYPROJECT.format(
                dist=package.replace("_", "-"),
                package=package,
                count=len(entries),
                dependencies=dependencies,
                what="a verifiers environment"
                if verifiers
                else "registered with Gymnasium on import",
            ),
            encoding="utf-8",
        )
        if out.is_dir():
            out.rmdir()  # checked empty above
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return len(entries)


_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "1.0.0"
description = "{count} spade-envs environment version(s), {what}."
requires-python = ">=3.10"
dependencies = [{dependencies}]

[tool.setuptools]
packages = ["{package}"]
# envs/*.py are data (read and run by make_env), not modules; listing them only as package
# data keeps setuptools from warning that "envs" looks like a package.
include-package-data = false

[tool.setuptools.package-data]
{package} = ["manifest.json", "envs/*.py"]
"""

_PACKAGE_INIT = '''\
"""A corpus of spade-envs environments, packaged by ``spade-envs export --format package``.

Importing this package registers every environment with Gymnasium as ``spade/<Name>-v<N>``
(unless that ID is already registered). ``gym.make`` builds it from the source file in
``envs/``, checked against ``manifest.json``: in the spade-envs sandbox by default. In this
process (``isolation="none"``) only a packaged seed's exact code runs, unless you also pass
``trust_code=True`` for code you wrote or reviewed. ``register_into(registry)`` adds the
environments to a spade-envs registry, validating each one (nothing in the manifest is
trusted).
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from typing import Any

__all__ = ["ENVS", "make_env", "register_gym", "register_into", "source"]

_FILES = resources.files(__name__)
#: The manifest entry of every environment, keyed by ID, oldest version first.
ENVS: dict[str, dict[str, Any]] = {
    entry["id"]: entry
    for entry in json.loads(_FILES.joinpath("manifest.json").read_text("utf-8"))["envs"]
}


def _entry(env_id: str) -> dict[str, Any]:
    if env_id not in ENVS:
        from spade_envs.error import SpadeError, suggest

        raise SpadeError(f"{__name__} has no environment {env_id!r}.{suggest(env_id, ENVS)}")
    return ENVS[env_id]


def source(env_id: str) -> str:
    """The source of ``env_id``, verified against the SHA-256 in the manifest."""
    entry = _entry(env_id)
    data = _FILES.joinpath(entry["file"]).read_bytes()
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        from spade_envs.error import SpadeError

        raise SpadeError(
            f"{__name__}/{entry['file']} does not match the SHA-256 in manifest.json: it was "
            f"changed after packaging. Reinstall {__name__}."
        )
    return data.decode("utf-8")


def make_env(
    env_id: str,
    isolation: str = "sandbox",
    seat: int = 0,
    opponent: str = "best",
    render_mode: str | None = None,
    trust_code: bool = False,
    **knobs: Any,
) -> Any:
    """Gymnasium entry point: build ``env_id`` from its packaged source.

    Args:
        env_id: ``spade/<Name>-v<N>``.
        isolation: ``"sandbox"`` (default) or ``"none"``: in this process, for a packaged
            seed's exact code only unless ``trust_code`` is also given.
        seat: For games, the seat the agent plays (the others play ``opponent``).
        opponent: For games: ``"best"`` or ``"random"``.
        render_mode: ``"ansi"`` or None.
        trust_code: With ``isolation="none"``: run code that is not a packaged seed in
            this process, as this user. Only for code you wrote or reviewed.
        **knobs: Difficulty knobs.

    Raises:
        UntrustedCodeError: ``isolation="none"`` for non-seed code without ``trust_code``.
    """
    from spade_envs.runtime import open_source

    return open_source(
        source(env_id),
        env_id=f"{__name__}/{_entry(env_id)['file']}",
        knobs=knobs,
        seat=seat,
        opponent=opponent,
        isolation=isolation,
        render_mode=render_mode,
        trust_code=trust_code,
    )


def register_gym() -> list[str]:
    """Register every environment with Gymnasium (IDs already there are left alone)."""
    import gymnasium as gym

    added = []
    for env_id in ENVS:
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=f"{__name__}:make_env", kwargs={"env_id": env_id})
            added.append(env_id)
    return added


def register_into(
    registry: Any, *, validate: bool = True, budget: str = "default", progress: Any = False
) -> list[Any]:
    """Import every environment into a spade-envs ``Registry``; returns the new records.

    The same as ``spade-envs import`` on this package: every file is verified against
    the manifest first (a modified file registers nothing), metadata is read from the
    sources, and each new version is validated (``validated`` or ``rejected``), or stored
    ``unvalidated`` with ``validate=False``. The manifest's statuses are not used.
    """
    from pathlib import Path

    from spade_envs.runtime.imports import import_corpus

    result = import_corpus(
        registry,
        Path(__file__).resolve().parent,
        "package",
        validate=validate,
        budget=budget,
        progress=progress,
    )
    return list(result.imported)


register_gym()
'''

# Appended to the package's __init__ by ``--format verifiers``: verifiers' loader imports
# the package by its name and takes the one Taskset and the one Env in ``__all__``.
_VERIFIERS_INIT = '''

# ---------------------------------------------------------------- verifiers (0.4)
import sys as _sys

from spade_envs.integrations.verifiers import RegistryEnv, RegistryTaskset


class PackagedTaskset(RegistryTaskset):
    """This package's versions as a verifiers taskset: validated into a registry of
    their own on first use (``--env.taskset.registry``, default a file under
    ``~/.cache/spade-envs/verifiers/``), then played from it through the sandbox."""

    package = _sys.modules[__name__]


class PackagedEnv(RegistryEnv):
    """Plays a task of :class:`PackagedTaskset` (see spade_envs.integrations.verifiers)."""


__all__ = [*__all__, "PackagedEnv", "PackagedTaskset"]
'''


def find_manifest(path: Path) -> Path | None:
    """``manifest.json`` of a package export (its root, or the package directory in it)."""
    if is_regular(path / "manifest.json") and is_regular(path / "__init__.py"):
        return path / "manifest.json"
    if is_regular(path / "pyproject.toml"):
        found = sorted(p for p in path.glob("*/manifest.json") if is_regular(p))
        if len(found) == 1:
            return found[0]
    return None


def read_package(path: Path) -> list[Row]:
    """Every version of the package export at ``path``, each file checked against its SHA-256.

    Raises:
        SpadeError: ``path`` is not a package export, or any entry or file is bad (then no
            row is returned, so nothing is imported).
    """
    manifest_path = find_manifest(path) if path.is_dir() else None
    if manifest_path is None:
        raise SpadeError(
            f"{path} is not a package export: expected pyproject.toml and one "
            "<package>/manifest.json, as `spade-envs export --format package` writes."
        )
    try:
        text = read_regular(
            manifest_path, max_bytes=MAX_MANIFEST_BYTES, what="package manifest"
        ).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpadeError(f"{manifest_path}: not readable JSON ({exc}).") from None
    manifest = parse_json(text, str(manifest_path), max_chars=MAX_MANIFEST_BYTES)
    entries = manifest.get("envs") if isinstance(manifest, dict) else None
    if not isinstance(entries, list):
        raise SpadeError(f"{manifest_path}: expected an object with an 'envs' list.")
    root = manifest_path.parent.resolve()
    rows = []
    for number, entry in enumerate(entries, 1):
        where = f"{manifest_path}, entry {number}"
        relative = entry.get("file") if isinstance(entry, dict) else None
        if not isinstance(relative, str) or not isinstance(entry.get("sha256"), str):
            raise SpadeError(f"{where}: missing 'file' or 'sha256'.")
        file = root / relative
        if not file.resolve().is_relative_to(root):
            raise SpadeError(f"{where}: file {relative!r} lies outside the package.")
        try:
            data = read_regular(file, max_bytes=MAX_SOURCE_BYTES, what=f"entry {number}")
            text = data.decode("utf-8")
        except (SpadeError, UnicodeDecodeError) as exc:
            raise SpadeError(f"{where}: cannot read {relative} ({exc}).") from None
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise SpadeError(
                f"{file} does not match its sha256 in {manifest_path.name}: it was changed "
                "after export. Nothing was imported; restore the file or export again."
            )
        rows.append(check_row({**entry, "source": text}, where))
    return rows
