"""Test-time compute: how many attempts (samples) each query deserves under a budget.

A query solved with probability p per independent attempt is solved after k attempts with
probability 1 − (1 − p)^k, which is concave in k: the k-th attempt adds p·(1 − p)^(k−1). With
equal costs, handing out attempts one at a time to the largest marginal gain (a heap) is
optimal for such separable concave objectives. With unequal costs the problem is a knapsack;
integer costs and small budgets get an exact dynamic programme, otherwise the standard greedy
on gain per unit cost (an approximation, said so in the result).

Difficulty scores map to p with a two-parameter logistic (item-response theory, 2PL):
p = 1 / (1 + exp(−a·(θ − d))), ability θ (default 0) and discrimination a (default 1), so a
query of difficulty equal to the solver's ability is solved half the time.
"""
from __future__ import annotations

import csv
import heapq
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from gpuplan.errors import UsageError

MAX_ATTEMPTS_HANDED_OUT = 5_000_000
MAX_QUERIES_BYTES = 256 * 2**20  # ~10M rows; checked with stat() before reading
DP_MAX_WORK = 20_000_000  # cells × choices for the exact programme with unequal integer costs
NEGLIGIBLE_GAIN = 1e-15

P_COLUMNS = ("p_success", "p")
COST_COLUMNS = ("cost", "cost_per_attempt")


@dataclass(frozen=True)
class Query:
    id: str
    p_success: float
    cost: float = 1.0
    difficulty: float | None = None


def p_from_difficulty(difficulty: float, ability: float = 0.0, discrimination: float = 1.0) -> float:
    """2PL logistic: the chance one attempt solves a query of this difficulty."""
    z = discrimination * (ability - difficulty)
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


# ---- reading queries -----------------------------------------------------------------------

def load_queries(path: str | Path, ability: float = 0.0, discrimination: float = 1.0) -> list[Query]:
    """Queries from a CSV (header row) or JSON file (a list of objects, or {"queries": [...]})."""
    from gpuplan.files import check_in_file

    p = Path(path)
    check_in_file(p, f"queries file {str(p)!r}")
    if not p.exists():
        raise UsageError(f"queries file {str(p)!r} does not exist")
    if p.is_dir():
        raise UsageError(f"queries file {str(p)!r} is a directory")
    try:
        size = p.stat().st_size
        if size > MAX_QUERIES_BYTES:
            raise UsageError(f"{p.name}: {size / 2**20:,.0f} MiB is over the {MAX_QUERIES_BYTES // 2**20} MiB limit "
                             "for a queries file")
        with open(p, "rb") as f:
            raw = f.read(MAX_QUERIES_BYTES + 1)
    except OSError as e:
        raise UsageError(f"{p.name}: cannot read it ({e.strerror or type(e).__name__})") from None
    if len(raw) > MAX_QUERIES_BYTES:
        raise UsageError(f"{p.name}: over the {MAX_QUERIES_BYTES // 2**20} MiB limit for a queries file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"{p.name}: not a UTF-8 text file") from None
    return parse_queries_text(text, p.name, ability=ability, discrimination=discrimination)


def parse_queries_text(text: str, where: str = "queries", ability: float = 0.0,
                       discrimination: float = 1.0) -> list[Query]:
    if not text.strip():
        raise UsageError(f"{where}: the file is empty")
    stripped = text.lstrip()
    if stripped[0] in "[{":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"{where}: malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}") from None
        if isinstance(data, dict):
            data = data.get("queries")
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise UsageError(f"{where}: JSON must be a list of query objects or {{\"queries\": [...]}}")
        records = [{str(k).strip().lower(): v for k, v in r.items()} for r in data]
        first_row = 1
    else:
        reader = csv.DictReader(io.StringIO(text))
        if reader.fieldnames is None:
            raise UsageError(f"{where}: no header row")
        records = [{(k or "").strip().lower(): v for k, v in r.items()} for r in reader]
        first_row = 2  # the header is line 1
        cols = {(c or "").strip().lower() for c in reader.fieldnames}
        _check_columns(cols, where)
    if not records:
        raise UsageError(f"{where}: no queries (only a header?)")
    if first_row == 1:
        _check_columns(set().union(*[r.keys() for r in records]), where)
    return parse_queries(records, where, first_row, ability, discrimination)


def _check_columns(cols: set[str], where: str) -> None:
    if "id" not in cols:
        raise UsageError(f"{where}: missing column 'id'")
    if not any(c in cols for c in P_COLUMNS + ("difficulty",)):
        raise UsageError(f"{where}: missing column 'p_success' (or 'difficulty')")


def parse_queries(records: list[dict[str, Any]], where: str = "queries", first_row: int = 1,
                  ability: float = 0.0, discrimination: float = 1.0) -> list[Query]:
    """Validate rows; every problem names its row (file line for CSV) and column."""
    for name, v in (("ability", ability), ("discrimination", discrimination)):
        if not math.isfinite(v):
            raise UsageError(f"{name} must be a finite number, got {v!r}")
    if discrimination <= 0:
        raise UsageError(f"discrimination must be positive, got {discrimination!r}")
    out: list[Query] = []
    seen: set[str] = set()
    for i, r in enumerate(records):
        row = f"{where}: row {i + first_row}"
        qid = r.get("id")
        if qid is None or str(qid).strip() == "":
            raise UsageError(f"{row}: column 'id' is empty")
        qid = str(qid).strip()
        if qid in seen:
            raise UsageError(f"{row}: duplicate id {qid!r}")
        seen.add(qid)
        p_col = next((c for c in P_COLUMNS if _present(r.get(c))), None)
        difficulty = None
        if p_col is not None:
            p = _number(r[p_col], row, p_col)
            if not 0.0 <= p <= 1.0:
                raise UsageError(f"{row}: column '{p_col}' must be a probability in [0, 1], got {r[p_col]!r}")
        elif _present(r.get("difficulty")):
            difficulty = _number(r["difficulty"], row, "difficulty")
            p = p_from_difficulty(difficulty, ability, discrimination)
        else:
            raise UsageError(f"{row}: give 'p_success' or 'difficulty'")
        c_col = next((c for c in COST_COLUMNS if _present(r.get(c))), None)
        cost = 1.0
        if c_col is not None:
            cost = _number(r[c_col], row, c_col)
            if cost <= 0:
                raise UsageError(f"{row}: column '{c_col}' must be a positive cost per attempt, got {r[c_col]!r}")
            if cost > 1e15:
                raise UsageError(f"{row}: column '{c_col}' is implausibly large ({r[c_col]!r})")
        out.append(Query(id=qid, p_success=p, cost=cost, difficulty=difficulty))
    return out


def _present(v: Any) -> bool:
    return v is not None and not (isinstance(v, str) and v.strip() == "")


def _number(v: Any, row: str, col: str) -> float:
    if isinstance(v, bool):
        raise UsageError(f"{row}: column '{col}' is not a number: {v!r}")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise UsageError(f"{row}: column '{col}' is not a number: {v!r}") from None
    if not math.isfinite(x):
        raise UsageError(f"{row}: column '{col}' must be finite, got {v!r}")
    return x


# ---- allocation ----------------------------------------------------------------------------

class QueryAllocation(BaseModel):
    id: str
    p_success: float
    cost: float
    attempts: int
    p_solved: float
    uniform_attempts: int
    uniform_p_solved: float


class Allocation(BaseModel):
    method: str = Field(description="greedy (optimal for equal costs), exact-dp, or greedy-ratio (approximate)")
    optimal: bool
    budget: float
    spent: float
    expected_solved: float
    uniform_expected_solved: float
    gain_vs_uniform: float
    n_queries: int
    total_attempts: int
    marginal_gain_per_cost: float = Field(description="gain per unit cost of the last attempt handed out (the shadow price)")
    queries: list[QueryAllocation]
    assumptions: dict[str, Any] = Field(default_factory=dict)


INDEPENDENCE_CAVEAT = ("assumes independent attempts and a perfect verifier: P(solved) = 1 - (1 - p)^k; "
                       "correlated attempts (the same mistake repeated) or an imperfect verifier/selector "
                       "solve fewer queries than shown, so read these as upper bounds")


def solved_probability(p: float, k: int) -> float:
    """1 − (1 − p)^k, accurate for tiny p."""
    if k <= 0 or p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    return -math.expm1(k * math.log1p(-p))


def expected_solved(queries: list[Query], attempts: list[int]) -> float:
    return sum(solved_probability(q.p_success, k) for q, k in zip(queries, attempts))


def allocate_attempts(queries: list[Query], budget: float) -> Allocation:
    """Attempts per query maximising expected solved queries with Σ attempts·cost ≤ budget."""
    if not queries:
        raise UsageError("no queries to allocate attempts to")
    try:
        budget = float(budget)
    except (TypeError, ValueError):
        raise UsageError(f"budget must be a number, got {budget!r}") from None
    if not math.isfinite(budget) or budget <= 0:
        raise UsageError(f"budget must be a positive finite number, got {budget!r}")
    if budget / min(q.cost for q in queries) > 1e12:
        raise UsageError(f"budget {budget:g} buys over 1e12 attempts; express budget and costs in a coarser unit")
    costs = [q.cost for q in queries]
    equal = max(costs) == min(costs)
    if not equal and _dp_feasible(costs, budget):
        attempts, lam = _exact_dp(queries, budget)
        method, optimal = "exact-dp", True
    else:
        attempts, lam = _greedy(queries, budget)
        method, optimal = ("greedy", True) if equal else ("greedy-ratio", False)
    uniform = _uniform(queries, budget)
    # Every value is computed here with its type; construct without re-validating (200k-query files).
    rows = [QueryAllocation.model_construct(id=q.id, p_success=q.p_success, cost=q.cost, attempts=int(k),
                                            p_solved=solved_probability(q.p_success, k), uniform_attempts=int(u),
                                            uniform_p_solved=solved_probability(q.p_success, u))
            for q, k, u in zip(queries, attempts, uniform)]
    e_opt = sum(r.p_solved for r in rows)
    e_uni = sum(r.uniform_p_solved for r in rows)
    return Allocation(
        method=method, optimal=optimal, budget=budget,
        spent=sum(k * q.cost for q, k in zip(queries, attempts)),
        expected_solved=e_opt, uniform_expected_solved=e_uni, gain_vs_uniform=e_opt - e_uni,
        n_queries=len(queries), total_attempts=sum(attempts), marginal_gain_per_cost=lam, queries=rows,
        assumptions={"attempts_independent": True, "verifier": "perfect (a correct attempt is always recognised)",
                     "success_model": "1 - (1 - p)^k per query (pass@k with a perfect verifier)",
                     "caveat": INDEPENDENCE_CAVEAT,
                     "uniform_baseline": "equal attempts per query in file order, then one more each while budget lasts"},
    )


def _greedy(queries: list[Query], budget: float) -> tuple[list[int], float]:
    """Largest marginal gain per cost first; skips attempts that no longer fit the budget."""
    n = len(queries)
    attempts = [0] * n
    heap = [(-q.p_success / q.cost, i) for i, q in enumerate(queries) if q.p_success > 0]
    heapq.heapify(heap)
    left = budget
    lam = 0.0
    handed = 0
    slack = 4e-16 * budget  # float resolution of the budget; never lets a whole attempt through
    cheapest = min((q.cost for q in queries), default=0.0)
    while heap:
        if cheapest > left + slack + 1e-9 * cheapest:
            break  # not even the cheapest query can afford another attempt
        neg_ratio, i = heapq.heappop(heap)
        q = queries[i]
        if q.cost > left + slack + 1e-9 * q.cost:
            continue  # this query can no longer afford an attempt; cheaper ones may
        gain = -neg_ratio * q.cost
        if gain <= NEGLIGIBLE_GAIN:
            break
        attempts[i] += 1
        left -= q.cost
        lam = -neg_ratio
        handed += 1
        if handed > MAX_ATTEMPTS_HANDED_OUT:
            raise UsageError(f"budget {budget:g} buys more than {MAX_ATTEMPTS_HANDED_OUT:,} useful attempts; "
                             "use a coarser cost unit (e.g. cost per 1000 attempts)")
        next_gain = gain * (1.0 - q.p_success)
        if next_gain > NEGLIGIBLE_GAIN:
            heapq.heappush(heap, (-next_gain / q.cost, i))
    return attempts, lam


def _dp_feasible(costs: list[float], budget: float) -> bool:
    if any(abs(c - round(c)) > 1e-9 for c in costs):
        return False
    b = int(math.floor(budget + 1e-9))
    work = sum((b + 1) * (b // int(round(c)) + 1) for c in costs)
    return work <= DP_MAX_WORK


def _exact_dp(queries: list[Query], budget: float) -> tuple[list[int], float]:
    """Multiple-choice knapsack over integer costs: exact for unequal costs."""
    import numpy as np

    b_max = int(math.floor(budget + 1e-9))
    best = np.zeros(b_max + 1)
    choices = []
    for q in queries:
        c = int(round(q.cost))
        k_max = b_max // c
        new = best.copy()
        pick = np.zeros(b_max + 1, dtype=np.int64)
        for k in range(1, k_max + 1):
            cand = np.full(b_max + 1, -np.inf)
            cand[k * c:] = best[: b_max + 1 - k * c] + solved_probability(q.p_success, k)
            better = cand > new + 1e-15
            new = np.where(better, cand, new)
            pick = np.where(better, k, pick)
        choices.append(pick)
        best = new
    attempts = [0] * len(queries)
    b = b_max
    for i in range(len(queries) - 1, -1, -1):
        k = int(choices[i][b])
        attempts[i] = k
        b -= k * int(round(queries[i].cost))
    lam = min((q.p_success * (1 - q.p_success) ** (k - 1) / q.cost for q, k in zip(queries, attempts) if k > 0),
              default=0.0)
    return attempts, lam


def _uniform(queries: list[Query], budget: float) -> list[int]:
    total = sum(q.cost for q in queries)
    k = int(math.floor(budget / total + 1e-12))
    left = budget - k * total
    out = [k] * len(queries)
    for i, q in enumerate(queries):
        if q.cost <= left + 4e-16 * budget + 1e-9 * q.cost:
            out[i] += 1
            left -= q.cost
    return out
