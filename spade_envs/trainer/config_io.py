"""Reading and writing trainer settings: TOML presets, ``--set`` overrides, ``config.toml``.

The settings themselves live in :mod:`spade_envs.trainer.config`; this module turns files
and command-line overrides into them and back (it imports ``config``, never the reverse).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..error import SpadeError, suggest
from .config import (
    _SECTIONS,
    ConfigError,
    SelfPlayConfig,
    _check,
    config_to_dict,
)

__all__ = [
    "apply_overrides",
    "available_presets",
    "config_from_dict",
    "config_from_toml",
    "config_to_toml",
    "load_config",
    "preset_path",
    "read_config",
    "save_config",
]


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _coerce(where: str, value: Any, kind: Any) -> Any:
    """Check ``value`` (from TOML or ``--set``) against a field type, converting
    int -> float, list -> tuple and a comma string -> tuple of strings."""
    origin = typing.get_origin(kind)
    if origin is tuple:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        _check(
            isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value),
            f"{where} must be a list of strings, got {value!r}.",
        )
        return tuple(value)
    if kind is bool:
        _check(isinstance(value, bool), f"{where} must be true or false, got {value!r}.")
        return value
    if kind is int:
        _check(
            isinstance(value, int) and not isinstance(value, bool),
            f"{where} must be an integer, got {value!r}.",
        )
        return value
    if kind is float:
        _check(
            isinstance(value, (int, float)) and not isinstance(value, bool),
            f"{where} must be a number, got {value!r}.",
        )
        _check(math.isfinite(float(value)), f"{where} must be finite, got {value!r}.")
        return float(value)
    if kind is str:
        _check(isinstance(value, str), f"{where} must be a string, got {value!r}.")
        return value
    raise ConfigError(f"{where} has a type the config loader does not know: {kind!r}.")


def _build(cls: type, data: Mapping[str, Any], where: str) -> Any:
    types = _field_types(cls)
    known = [f.name for f in dataclasses.fields(cls)]
    values = {}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(
                f"Unknown setting {where}{key!r}.{suggest(key, known)} "
                f"Settings of {where.rstrip('.') or 'the top level'}: {', '.join(known)}."
            )
        values[key] = _coerce(f"{where}{key}", value, types[key])
    try:
        return cls(**values)
    except ConfigError:
        raise
    except SpadeError as exc:  # GRPOConfig's own checks
        raise ConfigError(f"{where}{exc}") from exc


def config_from_dict(data: Mapping[str, Any]) -> SelfPlayConfig:
    """Build a config from nested dicts (a parsed preset); unknown keys are errors."""
    top: dict[str, Any] = {}
    sections: dict[str, Any] = {}
    top_level = [f.name for f in dataclasses.fields(SelfPlayConfig) if f.name not in _SECTIONS]
    for key, value in data.items():
        if key in _SECTIONS:
            _check(
                isinstance(value, Mapping),
                f"[{key}] must be a table of settings, got {value!r}.",
            )
            sections[key] = _build(_SECTIONS[key], value, f"{key}.")
        elif key in top_level:
            top[key] = value
        else:
            raise ConfigError(
                f"Unknown setting {key!r}.{suggest(key, [*top_level, *_SECTIONS])} Top-level "
                f"settings: {', '.join(top_level)}; sections: {', '.join(_SECTIONS)}."
            )
    base = _build(SelfPlayConfig, top, "")
    return dataclasses.replace(base, **sections) if sections else base


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # A TOML basic string: quotes, backslashes and every control character escaped
        # (JSON leaves DEL as it is, which TOML forbids).
        out = []
        for char in value:
            if char in '"\\':
                out.append("\\" + char)
            elif ord(char) < 0x20 or ord(char) == 0x7F:
                out.append(f"\\u{ord(char):04X}")
            else:
                out.append(char)
        return '"' + "".join(out) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ConfigError(f"Cannot write {value!r} to TOML.")


def config_to_toml(config: SelfPlayConfig) -> str:
    """The config as a complete TOML document (every setting written out)."""
    data = config_to_dict(config)
    lines = ["# spade-envs self-play trainer settings (spade-envs train --preset FILE.toml)"]
    for key, value in data.items():
        if key not in _SECTIONS:
            lines.append(f"{key} = {_toml_value(value)}")
    for section in _SECTIONS:
        lines.append("")
        lines.append(f"[{section}]")
        for key, value in data[section].items():
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def save_config(config: SelfPlayConfig, path: str | Path) -> Path:
    """Write :func:`config_to_toml` to ``path`` (whole or not at all)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(config_to_toml(config), encoding="utf-8")
    tmp.replace(path)
    return path


# ----------------------------------------------------------------- presets and overrides


def _tomllib() -> Any:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise ConfigError(
                "Reading TOML presets on Python 3.10 needs tomli: pip install tomli."
            ) from None
    return tomllib


def available_presets() -> list[str]:
    """Names of the presets shipped in ``spade_envs/trainer/presets``."""
    folder = resources.files(__package__).joinpath("presets")
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))


def preset_path(preset: str) -> Path:
    """The TOML file of a preset name, or ``preset`` itself when it is a ``.toml`` path."""
    if preset.endswith(".toml") or "/" in preset:
        path = Path(preset).expanduser()
        _check(path.is_file(), f"Preset file {preset!r} does not exist.")
        return path
    known = available_presets()
    _check(
        preset in known,
        f"No trainer preset named {preset!r}.{suggest(preset, known)} Known presets: "
        f"{', '.join(known)}; or pass the path of a .toml file.",
    )
    return Path(str(resources.files(__package__).joinpath("presets", f"{preset}.toml")))


def _read_toml(path: Path) -> dict[str, Any]:
    tomllib = _tomllib()
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc


def _parse_value(text: str) -> Any:
    """A TOML value (``3``, ``2e-5``, ``true``, ``["a", "b"]``, ``"x"``); anything that
    does not parse as one is taken as a bare string."""
    tomllib = _tomllib()
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Apply ``key=value`` / ``section.key=value`` overrides to a parsed preset (a copy)."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in data.items()}
    top_level = [f.name for f in dataclasses.fields(SelfPlayConfig) if f.name not in _SECTIONS]
    every = top_level + [
        f"{section}.{f.name}" for section, cls in _SECTIONS.items() for f in dataclasses.fields(cls)
    ]
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        _check(bool(sep and key), f"--set needs key=value (e.g. iterations=3), got {item!r}.")
        _check(
            key in every,
            f"Unknown setting {key!r} in --set.{suggest(key, every)} Use section.key, e.g. "
            "designer.documents=4 or grpo.learning_rate=1e-5.",
        )
        value = _parse_value(raw.strip())
        section, _, name = key.rpartition(".")
        if section:
            out.setdefault(section, {})[name] = value
        else:
            out[name] = value
    return out


def load_config(preset: str, overrides: Sequence[str] = ()) -> SelfPlayConfig:
    """A preset (name or ``.toml`` path) with ``--set`` overrides, checked.

    Raises:
        ConfigError: Unknown preset, key or section (with close matches), a value of the
            wrong type, or a value out of range.
    """
    data = _read_toml(preset_path(preset))
    return config_from_dict(apply_overrides(data, overrides))


def read_config(path: str | Path) -> SelfPlayConfig:
    """A config saved by :func:`save_config` (e.g. ``RUN_DIR/config.toml``)."""
    return config_from_dict(_read_toml(Path(path)))


def config_from_toml(text: str) -> SelfPlayConfig:
    """A config from TOML text (what a checkpoint keeps)."""
    tomllib = _tomllib()
    try:
        return config_from_dict(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"The saved settings are not valid TOML: {exc}") from exc
