"""`Signoff.pending_view`: what waits on one person and what waits on others, sorted and counted
by the database (so `/agent status` and Home stay quick with any number of pauses), agreeing
with the policy check on every approval."""

from __future__ import annotations

from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 420.0, "reason": "damaged"}


async def test_each_person_sees_what_they_may_decide_first_with_totals(kit: Kit) -> None:
    refunds = []
    for i in range(3):  # send_refund: @finance (Alice, Bob) may approve; Carol asks
        report = await kit.start("refund", {**REFUND, "order_id": f"o-{i}"})
        refunds += report.approvals
    deploy = (await kit.ask("deploy", {"service": "api"}, requester="U_ALICE")).approvals[0]
    await kit.app.decide(deploy, "U_BOB", True)  # 1 of the 2 the deploy needs

    def ids(approvals: list) -> list[str]:  # type: ignore[type-arg]
        return [a.id for a in approvals]

    alice = await kit.app.pending_view("U_ALICE")  # her own deploy is not hers to approve
    assert (ids(alice.mine), ids(alice.others), alice.mine_total, alice.others_total) == (
        refunds,
        [deploy],
        3,
        1,
    )
    bob = await kit.app.pending_view("U_BOB")  # he voted on the deploy already
    assert (ids(bob.mine), ids(bob.others), bob.mine_total, bob.others_total) == (
        refunds,
        [deploy],
        3,
        1,
    )
    dave = await kit.app.pending_view("U_DAVE")  # ops: the deploy only
    assert (ids(dave.mine), ids(dave.others), dave.mine_total, dave.others_total) == (
        [deploy],
        refunds,
        1,
        3,
    )
    carol = await kit.app.pending_view("U_CAROL")
    assert (carol.mine, carol.mine_total, carol.others_total) == ([], 0, 4)

    for user, view in (("U_ALICE", alice), ("U_BOB", bob), ("U_DAVE", dave), ("U_CAROL", carol)):
        for a in view.mine:
            assert await kit.app.may_decide(a, user)
        for a in view.others:
            assert not await kit.app.may_decide(a, user)


async def test_a_page_of_the_oldest_with_the_count_of_all(kit: Kit) -> None:
    refunds = []
    for i in range(5):
        refunds += (await kit.start("refund", {**REFUND, "order_id": f"o-{i}"})).approvals
    view = await kit.app.pending_view("U_ALICE", limit=2)
    assert [a.id for a in view.mine] == refunds[:2]
    assert (view.mine_total, view.others_total) == (5, 0)

    await kit.app.decide(refunds[0], "U_BOB", True)  # decided: no longer pending for anyone
    view = await kit.app.pending_view("U_ALICE", limit=2)
    assert [a.id for a in view.mine] == refunds[1:3]
    assert view.mine_total == 4


async def test_an_action_gone_from_the_policy_is_nobodys_to_approve(kit: Kit) -> None:
    (approval,) = (await kit.ask("deploy", {"service": "api"})).approvals
    narrower = kit.new_app(
        share_db=True,
        policy_text=kit.policy_path.read_text().replace("[actions.deploy]", "[actions.deploy_old]"),
    )
    view = await narrower.pending_view("U_ALICE")
    assert [a.id for a in view.others] == [approval]
    assert view.mine == [] and view.mine_total == 0
