"""`gpuplan plan ...` as a user runs it: JSON contract, table, and one-line errors on bad input."""
from __future__ import annotations

import json

import pytest

REQUIRED_PLAN_FIELDS = {"provider", "gpu", "nodes", "gpus", "pricing", "wall_hours", "cost_usd", "cost_p90_usd",
                        "wall_p90_hours", "checkpoint_interval_min", "layout", "offer"}


def test_plan_train_json_contract(cli):
    code, out, err = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--limit", "30", "--json")
    assert code == 0, err
    data = json.loads(out)
    plans = data["plans"]
    assert len(plans) == 30
    for p in plans:
        assert REQUIRED_PLAN_FIELDS <= p.keys()
        assert {"provider", "gpu", "price_per_hour_usd", "as_of", "source", "confidence"} <= p["offer"].keys()
        if p["pricing"] in ("spot", "interruptible"):
            assert p["checkpoint_interval_min"] > 0
    assert data["pareto_ranks"] and data["why"]
    assert data["summary"]["providers_ranked"] >= 7
    assert not any(p["stale"] for p in plans)  # stale prices are ranked only with --max-price-age-days


def test_plan_train_table_names_the_winner_and_why(cli):
    code, out, err = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e11", "--limit", "5")
    assert code == 0, err
    assert "train plans for llama-3.1-8b" in out
    assert "#1 " in out and "Pareto" in out


def test_plan_train_constraints_from_the_command_line(cli):
    code, out, err = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e11", "--deadline", "3d",
                         "--exclude", "tensorwave,cudo", "--no-spot", "--json")
    assert code == 0, err
    plans = json.loads(out)["plans"]
    assert plans
    for p in plans:
        assert p["wall_hours"] <= 72
        assert p["provider"] not in ("tensorwave", "cudo")
        assert p["pricing"] not in ("spot", "interruptible")


def test_plan_serve_and_project_json(cli):
    code, out, err = cli("plan", "serve", "--model", "llama-3.1-8b", "--requests-per-s", "3", "--users", "eu,us-east",
                         "--json")
    assert code == 0, err
    plans = json.loads(out)["plans"]
    assert plans and all(p["network_rtt_ms"] is not None for p in plans if p["assumptions"]["region_geography"])
    code, out, err = cli("plan", "project", "--model", "llama-3.1-8b", "--tokens", "1e11", "--requests-per-s", "2",
                         "--json")
    assert code == 0, err
    project = json.loads(out)
    assert project["total_usd"] > 0 and project["train"]["plans"] and project["serve"]["plans"]


@pytest.mark.parametrize("args, fragment", [
    (["plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--budget", "-5"], "--budget"),
    (["plan", "train", "--model", "llama-3.1-8b", "--tokens", "nan"], "--tokens"),
    (["plan", "train", "--model", "llama-3.1-8b", "--tokens", "0"], "--tokens"),
    (["plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e30"], "tokens"),
    (["plan", "train", "--model", "llama-3.1-8b"], "--tokens"),
    (["plan", "train", "--model", "llama-9-8b", "--tokens", "1e12"], "llama-9-8b"),
    (["plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--gpu", "B900"], "B900"),
    (["plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--deadline", "soon"], "--deadline"),
    (["plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--kinds", "cloudy"], "kind"),
    (["plan", "serve", "--model", "llama-3.1-8b"], "requests"),
    (["plan", "serve", "--model", "llama-3.1-8b", "--requests-per-s", "-1"], "--requests-per-s"),
    (["plan", "serve", "--model", "llama-3.1-8b", "--requests-per-s", "1", "--users", "mars"], "mars"),
])
def test_bad_input_is_one_line_and_nonzero(cli, args, fragment):
    code, out, err = cli(*args)
    assert code != 0
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert fragment.lower() in lines[0].lower()
    assert "Traceback" not in err


def test_impossible_budget_exits_nonzero_with_reasons(cli):
    code, out, err = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--budget", "1")
    assert code != 0
    assert "budget" in (out + err).lower()


def test_tco_plans_the_final_run_when_given_a_model(cli):
    code, out, err = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e11", "--limit", "1", "--json")
    best = json.loads(out)["plans"][0]
    code, out, err = cli("tco", "--model", "llama-3.1-8b", "--tokens", "1e11", "--json")
    assert code == 0, err
    tco = json.loads(out)
    final = next(line for line in tco["lines"] if line["key"] == "final_run")
    assert final["usd"] == pytest.approx(best["cost_usd"])
    assert tco["final_run_plan"]["provider"] == best["provider"]
    assert tco["energy_kwh"] > 0
    code, out, err = cli("tco", "--model", "llama-3.1-8b", "--tokens", "1e11", "--final-run-usd", "5")
    assert code == 2 and "not both" in err


def test_region_cells_name_two_places_and_count_the_rest(cli):
    """An offer listed in eleven regions must not widen the table past the other columns."""
    from gpuplan.display import region_text

    assert region_text("a/b/c/d", more=2) == "a/b +4"
    assert region_text("eu-north1") == "eu-north1"
    assert region_text("", more=1) == "? +1"
    # a marketplace's places are comma lists themselves: spaced apart, or they read as one run-on place
    assert region_text("CA, NA/Denmark, DK, EU/South Korea, KR, AS") == "CA, NA / Denmark, DK, EU +1"
    from gpuplan.display import region_full

    assert region_full("CA, NA/Denmark, DK, EU/South Korea, KR, AS") == "CA, NA / Denmark, DK, EU / South Korea, KR, AS"
    assert region_full("us-east-1/us-west-2") == "us-east-1/us-west-2" and region_full(None) == ""
    code, out, err = cli("plan", "serve", "--model", "gpt-oss-120b", "--tokens-per-month", "10B", "--providers",
                         "lambda", "--limit", "3")
    assert code == 0, err
    assert "asia-northeast-1/asia-south-1 +" in out
    assert "us-midwest-1" not in out.split("#1")[0]  # the table lists two places, not all eleven


def test_a_snapshot_date_shows_as_a_lower_bound_on_the_price_age(cli):
    """SkyPilot catalog rows carry their snapshot's date ('nominal'), not when the price was seen: at least that old."""
    import json

    code, out, err = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--budget", "60k", "--json")
    assert code == 0, err
    from gpuplan.display import plan_row

    plans = json.loads(out)["plans"]
    nominal = [p for p in plans if p["offer"]["as_of_note"].startswith("nominal")]
    observed = [p for p in plans if p["offer"]["as_of_note"].startswith("observed")]
    assert nominal and all(plan_row(p, False)["age"].startswith(">=") for p in nominal)
    assert all(not plan_row(p, False)["age"].startswith(">=") for p in observed)
