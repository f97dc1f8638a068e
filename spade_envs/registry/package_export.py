"""The ``package`` corpus format: a directory that ``pip install``s.

:func:`export_package` writes ``pyproject.toml`` and a package holding ``manifest.json``
(every field of every version but its source, plus the SHA-256 of the source) and one
``envs/<Name>_v<N>.py`` per version. The generated ``__init__.py`` registers every
environment with Gymnasium on import. :func:`read_package` reads such a directory back,
checking every file against its SHA-256 before anything is registered.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

from ..error import SpadeError
from ._rows import Row, check_row
from .records import EnvRecord

__all__ = ["check_package_target", "export_package", "find_manifest", "read_package"]


def _package_name(out: Path) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", out.name.lower()).strip("_")
    slug = re.sub(r"^spade_corpus_?", "", slug) or "corpus"
    return f"spade_corpus_{slug}"


def check_package_target(out: Path) -> None:
    """Raise unless ``out`` is a new or empty directory (checked before any export work)."""
    if out.exists() and not out.is_dir():
        raise SpadeError(f"{out} is a file; the package format writes a new or empty directory.")
    if out.is_dir() and any(out.iterdir()):
        raise SpadeError(
            f"{out} is not empty; the package format writes into a new or empty directory "
            "only (nothing there was changed). Pass another path or empty it first."
        )


def export_package(records: list[EnvRecord], out: Path) -> int:
    """Write ``records`` as a pip-installable package at ``out``; returns how many.

    The package is built in ``<out>.partial`` and renamed into place, so an interrupted
    export leaves no half-written package at ``out``.
    """
    package = _package_name(out)
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
        (root / "__init__.py").write_text(_PACKAGE_INIT, encoding="utf-8")
        (tmp / "pyproject.toml").write_text(
            _PYPROJECT.format(
                dist=package.replace("_", "-"),
                package=package,
                count=len(entries),
                spade=__version__,
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
description = "{count} spade-envs environment version(s), registered with Gymnasium on import."
requires-python = ">=3.10"
dependencies = ["spade-envs>={spade}"]

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
``envs/``, checked against ``manifest.json``: in the spade-envs sandbox by default, in this
process with ``isolation="none"`` (only for code you trust). ``register_into(registry)``
adds the environments to a spade-envs registry.
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
    **knobs: Any,
) -> Any:
    """Gymnasium entry point: build ``env_id`` from its packaged source.

    Args:
        env_id: ``spade/<Name>-v<N>``.
        isolation: ``"sandbox"`` (default) or ``"none"`` (trusted, in-process).
        seat: For games, the seat the agent plays (the others play ``opponent``).
        opponent: For games: ``"best"`` or ``"random"``.
        render_mode: ``"ansi"`` or None.
        **knobs: Difficulty knobs.
    """
    from spade_envs.registry.gym_ids import build_env

    return build_env(
        source(env_id),
        _entry(env_id)["kind"],
        filename=f"{__name__}/{_entry(env_id)['file']}",
        isolation=isolation,
        seat=seat,
        opponent=opponent,
        render_mode=render_mode,
        **knobs,
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


def register_into(registry: Any) -> list[Any]:
    """Register every environment into a spade-envs ``Registry``; returns the records.

    Every file is verified first, so a modified file registers nothing.
    """
    from spade_envs.core.metadata import EnvMetadata

    checked = []
    for env_id, entry in ENVS.items():
        meta = EnvMetadata(
            name=entry["name"],
            kind=entry["kind"],
            skill=entry["skill"],
            description=entry["description"],
            max_turns=int(entry["max_turns"]),
            reward_range=(0.0, 1.0),
            origin="imported",
            parents=tuple(entry.get("parents", ())),
        )
        checked.append((source(env_id), meta, entry))
    return [
        registry.register(
            code,
            meta,
            status=entry["status"],
            model=entry.get("model") or "",
            hint=entry.get("hint") or "",
            prompt_sha256=entry.get("prompt_sha256") or "",
            extra=entry.get("extra") or {},
        )
        for code, meta, entry in checked
    ]


register_gym()
'''


def find_manifest(path: Path) -> Path | None:
    """``manifest.json`` of a package export (its root, or the package directory in it)."""
    if (path / "manifest.json").is_file() and (path / "__init__.py").is_file():
        return path / "manifest.json"
    if (path / "pyproject.toml").is_file():
        found = sorted(path.glob("*/manifest.json"))
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
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SpadeError(f"{manifest_path}: not readable JSON ({exc}).") from None
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
        file = (root / relative).resolve()
        if not file.is_relative_to(root):
            raise SpadeError(f"{where}: file {relative!r} lies outside the package.")
        try:
            data = file.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpadeError(f"{where}: cannot read {relative} ({exc}).") from None
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise SpadeError(
                f"{file} does not match its sha256 in {manifest_path.name}: it was changed "
                "after export. Nothing was imported; restore the file or export again."
            )
        row = check_row({**entry, "source": text}, where)
        if entry.get("id") is not None and entry["id"] != f"spade/{row.meta.name}-v{row.version}":
            raise SpadeError(f"{where}: id {entry['id']!r} does not match its name and version.")
        rows.append(row)
    return rows
