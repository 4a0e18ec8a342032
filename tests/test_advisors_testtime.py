"""Test-time compute allocation: optimality against brute force, and hostile query files."""
from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.economics.testtime import (Query, allocate_attempts, expected_solved, load_queries,
                                        p_from_difficulty, parse_queries_text, solved_probability)
from gpuplan.errors import UsageError


def brute_force(queries, budget):
    """Best expected solved over every attempt vector whose cost fits the budget."""
    ranges = [range(int(budget // q.cost) + 1) for q in queries]
    best = 0.0
    for ks in itertools.product(*ranges):
        if sum(k * q.cost for k, q in zip(ks, queries)) <= budget + 1e-9:
            best = max(best, expected_solved(queries, list(ks)))
    return best


probs = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(ps=st.lists(probs, min_size=1, max_size=4), budget=st.integers(min_value=1, max_value=8))
def test_greedy_matches_brute_force_with_unit_costs(ps, budget):
    qs = [Query(id=f"q{i}", p_success=p) for i, p in enumerate(ps)]
    a = allocate_attempts(qs, budget)
    assert a.method == "greedy" and a.optimal
    assert a.expected_solved == pytest.approx(brute_force(qs, budget), abs=1e-9)
    assert a.spent <= budget
    assert a.expected_solved >= a.uniform_expected_solved - 1e-12


@settings(max_examples=200, deadline=None)
@given(items=st.lists(st.tuples(probs, st.integers(min_value=1, max_value=3)), min_size=2, max_size=4),
       budget=st.integers(min_value=1, max_value=8))
def test_exact_dp_matches_brute_force_with_unequal_integer_costs(items, budget):
    qs = [Query(id=f"q{i}", p_success=p, cost=float(c)) for i, (p, c) in enumerate(items)]
    a = allocate_attempts(qs, budget)
    assert a.spent <= budget + 1e-9
    assert a.expected_solved == pytest.approx(brute_force(qs, budget), abs=1e-9)
    if len({q.cost for q in qs}) > 1:
        assert a.method == "exact-dp"


@settings(max_examples=100, deadline=None)
@given(items=st.lists(st.tuples(probs, st.floats(min_value=0.3, max_value=3.0)), min_size=1, max_size=4),
       budget=st.floats(min_value=0.1, max_value=8.0))
def test_fractional_costs_never_overspend(items, budget):
    qs = [Query(id=f"q{i}", p_success=p, cost=c) for i, (p, c) in enumerate(items)]
    a = allocate_attempts(qs, budget)
    assert a.spent <= budget * (1 + 1e-12)
    assert a.expected_solved == pytest.approx(expected_solved(qs, [r.attempts for r in a.queries]))


def test_greedy_prefers_hard_but_solvable_queries_over_saturated_ones():
    qs = [Query("easy", 0.99), Query("medium", 0.3), Query("impossible", 0.0)]
    a = allocate_attempts(qs, 10)
    by_id = {r.id: r.attempts for r in a.queries}
    assert by_id["impossible"] == 0 and by_id["medium"] > by_id["easy"] >= 1
    assert a.gain_vs_uniform > 0


def test_budget_below_every_cost_gives_nothing():
    a = allocate_attempts([Query("a", 0.5, 3.0), Query("b", 0.5, 4.0)], 2.0)
    assert a.total_attempts == 0 and a.expected_solved == 0


def test_solved_probability_is_accurate_for_tiny_p():
    assert solved_probability(1e-12, 3) == pytest.approx(3e-12, rel=1e-9)
    assert solved_probability(1.0, 5) == 1.0 and solved_probability(0.3, 0) == 0.0


def test_difficulty_logistic():
    assert p_from_difficulty(0.0) == pytest.approx(0.5)
    assert p_from_difficulty(1.0, ability=1.0) == pytest.approx(0.5)
    assert p_from_difficulty(2.0) < p_from_difficulty(1.0) < p_from_difficulty(-1.0)
    assert p_from_difficulty(1.0, discrimination=3.0) < p_from_difficulty(1.0)
    assert 0.0 <= p_from_difficulty(800.0) < 1e-300 and p_from_difficulty(-800.0) == 1.0  # no overflow


def test_csv_and_json_files(tmp_path):
    csv_file = tmp_path / "q.csv"
    csv_file.write_text("id,p_success,cost\na,0.5,1\nb,0.2,2\n")
    js = tmp_path / "q.json"
    js.write_text(json.dumps({"queries": [{"id": "a", "p_success": 0.5, "cost": 1}, {"id": "b", "difficulty": 1.0}]}))
    assert [q.cost for q in load_queries(csv_file)] == [1.0, 2.0]
    qs = load_queries(js)
    assert qs[1].p_success == pytest.approx(p_from_difficulty(1.0)) and qs[1].cost == 1.0


@pytest.mark.parametrize("text,needle", [
    ("", "empty"),
    ("id,p_success\n", "no queries"),
    ("name,p_success\na,0.5\n", "'id'"),
    ("id,cost\na,1\n", "'p_success'"),
    ("id,p_success\na,1.5\n", "row 2: column 'p_success'"),
    ("id,p_success\na,0.5\nb,-0.1\n", "row 3: column 'p_success'"),
    ("id,p_success\na,nan\n", "row 2: column 'p_success' must be finite"),
    ("id,p_success\na,abc\n", "row 2: column 'p_success' is not a number"),
    ("id,p_success,cost\na,0.5,-1\n", "row 2: column 'cost'"),
    ("id,p_success,cost\na,0.5,0\n", "row 2: column 'cost'"),
    ("id,p_success,cost\na,0.5,inf\n", "row 2: column 'cost' must be finite"),
    ("id,p_success\na,0.5\na,0.4\n", "duplicate id"),
    ("id,p_success\n,0.5\n", "row 2: column 'id' is empty"),
    ("id,p_success,difficulty\na,,\n", "row 2: give 'p_success' or 'difficulty'"),
    ('[{"id": "a", "p_success": 0.5},', "malformed JSON"),
    ('{"rows": []}', "list of query objects"),
    ('[{"id": "a", "p_success": true}]', "row 1: column 'p_success'"),
    ('[{"id": "a", "p_success": 0.5}, {"id": "b"}]', "row 2: give 'p_success'"),
])
def test_hostile_files_name_row_and_column(text, needle):
    with pytest.raises(UsageError) as e:
        parse_queries_text(text, "q.csv")
    assert needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("budget", [0, -1, float("nan"), float("inf"), "x", 1e30])
def test_bad_budgets(budget):
    with pytest.raises(UsageError):
        allocate_attempts([Query("a", 0.5)], budget)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(UsageError):
        load_queries(tmp_path / "nope.csv")
    with pytest.raises(UsageError):
        load_queries(tmp_path)
