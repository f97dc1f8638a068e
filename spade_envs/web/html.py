"""HTML building blocks: escaping, the page layout, tables, links and query strings.

Every piece of text that reaches a page goes through :func:`esc` (or is built from
escaped parts): environment descriptions, observations, hints, documents and code are
written by a model and must show as text, never run. There is no inline script or
style anywhere: the Content-Security-Policy forbids them, and ``/static/app.js`` and
``/static/style.css`` do that work.
"""

from __future__ import annotations

import datetime as dt
import html
import math
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "Raw",
    "badge",
    "env_href",
    "esc",
    "fmt_num",
    "fmt_time",
    "layout",
    "link",
    "qs",
    "table",
]


class Raw(str):
    """Markup that is already safe (built by this package); :func:`esc` leaves it alone."""


def esc(value: Any) -> str:
    """Escape ``value`` for HTML text and double-quoted attributes (``Raw`` passes through)."""
    if isinstance(value, Raw):
        return value
    return html.escape("" if value is None else str(value), quote=True)


def qs(params: Mapping[str, Any], **changes: Any) -> str:
    """A query string from ``params`` with ``changes`` applied (None or "" removes a key)."""
    merged = {**params, **changes}
    kept = {k: v for k, v in merged.items() if v is not None and v != ""}
    return ("?" + urllib.parse.urlencode(kept)) if kept else ""


def env_href(env_id: str) -> str:
    """The page of ``spade/<Name>-v<N>`` (``/env/<Name>-v<N>``)."""
    return "/env/" + urllib.parse.quote(env_id.split("/", 1)[-1])


def link(href: str, text: Any, cls: str = "") -> Raw:
    klass = f' class="{esc(cls)}"' if cls else ""
    return Raw(f'<a href="{esc(href)}"{klass}>{esc(text)}</a>')


def badge(text: str, kind: str = "") -> Raw:
    return Raw(f'<span class="badge {esc(kind or text)}">{esc(text)}</span>')


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


def table(
    headers: Sequence[Any], rows: Iterable[Sequence[Any]], cls: str = "grid", empty: str = ""
) -> Raw:
    """A table; cells are escaped unless they are :class:`Raw`."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    if not body and empty:
        body = f'<tr><td colspan="{len(headers)}" class="empty">{esc(empty)}</td></tr>'
    return Raw(
        f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


_NAV = (("/", "Overview"), ("/envs", "Environments"), ("/map", "Map"), ("/runs", "Runs"))


def layout(
    title: str,
    body: str,
    *,
    active: str = "",
    footer: str = "",
    query: str = "",
    refresh_s: int | None = None,
) -> str:
    """A whole page: head (CSP-safe: no inline script or style), navigation, body, footer."""
    nav = "".join(
        f'<a href="{href}"{" class=active" if href == active else ""}>{esc(name)}</a>'
        for href, name in _NAV
    )
    refresh = f'<meta http-equiv="refresh" content="{int(refresh_s)}">' if refresh_s else ""
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"{refresh}<title>{esc(title)} · spade-envs</title>"
        '<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/style.css">'
        '<script src="/static/app.js" defer></script></head><body>'
        '<header><a class="brand" href="/">spade-envs corpus</a>'
        f"<nav>{nav}</nav>"
        '<form class="quick" action="/envs" method="get" role="search">'
        f'<input type="search" name="q" value="{esc(query)}" placeholder="Search environments" '
        'aria-label="Search environments" maxlength="200"></form></header>'
        f"<main>{body}</main><footer>{footer}</footer></body></html>"
    )
