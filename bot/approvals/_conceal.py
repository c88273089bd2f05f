"""What leaves a run's checkpoint, with its secrets hidden: not only the fields the policy marks
`secret` (replaced by their hash, as in approvals), but every text derived from one (a title
that names the card number, an outcome or an error message that quotes it), searched for and
replaced by `HIDDEN`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .policy import ActionPolicy
from .policy._fingerprint import redacted

__all__ = ["HIDDEN", "MIN_SEARCHED", "Concealer", "plain", "secret_texts"]

HIDDEN = "•••"
"""What a secret value quoted inside a text becomes (as a redacted field in a title)."""

MIN_SEARCHED = 4
"""Shortest secret text looked for inside other texts. A shorter secret value is still hidden
where it is a field of its own; searching texts for it would blank out ordinary words and
numbers (a 3-digit code inside an amount)."""


def plain(value: Any) -> Any:
    """`value` with every pydantic model in it (langchain_core's messages among them) as its
    fields: a message's `type` (its role: `human`, `ai`, `tool`...) first, then the fields not
    left at their defaults (`content`, `tool_calls`, `tool_call_id`, `id`...), as the checkpoint
    serializer stores it. Anything else is left as it is. So an agent's state reads as data
    where it is stored or printed, and its secrets are found and hidden like any other field's.
    """
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if dump is None or isinstance(value, type):
        return value
    try:
        fields = dump(mode="json", exclude_defaults=True)
    except Exception:  # noqa: BLE001 (a model that cannot dump itself stays as it is)
        return value
    kind = getattr(value, "type", None)
    return {"type": kind, **fields} if isinstance(kind, str) else fields


def secret_texts(value: Any, names: Iterable[str]) -> set[str]:
    """The texts of every value found under a key in `names`, at any depth of `value` (a run's
    input or state, an approval's interrupt): strings as they are, numbers as written."""
    wanted = frozenset(names)
    found: set[str] = set()

    def leaves(v: Any) -> None:
        if isinstance(v, Mapping):
            for item in v.values():
                leaves(item)
        elif isinstance(v, (list, tuple, set, frozenset)):
            for item in v:
                leaves(item)
        elif isinstance(v, str):
            found.add(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            found.update({str(v), repr(v)})

    def walk(v: Any) -> None:
        if isinstance(v, Mapping):
            for k, item in v.items():
                if k in wanted:
                    leaves(item)
                else:
                    walk(item)
        elif isinstance(v, (list, tuple)):
            for item in v:
                walk(item)

    walk(plain(value))
    return {text for text in found if len(text.strip()) >= MIN_SEARCHED}


class Concealer:
    """Hides one run's secrets in whatever is about to be stored, logged or posted."""

    def __init__(
        self,
        rules: Mapping[str, ActionPolicy | None],
        key: bytes | None,
        texts: Iterable[str] = (),
    ) -> None:
        self.rules = dict(rules)
        """Secret field name -> the action policy that marks it, or None for a workflow input
        marked `secret` in its schema."""
        self.key = key
        self.texts = sorted(set(texts), key=len, reverse=True)
        """The secret values in clear, longest first (so a longer one is replaced whole)."""

    def learn(self, value: Any) -> Concealer:
        """A concealer that also knows the secret values found in `value`."""
        return Concealer(self.rules, self.key, {*self.texts, *secret_texts(value, self.rules)})

    def text(self, text: str) -> str:
        """`text` with every secret value in it replaced by `HIDDEN`."""
        for secret in self.texts:
            if secret in text:
                text = text.replace(secret, HIDDEN)
        return text

    def scrub(self, value: Any) -> Any:
        """`value` with every secret value quoted in its texts (keys too) replaced by `HIDDEN`;
        fields are left in place (for values whose secret fields are redacted already).
        Models (langchain_core's messages) are their fields first (`plain`)."""
        if hasattr(value, "model_dump") and not isinstance(value, type):
            value = plain(value)
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                (self.text(k) if isinstance(k, str) else k): self.scrub(v) for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [self.scrub(v) for v in value]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return HIDDEN if str(value) in self.texts or repr(value) in self.texts else value
        return value

    def hide(self, value: Any) -> Any:
        """`value` (a run's input or state) with every field the policy marks secret, at any
        depth, replaced by its hash, and every secret value quoted elsewhere by `HIDDEN`.
        Models (langchain_core's messages) are their fields first (`plain`)."""
        if hasattr(value, "model_dump") and not isinstance(value, type):
            value = plain(value)
        if isinstance(value, Mapping):
            return {
                self.text(k) if isinstance(k, str) else k: (
                    redacted(v, key=self.key) if k in self.rules else self.hide(v)
                )
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [self.hide(v) for v in value]
        return self.scrub(value)
