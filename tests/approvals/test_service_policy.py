"""`check_service`: which service may ask for which action, decided from the policy alone."""

import pytest

from bot.approvals.errors import PolicyError, ServiceNotAllowed, UnknownAction
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


def _with_callbacks(lines: str) -> str:
    return f"""
[actions.send_refund]
approvers = ["U_DAVE"]

[services.billing]
token_env = "BILLING_TOKEN"
actions = ["send_refund"]
{lines}
"""


def test_callback_origins_match_by_scheme_host_and_port() -> None:
    policy = parse_policy(
        _with_callbacks('callback_urls = ["https://hooks.example", "https://*.corp.example:*"]')
    )
    svc = policy.services["billing"]
    assert svc.callback_problem("https://hooks.example/signoff?x=1") is None
    assert svc.callback_problem("https://HOOKS.example:443/") is None
    assert svc.callback_problem("https://a.b.corp.example:8443/h") is None
    for refused in (
        "http://hooks.example/signoff",  # another scheme
        "https://hooks.example:8443/",  # another port
        "https://hooks.example.evil/",  # another host
        "https://corp.example/",  # `*.` is the names under it, not itself
        "https://10.0.0.1/",  # not listed
    ):
        assert svc.callback_problem(refused) is not None, refused


def test_private_loopback_and_link_local_addresses_need_callback_private() -> None:
    listed = 'callback_urls = ["http://127.0.0.1:*", "http://10.1.2.3", "http://[::1]:*", "http://169.254.169.254"]'
    svc = parse_policy(_with_callbacks(listed)).services["billing"]
    hint = "webhooks go to such addresses only when [services.billing] says callback_private = true"
    assert (
        svc.callback_problem("http://127.0.0.1:8000/metrics")
        == f"127.0.0.1 is a loopback address; {hint}"
    )
    assert svc.callback_problem("http://[::1]:9/") == f"::1 is a loopback address; {hint}"
    assert svc.callback_problem("http://10.1.2.3/") == f"10.1.2.3 is a private address; {hint}"
    assert svc.callback_problem("http://169.254.169.254/latest") == (
        f"169.254.169.254 is a link-local address; {hint}"
    )
    allowed = parse_policy(_with_callbacks(listed + "\ncallback_private = true"))
    assert allowed.services["billing"].callback_problem("http://127.0.0.1:8000/metrics") is None


def test_a_malformed_callback_origin_is_refused_with_its_line() -> None:
    with pytest.raises(PolicyError) as raised:
        parse_policy(_with_callbacks('callback_urls = ["https://hooks.example/signoff/path"]'))
    assert raised.value.key == "services.billing.callback_urls"
    assert "must be an array of origins like" in raised.value.message
    assert "'https://hooks.example/signoff/path'" in raised.value.message
    with pytest.raises(PolicyError, match="must be true or false"):
        parse_policy(_with_callbacks('callback_private = "yes"'))
