"""Server-rendered pages: one Jinja2 environment with autoescaping, and its filters.

Every value a template prints is escaped unless it is :class:`markupsafe.Markup`, which
only this package builds (the SVG charts and the highlighted source, both of which
escape what they embed). Model-written text (names, descriptions, observations,
source) therefore reaches the browser as text, never as markup.
"""

from __future__ import annotations

import datetime as dt
import math
import urllib.parse
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup, escape

__all__ = ["Markup", "env_href", "escape_text", "fmt_num", "fmt_time", "qs", "templates"]


def escape_text(value: Any) -> Markup:
    """``value`` escaped for HTML text and attributes (None is the empty string)."""
    return escape("" if value is None else value)


def qs(params: Mapping[str, Any], **changes: Any) -> str:
    """A query string from ``params`` with ``changes`` applied (None or "" removes a key)."""
    merged = {**params, **changes}
    kept = {k: v for k, v in merged.items() if v is not None and v != ""}
    return ("?" + urllib.parse.urlencode(kept)) if kept else ""


def env_href(env_id: str) -> str:
    """The page of ``spade/<Name>-v<N>`` (``/env/<Name>-v<N>``)."""
    return "/env/" + urllib.parse.quote(env_id.split("/", 1)[-1])


def fmt_num(value: float | None, digits: int = 2) -> str:
    """A number for a table cell ("–" for missing or NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # no "-0.00"


def fmt_time(value: dt.datetime | float | None, *, date_only: bool = False) -> str:
    """A UTC timestamp as ``YYYY-MM-DD HH:MM`` (or only the date)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, (int, float)):
        value = dt.datetime.fromtimestamp(value, dt.timezone.utc)
    return value.strftime("%Y-%m-%d" if date_only else "%Y-%m-%d %H:%M")


def _count(value: int) -> str:
    return f"{int(value):,}"


_TEMPLATES: Any = None


def templates() -> Any:
    """The package's Jinja2 environment (built once; autoescaping on for every file)."""
    global _TEMPLATES
    if _TEMPLATES is None:
        import jinja2

        environment = jinja2.Environment(
            loader=jinja2.PackageLoader("spade_envs.web", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        environment.filters.update(
            num=fmt_num, time=fmt_time, env_href=env_href, count=_count, qs=qs
        )
        environment.globals.update(qs=qs, env_href=env_href)
        _TEMPLATES = environment
    return _TEMPLATES
