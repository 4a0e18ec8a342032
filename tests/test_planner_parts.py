"""Planner building blocks: Pareto front, region geography, workload placement."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from gpuplan.errors import UsageError
from gpuplan.planner.geography import parse_user_geographies, region_geography, rtt_ms, worst_rtt_ms
from gpuplan.planner.pareto import pareto_front
from gpuplan.planner.placement import classify


def _dominated(i, cost, time):
    return any((cost[j] <= cost[i] and time[j] <= time[i]) and (cost[j] < cost[i] or time[j] < time[i])
               for j in range(len(cost)))


@given(st.lists(st.tuples(st.floats(0, 1e6), st.floats(0, 1e4)), min_size=0, max_size=40))
def test_pareto_front_is_exactly_the_non_dominated_set(points):
    cost = np.array([p[0] for p in points], dtype=float)
    time = np.array([p[1] for p in points], dtype=float)
    front = set(pareto_front(cost, time).tolist())
    for i in range(len(points)):
        if i in front:
            assert not _dominated(i, cost, time)
        else:  # either dominated or an exact duplicate of a front point
            assert _dominated(i, cost, time) or any(cost[j] == cost[i] and time[j] == time[i] for j in front)


def test_pareto_ignores_non_finite():
    front = pareto_front(np.array([1.0, np.nan, 0.5, np.inf]), np.array([2.0, 1.0, 3.0, 0.1]))
    assert sorted(front.tolist()) == [0, 2]


@pytest.mark.parametrize("region, geo", [
    ("eu-north1", "eu"), ("Denmark, DK, EU", "eu"), ("East Coast (NY2)", "us-east"), ("us-carlsbad-1", "us-west"),
    ("SE", "eu"), ("asia-south-1", "ap-south"), ("jp-tok", "ap-east"), ("us-central1", "us-central"),
    ("global", None), ("", None), ("Vietnam, VN, AS", "ap-southeast"), ("australia-east-1", "oceania"),
    ("CN, AS", "ap-east"), ("CA, NA", "us-east"),  # Vast hosts listed without a city
])
def test_region_geography(region, geo):
    assert region_geography(region) == geo


def test_rtt_is_symmetric_and_local_is_fastest():
    assert rtt_ms("eu", "us-east") == rtt_ms("us-east", "eu")
    assert rtt_ms("eu", "eu") < rtt_ms("eu", "us-east") < rtt_ms("eu", "oceania")
    assert rtt_ms(None, "eu") is None
    users = parse_user_geographies("eu,us-east,ap-south")
    assert worst_rtt_ms("eu-north1", users) == max(rtt_ms("eu", u) for u in users)
    assert worst_rtt_ms("global", users) is None


def test_user_geographies_validate():
    assert parse_user_geographies("Europe, india") == ["eu", "ap-south"]
    with pytest.raises(UsageError, match="unknown user region"):
        parse_user_geographies("eu,mars")
    with pytest.raises(UsageError):
        parse_user_geographies(" , ")


def test_placement_keeps_multi_node_training_off_loose_networks():
    multi = classify("train", 4)
    assert multi.coupling == "tightly-coupled" and not multi.decentralized_suitable
    single = classify("train", 1)
    assert single.decentralized_suitable
    serve = classify("serve", 1)
    assert serve.coupling == "independent" and serve.decentralized_suitable and serve.consumer_gpus_suitable
