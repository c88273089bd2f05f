"""Declared arguments: what a workflow's inputs and an action's arguments must look like.

A `Schema` is a small, JSON-Schema-like subset: per field a type (`string`, `number`,
`integer`, `boolean`, or `any`), whether it is required, and bounds (`minimum`, `maximum`,
`exclusive_minimum`, `exclusive_maximum` for numbers; `min_length`, `max_length`, `pattern` for
strings; `enum` for any type). Fields the schema does not declare are refused.

Values are checked as they are typed: a boolean is not a number, and a string of digits is not a
number either. Text typed into a form (a Slack modal, `/agent run key=value`) is parsed by the
schema first (`text=True`): ASCII digits only, so `"42"` is 42 for a number field and `"４２"` is
refused.

A field may also say how its value is shown to people (`format`): `"money"` (two decimals,
42.5 is "42.50"), or a Python format spec for numbers (`".1f"`, `",.2f"`, `"d"`). The card's
fields, its edit lines, the Full payload modal, titles (a `{amount}` placeholder without a spec of
its own), Home, `/agent status` and `signoff show` all show the value that way; the value itself
(what is checked, fingerprinted and run) is never changed by it.

Built in code (a workflow's `INPUTS`) or read from the policy file (`[actions.NAME.args]`).
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

__all__ = [
    "FIELD_TYPES",
    "FORMATS",
    "Field",
    "FieldType",
    "Schema",
    "SchemaError",
    "display",
]

FieldType = Literal["string", "number", "integer", "boolean", "any"]
"""A field's type. `number` is an int, float or Decimal (finite); `integer` a whole int; `any`
accepts every value (for workflows that declare only names)."""

FIELD_TYPES: tuple[FieldType, ...] = get_args(FieldType)

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_TRUE, _FALSE = ("true", "yes"), ("false", "no")
_SHOWN = 60

FORMATS: Mapping[str, str] = {"money": ".2f"}
"""Named display formats a field may use (`format = "money"`), and the format spec each means."""


def _spec(fmt: str) -> str:
    return FORMATS.get(fmt, fmt)


def display(value: Any, fmt: str | None) -> str | None:
    """`value` as its field's display format `fmt` shows it (`display(42.5, "money")` is
    "42.50"), or None when there is no format or it does not apply to the value (text, a
    redacted secret, None, a boolean): the caller shows such a value as it always does."""
    if not fmt or not _is_number(value):
        return None
    try:
        return format(value, _spec(fmt))
    except (TypeError, ValueError):
        return None


class SchemaError(ValueError):
    """Values that do not fit a schema.

    Attributes:
        problems: field name -> what is wrong with it, one sentence each.
    """

    def __init__(self, problems: Mapping[str, str]) -> None:
        self.problems = dict(problems)
        super().__init__("; ".join(f"{k}: {v}" for k, v in self.problems.items()))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, decimal.Decimal):
        return value.is_finite()
    return True


@dataclass(frozen=True)
class Field:
    """What one field must be."""

    type: FieldType = "any"
    """Default `any`."""
    required: bool = False
    """A required field must be given and not empty (None and "" are not given). Default
    False: an optional field may be left out, or given as None or ""."""
    minimum: float | None = None
    """Numbers: at least this. Default none."""
    maximum: float | None = None
    """Numbers: at most this. Default none."""
    exclusive_minimum: float | None = None
    """Numbers: more than this. Default none."""
    exclusive_maximum: float | None = None
    """Numbers: less than this. Default none."""
    min_length: int | None = None
    """Strings: at least this many characters. Default none."""
    max_length: int | None = None
    """Strings: at most this many characters. Default none."""
    pattern: str | None = None
    """Strings: a regular expression the whole value must match. Default none."""
    enum: tuple[Any, ...] | None = None
    """The only values allowed (compared like with like: true is not 1). Default none."""
    description: str = ""
    """Shown in help and errors: a value that does not match `pattern` is refused as "must be
    <description>", so write what the pattern means (`"an id: letters, digits and _ . : -, no
    spaces"`). Default none: the pattern itself is shown."""
    format: str | None = None
    """Numbers: how the value is shown to people, `"money"` (42.50) or a Python format spec
    (`".1f"`, `",.2f"`). Never changes the value. Default none: as written (42.5)."""
    secret: bool = False
    """Never stored, logged or shown in clear, from the moment the run starts: hashed where it
    is a field (the run's input, its state, an approval's arguments of the same name), hidden
    where a text quotes it. For a workflow input the policy's `secret` does not name (an input
    that becomes a secret argument under another name). Default False."""
    _compiled: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.type not in FIELD_TYPES:
            raise ValueError(f"type must be one of {', '.join(FIELD_TYPES)}, got {self.type!r}")
        bounds = (self.minimum, self.maximum, self.exclusive_minimum, self.exclusive_maximum)
        if any(b is not None for b in bounds) and self.type not in ("number", "integer"):
            raise ValueError(f"minimum and maximum are for numbers, not {self.type}")
        if any(b is not None and not _is_number(b) for b in bounds):
            raise ValueError("minimum and maximum must be finite numbers")
        lengths = (self.min_length, self.max_length, self.pattern)
        if any(x is not None for x in lengths) and self.type != "string":
            raise ValueError(f"min_length, max_length and pattern are for strings, not {self.type}")
        for n in (self.min_length, self.max_length):
            if n is not None and (type(n) is not int or n < 0):
                raise ValueError(f"lengths must be whole numbers, at least 0, got {n!r}")
        if self.pattern is not None:
            try:
                object.__setattr__(self, "_compiled", re.compile(self.pattern))
            except re.error as exc:
                raise ValueError(f"pattern {self.pattern!r} is not a regular expression: {exc}")
        if self.format is not None:
            self._check_format()
        if self.enum is not None:
            object.__setattr__(self, "enum", tuple(self.enum))
            if not self.enum:
                raise ValueError("enum must list at least one value")

    def _check_format(self) -> None:
        fmt = self.format
        if self.type not in ("number", "integer"):
            raise ValueError(f"format is for numbers, not {self.type}")
        sample = 1 if self.type == "integer" else 1.5
        try:
            ok = isinstance(fmt, str) and bool(fmt) and bool(format(sample, _spec(fmt)))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(
                f'format must be "money" (two decimals: 42.50) or a Python format spec for a '
                f'number, like ".1f" or ",.2f", got {_shown(fmt)}'
            )

    def parse_text(self, text: str) -> Any:
        """`text` typed into a form, as this field's type. Raises ValueError (what is wrong)."""
        stripped = text.strip()
        if self.type == "integer":
            if not _INTEGER_TEXT.fullmatch(stripped):
                raise ValueError(f"must be a whole number, like 12, got {_shown(text)}")
            return int(stripped)
        if self.type == "number":
            if not _NUMBER_TEXT.fullmatch(stripped):
                raise ValueError(f"must be a number, like 12.50, got {_shown(text)}")
            return float(stripped)
        if self.type == "boolean":
            if stripped.lower() in _TRUE + _FALSE:
                return stripped.lower() in _TRUE
            raise ValueError(f"must be true or false, got {_shown(text)}")
        return text

    def check(self, value: Any, *, text: bool = False) -> Any:
        """`value` if it fits (parsed first when it is form text and `text`), else ValueError
        saying what is wrong. Whether an empty value may be left out is `Schema`'s concern."""
        if text and isinstance(value, str) and self.type in ("number", "integer", "boolean"):
            value = self.parse_text(value)
        if self.type == "string" and not isinstance(value, str):
            raise ValueError(f"must be text, got {_shown(value)}")
        if self.type == "boolean" and not isinstance(value, bool):
            raise ValueError(f"must be true or false, got {_shown(value)}")
        if self.type == "integer":
            if isinstance(value, float) and _is_number(value) and value.is_integer():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"must be a whole number, got {_shown(value)}")
        if self.type == "number" and not _is_number(value):
            raise ValueError(f"must be a finite number, got {_shown(value)}")
        if self.type in ("number", "integer"):
            self._check_bounds(value)
        if isinstance(value, str):
            self._check_string(value)
        if self.enum is not None and not any(_same(value, e) for e in self.enum):
            raise ValueError(
                f"must be one of {', '.join(_shown(e) for e in self.enum)}, got {_shown(value)}"
            )
        return value

    def _check_bounds(self, value: Any) -> None:
        n = _decimal(value)
        for bound, word in (
            (self.minimum, "at least"),
            (self.maximum, "at most"),
            (self.exclusive_minimum, "more than"),
            (self.exclusive_maximum, "less than"),
        ):
            if bound is None:
                continue
            b = _decimal(bound)
            ok = {"at least": n >= b, "at most": n <= b, "more than": n > b, "less than": n < b}
            if not ok[word]:
                raise ValueError(f"must be {word} {bound:g}, got {_shown(value)}")

    def _check_string(self, value: str) -> None:
        if self.min_length is not None and len(value) < self.min_length:
            raise ValueError(f"must be at least {self.min_length} characters, got {_shown(value)}")
        if self.max_length is not None and len(value) > self.max_length:
            raise ValueError(f"must be at most {self.max_length} characters, got {len(value)}")
        if self._compiled is not None and not self._compiled.fullmatch(value):
            if self.description:  # what the pattern means, in the policy's words
                raise ValueError(f"must be {self.description}, got {_shown(value)}")
            raise ValueError(f"must match {self.pattern}, got {_shown(value)}")


def _decimal(value: Any) -> decimal.Decimal:
    return decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return bool(a == b)


def _empty(value: Any) -> bool:
    return value is None or value == ""


@dataclass(frozen=True)
class Schema:
    """The fields of a workflow's inputs or of an action's arguments."""

    fields: Mapping[str, Field] = field(default_factory=dict)
    """By field name, in the order they are shown."""
    additional: bool = False
    """Whether fields it does not declare are let through, unchecked. Default False: refused."""

    @classmethod
    def loose(cls, names: Iterable[str], required: Iterable[str] = ()) -> Schema:
        """Names only, any values: for a workflow that declares `INPUTS` as a tuple of names."""
        needed = set(required)
        all_names = list(dict.fromkeys([*names, *required]))
        return cls({n: Field("any", required=n in needed) for n in all_names}, additional=True)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.fields)

    @property
    def formats(self) -> dict[str, str]:
        """Field name -> display format, for the fields that declare one."""
        return {n: f.format for n, f in self.fields.items() if f.format}

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(n for n, f in self.fields.items() if f.required)

    @property
    def secret(self) -> tuple[str, ...]:
        """The fields marked `secret`."""
        return tuple(n for n, f in self.fields.items() if f.secret)

    def missing(self, values: Mapping[str, Any]) -> list[str]:
        """The required fields `values` leaves out (or gives as None or "")."""
        return [n for n in self.required if _empty(values.get(n))]

    def check_field(self, name: str, value: Any, *, text: bool = False) -> Any:
        """One field's value, parsed (form text, when `text`) and checked.

        Raises:
            SchemaError: `{name: what is wrong}`.
        """
        spec = self.fields.get(name)
        if spec is None and self.additional:
            return value
        if spec is None:
            raise SchemaError({name: f"is not an argument here (known: {', '.join(self.names)})"})
        if _empty(value):
            if spec.required:
                raise SchemaError({name: "is required"})
            return value
        try:
            return spec.check(value, text=text)
        except ValueError as exc:
            raise SchemaError({name: str(exc)}) from None

    def problems(self, values: Mapping[str, Any], *, text: bool = False) -> dict[str, str]:
        """What is wrong with `values`, by field; empty when they fit. Never raises."""
        try:
            self.check(values, text=text)
        except SchemaError as exc:
            return exc.problems
        except Exception as exc:  # noqa: BLE001 - a check that fails is a refusal, not a crash
            return {"(arguments)": f"cannot be checked: {type(exc).__name__}: {exc}"}
        return {}

    def check(self, values: Mapping[str, Any], *, text: bool = False) -> dict[str, Any]:
        """`values` parsed (form text, when `text`) and checked, every problem at once.

        Raises:
            SchemaError: `{field: what is wrong}` for each field that does not fit.
        """
        if not isinstance(values, Mapping):
            raise SchemaError({"(arguments)": f"must be a table of values, got {_shown(values)}"})
        out: dict[str, Any] = {}
        problems: dict[str, str] = {}
        for name in self.missing(values):
            problems[name] = "is required"
        for name, value in values.items():
            if name in problems:
                continue
            try:
                out[name] = self.check_field(str(name), value, text=text)
            except SchemaError as exc:
                problems.update(exc.problems)
        if problems:
            raise SchemaError(problems)
        return out
