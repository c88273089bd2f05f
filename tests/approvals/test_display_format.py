"""A declared argument's display format (`format = "money"`): read from the policy, refused
with its line when it cannot show a number, and never a change to the value itself."""

from __future__ import annotations

import pytest

from bot.approvals.errors import PolicyError
from bot.approvals.models import fill_title
from bot.approvals.policy import parse_policy
from bot.approvals.policy.schema import Field, display

ACTION = """
[actions.pay]
approvers = ["U_ALICE"]

[actions.pay.args]
"""


def test_money_shows_two_decimals_and_leaves_the_value_alone() -> None:
    policy = parse_policy(ACTION + 'amount = { type = "number", format = "money" }\n')
    schema = policy.actions["pay"].args
    assert schema is not None and schema.formats == {"amount": "money"}
    assert schema.check({"amount": 42.5}) == {"amount": 42.5}
    assert [display(v, "money") for v in (42.5, 40, 1234.5)] == ["42.50", "40.00", "1234.50"]
    assert display(1234.5, ",.2f") == "1,234.50"
    # Not a number (a redacted secret, text, a boolean, nothing): shown as it always was.
    assert [display(v, "money") for v in ({"redacted": "x"}, "42.5", True, None)] == [None] * 4


def test_a_title_placeholder_without_a_spec_uses_the_field_format() -> None:
    formats = {"amount": "money"}
    assert fill_title("Pay {amount} for {item}", {"amount": 40, "item": "a"}, formats) == (
        "Pay 40.00 for a"
    )
    assert fill_title("Pay {amount:.1f}", {"amount": 40}, formats) == "Pay 40.0"  # its own spec
    assert fill_title("Pay {amount}", {"amount": 40}) == "Pay 40"  # no format declared


BAD_FORMAT = (
    'format must be "money" (two decimals: 42.50) or a Python format spec for a number, like '
    '".1f" or ",.2f", got '
)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('amount = { type = "number", format = "dollars" }', BAD_FORMAT + "'dollars'"),
        ('amount = { type = "number", format = "d" }', BAD_FORMAT + "'d'"),
        ('note = { type = "string", format = "money" }', "format is for numbers, not string"),
    ],
)
def test_a_format_that_cannot_show_the_field_is_refused_with_its_line(
    line: str, problem: str
) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(ACTION + line + "\n", "signoff.toml")
    name = line.split(" ", 1)[0]
    assert str(caught.value) == f"signoff.toml:6: actions.pay.args.{name}: {problem}"


def test_an_integer_field_may_use_a_whole_number_spec() -> None:
    assert Field("integer", format="d").format == "d"
    assert display(7, "d") == "7"
