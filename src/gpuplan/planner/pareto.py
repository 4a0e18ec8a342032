"""The cost-vs-time Pareto front: plans no other plan beats on both."""
from __future__ import annotations

import numpy as np


def pareto_front(cost: np.ndarray, time: np.ndarray) -> np.ndarray:
    """Indices of non-dominated points (lower cost and lower time are better), by increasing time.

    One sort and a running minimum: O(n log n), fine for tens of thousands of candidates.
    """
    cost = np.asarray(cost, dtype=float)
    time = np.asarray(time, dtype=float)
    if cost.shape != time.shape or cost.ndim != 1:
        raise ValueError("cost and time must be 1-d arrays of the same length")
    ok = np.isfinite(cost) & np.isfinite(time)
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return idx
    order = idx[np.lexsort((cost[idx], time[idx]))]  # by time, then cost
    front = []
    best_cost = np.inf
    for i in order:
        if cost[i] < best_cost:
            front.append(i)
            best_cost = cost[i]
    return np.asarray(front, dtype=int)
