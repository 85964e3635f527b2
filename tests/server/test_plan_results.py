"""CompletedPlans: plan results kept by table and id, within a bound on the files they name."""

from __future__ import annotations

from typing import Any

from icefloe.server.plan_results import CompletedPlans

T = (("db",), "t")
U = (("db",), "u")


def _result(tasks: int, deletes: int = 0) -> dict[str, Any]:
    return {
        "status": "completed",
        "file-scan-tasks": [{"data-file": {"file-path": f"f{i}"}} for i in range(tasks)],
        "delete-files": [{"file-path": f"d{i}"} for i in range(deletes)],
    }


def test_kept_by_table_and_id_until_released() -> None:
    plans = CompletedPlans()
    first, second = _result(2, 1), _result(3)
    a, b = plans.keep(T, first), plans.keep(T, second)
    assert a != b
    assert plans.fetch(T, a) is first and plans.fetch(T, b) is second
    assert plans.fetch(U, a) is None
    assert plans.release(T, a) is True
    assert plans.fetch(T, a) is None and plans.release(T, a) is False
    assert plans.fetch(T, b) is second


def test_oldest_plans_leave_first_within_the_file_bound() -> None:
    plans = CompletedPlans(max_files=10)  # a plan weighs 1 + its tasks + its delete files
    a = plans.keep(T, _result(3))  # 4
    b = plans.keep(T, _result(2, 1))  # 4
    assert plans.fetch(T, a) is not None  # a is now the most recent
    c = plans.keep(T, _result(2))  # 3: 11 > 10, so b (least recently used) leaves
    assert plans.fetch(T, b) is None
    assert plans.fetch(T, a) is not None and plans.fetch(T, c) is not None
    assert len(plans) == 2


def test_a_plan_larger_than_the_bound_gets_an_id_but_is_not_kept() -> None:
    plans = CompletedPlans(max_files=10)
    small = plans.keep(T, _result(1))
    huge = plans.keep(T, _result(20))
    assert huge and plans.fetch(T, huge) is None
    assert plans.fetch(T, small) is not None  # and it pushed nothing out


def test_plan_count_is_bounded_too() -> None:
    plans = CompletedPlans(max_plans=3)
    ids = [plans.keep(T, _result(0)) for _ in range(5)]
    assert [plans.fetch(T, i) is not None for i in ids] == [False, False, True, True, True]
