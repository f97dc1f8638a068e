"""Prompt-injection hygiene for grounding documents.

A grounding document is untrusted text pasted into the designer's prompt. This
module makes sure it cannot leave its place there:

- control characters go (they can hide text or, once removed by a later step,
  glue the pieces of a token together, so they are removed *first*), as do
  bidirectional overrides and invisible Unicode "tag" characters (a known way to
  smuggle instructions past a reader);
- chat-template special tokens (``<|im_start|>``, ``<|im_end|>``, ``<|eot_id|>``, the
  full-width ``<｜...｜>`` kind, ``[INST]``) are escaped, since tokenizers turn them into
  real control tokens even inside user text;
- tags that the prompts use as delimiters (``<document>``, ``</document>``,
  ``<system>``, ``<tool_call>``, ...) are escaped as ``&lt;/document&gt;``;
- Markdown code fences (runs of three or more backticks, or ``~~~`` at a line start) are
  escaped, so a document cannot close a fence that quotes it;
- the length is capped.

The escapes keep the text readable for a model and change nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .document import CorpusError

__all__ = ["DEFAULT_MAX_CHARS", "PROMPT_TAGS", "Sanitized", "sanitize", "sanitize_with_counts"]

# About 4000 words of English prose, the default max_words of a corpus.
DEFAULT_MAX_CHARS = 32_000

# Tag names whose opening or closing tags are escaped. Prompts of this project wrap
# documents in <document>; the agent protocol uses <tool_call> and <answer>; the rest
# are role or turn markers of common chat formats.
PROMPT_TAGS: tuple[str, ...] = (
    "document",
    "documents",
    "doc",
    "grounding",
    "context",
    "reference",
    "memory",
    "environment",
    "code",
    "prompt",
    "instruction",
    "instructions",
    "system",
    "sys",
    "user",
    "assistant",
    "human",
    "tool",
    "tool_call",
    "tool_response",
    "answer",
    "think",
    "s",
    "start_of_turn",
    "end_of_turn",
)

_CUT_MARKER = "\n[Document cut at {n} characters]"

# C0/C1 controls except tab and newline; bidi embeddings/overrides/isolates; zero-width
# space, word joiner, BOM; Unicode tag characters (invisible ASCII look-alikes).
_REMOVE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2060\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
_NEWLINES = re.compile("\r\n?|[\u2028\u2029\x85]")
# <|im_end|>, <|begin_of_text|>, DeepSeek's <｜end▁of▁sentence｜>, in either width.
_SPECIAL_TOKEN = re.compile(r"[<＜][|｜][^\n<>＜＞]{0,80}?[|｜][>＞]")
# What is left of one: an opener without its close (it may meet a "|>" that follows).
_OPENER = re.compile(r"[<＜](?=[|｜])")
_INST = re.compile(r"\[(/?)(INST)\]", re.IGNORECASE)
_BACKTICKS = re.compile(r"`{3,}")
_TILDE_FENCE = re.compile(r"^([ \t]*)(~{3,})", re.MULTILINE)


@dataclass(frozen=True)
class Sanitized:
    """A sanitized text and what was changed in it.

    Attributes:
        text: The text, safe to paste between the prompt's document delimiters.
        removed_characters: Control and invisible characters removed.
        escaped_tokens: Chat-template special tokens escaped.
        escaped_tags: Delimiter tags escaped.
        escaped_fences: Code fences escaped.
        cut: Whether the text was cut to ``max_chars``.
    """

    text: str
    removed_characters: int = 0
    escaped_tokens: int = 0
    escaped_tags: int = 0
    escaped_fences: int = 0
    cut: bool = False

    @property
    def suspicious(self) -> bool:
        """Whether the text held anything that looks like an attempt to leave its place."""
        return bool(self.escaped_tokens or self.escaped_tags or self.escaped_fences)


def _angle_escape(text: str) -> str:
    return (
        text.replace("<", "&lt;").replace(">", "&gt;").replace("＜", "&lt;").replace("＞", "&gt;")
    )


def _tag_pattern(tags: Iterable[str]) -> re.Pattern[str]:
    names = sorted({t.lower() for t in tags}, key=len, reverse=True)
    if not names or not all(re.fullmatch(r"[a-z][a-z0-9_:-]*", n) for n in names):
        raise CorpusError(f"tags must be non-empty tag names like 'document', got {list(tags)!r}.")
    alternatives = "|".join(re.escape(n) for n in names)
    # Whitespace inside the brackets and attributes are allowed: models read
    # "< /document >" and "<document id=2>" as tags too.
    return re.compile(rf"<\s*/?\s*(?:{alternatives})(?![\w-])[^<>\n]{{0,200}}>", re.IGNORECASE)


_DEFAULT_TAG_PATTERN = _tag_pattern(PROMPT_TAGS)


def sanitize_with_counts(
    text: str,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    tags: Iterable[str] | None = None,
) -> Sanitized:
    """Sanitize ``text`` and count what was changed (see :func:`sanitize`)."""
    if not isinstance(text, str):
        raise CorpusError(f"sanitize() needs a str, got {type(text).__name__}.")
    marker_room = len(_CUT_MARKER.format(n=max_chars))
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars <= marker_room:
        raise CorpusError(f"max_chars must be an int above {marker_room}, got {max_chars!r}.")
    pattern = _DEFAULT_TAG_PATTERN if tags is None else _tag_pattern(tags)

    text = _NEWLINES.sub("\n", text)
    text, removed = _REMOVE.subn("", text)
    text, tokens = _SPECIAL_TOKEN.subn(lambda m: _angle_escape(m.group(0)), text)
    text, openers = _OPENER.subn("&lt;", text)
    tokens += openers
    text, inst = _INST.subn(r"\\[\1\2\\]", text)
    text, tag_count = pattern.subn(lambda m: _angle_escape(m.group(0)), text)
    text, ticks = _BACKTICKS.subn(lambda m: "\\`" * len(m.group(0)), text)
    text, tildes = _TILDE_FENCE.subn(lambda m: m.group(1) + "\\~" * len(m.group(2)), text)

    cut = len(text) > max_chars
    if cut:
        keep = max_chars - marker_room
        head = text[:keep]
        # End at a word boundary when one is near, and never inside an escape.
        space = max(head.rfind(" ", keep - 200), head.rfind("\n", keep - 200))
        if space > 0:
            head = head[:space]
        amp = head.rfind("&", len(head) - 4)
        if amp != -1 and ";" not in head[amp:]:
            head = head[:amp]
        head = head.rstrip("\\")
        text = head + _CUT_MARKER.format(n=max_chars)
    return Sanitized(text, removed, tokens + inst, tag_count, ticks + tildes, cut)


def sanitize(
    text: str, *, max_chars: int = DEFAULT_MAX_CHARS, tags: Iterable[str] | None = None
) -> str:
    """Make an untrusted document safe to paste into a prompt.

    Removes control and invisible characters, escapes chat special tokens
    (``<|im_end|>`` → ``&lt;|im_end|&gt;``), delimiter tags (``</document>`` →
    ``&lt;/document&gt;``) and code fences (```` ``` ```` → ``\\`\\`\\```), normalises
    newlines, and caps the length (with a ``[Document cut at N characters]`` line).
    The result is at most ``max_chars`` long, and sanitizing it again changes nothing.

    Args:
        text: The document text.
        max_chars: The longest result, marker line included.
        tags: Tag names to escape; default :data:`PROMPT_TAGS`.
    """
    return sanitize_with_counts(text, max_chars=max_chars, tags=tags).text
