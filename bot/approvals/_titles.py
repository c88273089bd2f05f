"""An approval's title: a template filled with argument values only, in their display formats,
and bounded. A placeholder names an argument (`{amount}`, `{amount:.2f}`); its format spec may
ask for what a display needs (alignment, sign, grouping, a precision, a type) within small
sizes (`SPEC_WIDTH_MAX`, `SPEC_PRECISION_MAX`), never for megabytes (`{amount:>99999999}`).
A title over `TITLE_MAX` characters once filled is cut there. Rows stored before these bounds
were checked are rendered under them too: a spec beyond them shows the value as it is."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .policy.schema import display

__all__ = [
    "SPEC_PRECISION_MAX",
    "SPEC_WIDTH_MAX",
    "TITLE_MAX",
    "fill_title",
    "template_problem",
]

TITLE_MAX = 500
"""The most characters a filled title has (the rest is cut, with `…`)."""
VALUE_MAX = 200
"""The most characters one placeholder adds to a title."""
SPEC_WIDTH_MAX = 40
"""The widest a placeholder's format spec may pad its value (`{id:>8}`)."""
SPEC_PRECISION_MAX = 20
"""The most digits (or characters) a format spec's precision may ask for (`{amount:.2f}`)."""

_SPEC = re.compile(
    r"(?:[^{}]?[<>^=])?[+\- ]?z?#?0?(?P<width>\d+)?[,_]?(?:\.(?P<precision>\d+))?"
    r"[bcdeEfFgGnosxX%]?"
)
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def spec_problem(spec: str) -> str | None:
    """What is wrong with a placeholder's format spec, or None when a display may use it."""
    found = _SPEC.fullmatch(spec)
    if found is None:
        return (
            f"format spec {spec!r} is not one a title may use: alignment, sign, grouping, a "
            "precision and a type only, like '.2f' or '>8'"
        )
    width, precision = found["width"], found["precision"]
    if width is not None and int(width) > SPEC_WIDTH_MAX:
        return f"format spec {spec!r} pads to {int(width)} characters; at most {SPEC_WIDTH_MAX}"
    if precision is not None and int(precision) > SPEC_PRECISION_MAX:
        return (
            f"format spec {spec!r} asks for a precision of {int(precision)}; at most "
            f"{SPEC_PRECISION_MAX}"
        )
    return None


def template_problem(template: str, names: Iterable[str]) -> str | None:
    """What is wrong with a title template whose placeholders must name one of `names` (the
    request's arguments) with a spec a display may use, or None."""
    known = frozenset(names)
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as e:
        return f"is not a title template: {e} (write a literal brace as '{{{{' or '}}}}')"
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not _FIELD.fullmatch(name) or name not in known:
            return (
                f"placeholder {{{name}}} does not name an argument of the request; a title "
                "shows only argument values, like {amount}"
            )
        if conversion is not None:
            return f"placeholder {{{name}!{conversion}}}: conversions are not allowed"
        if spec and ("{" in spec or (problem := spec_problem(spec)) is not None):
            return f"placeholder {{{name}:{spec}}}: " + (
                "nested placeholders are not allowed" if "{" in spec else str(problem)
            )
    return None


class _TitleFormatter(string.Formatter):
    """`str.format` for titles: plain field names only (no attributes, no indexes); a value its
    format spec does not fit (a redacted field under `:.2f`), or a spec beyond what a display
    needs, is shown as it is; a placeholder without a spec of its own (`{amount}`) shows its
    field's display format. Each value adds at most `VALUE_MAX` characters."""

    def __init__(self, formats: Mapping[str, str]) -> None:
        self.formats = formats

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, str]:
        if field_name not in kwargs:
            raise KeyError(field_name)
        value = kwargs[field_name]
        shown = display(value, self.formats.get(field_name))
        return (_Shown(shown, value) if shown is not None else value), field_name

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if isinstance(value, _Shown) and conversion:
            value = value.value
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, _Shown):
            return value.text if not format_spec else self.format_field(value.value, format_spec)
        if isinstance(value, Mapping) and "redacted" in value:
            return "•••"
        if format_spec and spec_problem(format_spec) is not None:
            format_spec = ""
        try:
            text = format(value, format_spec)
        except (TypeError, ValueError):
            text = str(value)
        return _cut(text, VALUE_MAX)


@dataclass(frozen=True, slots=True)
class _Shown:
    """A value in its display format (`text`), and the value, for a placeholder's own spec."""

    text: str
    value: Any


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fill_title(
    template: str | None, values: Mapping[str, Any], formats: Mapping[str, str] | None = None
) -> str:
    """A title with its `{field}` placeholders filled from `values` (`"Refund {amount:.2f} to
    {customer_id}"`), so that after an edit it names what runs; at most `TITLE_MAX` characters.
    A title that is not a template (no placeholders, or ones that do not name a value) is
    returned as it is (cut to `TITLE_MAX`)."""
    if not template or "{" not in template:
        return _cut(template or "", TITLE_MAX)
    try:
        return _cut(_TitleFormatter(formats or {}).vformat(template, (), dict(values)), TITLE_MAX)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError):
        return _cut(template, TITLE_MAX)
