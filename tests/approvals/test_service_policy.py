"""`check_service`: which service may ask for which action, decided from the policy alone."""

from bot.approvals.errors import ServiceNotAllowed, UnknownAction
from bot.approvals.policy import check_service, parse_policy

POLICY = parse_policy(
    """
[actions.send_refund]
approvers = ["U_DAVE"]

[actions.delete_row]
approvers = ["U_DAVE"]

[services.billing]
token_env = "BILLING_TOKEN"
actions = ["send_refund"]
"""
)


def test_a_listed_action_may_be_asked_for() -> None:
    assert check_service(POLICY, "billing", "send_refund") is None


def test_a_service_the_policy_does_not_name_is_refused() -> None:
    refusal = check_service(POLICY, "crm", "send_refund")
    assert isinstance(refusal, ServiceNotAllowed)
    assert refusal.message == "'crm' is not a service of the policy ([services.crm])"


def test_an_action_the_policy_does_not_name_is_refused() -> None:
    refusal = check_service(POLICY, "billing", "wire_money")
    assert isinstance(refusal, UnknownAction)
    assert refusal.action == "wire_money"


def test_an_action_the_service_does_not_list_is_refused() -> None:
    refusal = check_service(POLICY, "billing", "delete_row")
    assert isinstance(refusal, ServiceNotAllowed)
    assert refusal.message == (
        "service 'billing' may not ask for 'delete_row'; it may ask for send_refund "
        "(add it to [services.billing] actions)"
    )


def test_an_action_that_is_not_a_string_is_unknown() -> None:
    assert isinstance(check_service(POLICY, "billing", ["send_refund"]), UnknownAction)
