"""`gpuplan calibrate`: a profile fitted on a few runs of one regime moves that regime's predictions
toward them, leaves every other regime and architecture bit-identical, shows itself in the
assumptions, goes away with `use none`, and bad input is one line with exit 2 and nothing written.

Every test here runs against its own config dir ($GPUPLAN_CONFIG_DIR in tmp_path), so the
developer's real profile is never read or touched and no profile stays active for other tests.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gpuplan.perf import calibration as cal
from gpuplan.perf.inference_estimate import estimate_serving
from gpuplan.perf.training_estimate import estimate_training
from gpuplan.perf.vendor_efficiency import applied_factor
from gpuplan.perf.workload import make_workload

HEADER = ("kind,model,gpu,n_gpus,gpus_per_node,tp,pp,dp,micro_batch,global_batch,seq_len,method,precision,"
          "recompute,zero,lora_rank,step_time_s,engine,input_len,output_len,concurrency,output_tokens_per_s")
# Single-H100 torch.compile runs (perf/data/device-runs-h100.csv, run 1): 11-30 % faster than predicted.
H100_TRAIN_ROWS = [
    "train,llama-3.2-1b,H100-SXM,1,1,1,1,1,8,8,2048,full,bf16,none,0,,0.259574,,,,,",
    "train,llama-3.2-1b,H100-SXM,1,1,1,1,1,4,4,4096,full,bf16,none,0,,0.278432,,,,,",
    "train,llama-3.2-3b,H100-SXM,1,1,1,1,1,2,2,2048,full,bf16,none,0,,0.202055,,,,,",
]
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "calibration-runs.csv"


@pytest.fixture(autouse=True)
def config_dir(tmp_path, monkeypatch):
    """A private config dir; no $GPUPLAN_PROFILE; no --profile left over, before or after."""
    d = tmp_path / "gpuplan-config"
    monkeypatch.setenv(cal.ENV_DIR, str(d))
    monkeypatch.delenv(cal.ENV_PROFILE, raising=False)
    cal.set_cli_profile(None)
    yield d
    cal.set_cli_profile(None)


def _csv(tmp_path: Path, rows: list[str], header: str = HEADER, name: str = "runs.csv") -> Path:
    p = tmp_path / name
    p.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return p


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()} if d.exists() else {}


def _h100_train():
    wl = make_workload(kind="pretrain", method="full", tokens=1e9, seq_len=2048, global_batch=8, precision="bf16")
    return estimate_training("llama-3.2-1b", wl, "H100-SXM", 1, tp=1, pp=1, dp=1, cp=1, micro_batch=8,
                             recompute="none", zero=0, n_runners_up=0)


def _h200_train():
    wl = make_workload(kind="pretrain", method="full", tokens=1e9, seq_len=2048, global_batch=8, precision="bf16")
    return estimate_training("llama-3.2-1b", wl, "H200", 1, tp=1, pp=1, dp=1, cp=1, micro_batch=8,
                             recompute="none", zero=0, n_runners_up=0)


def _mi300x_train():
    wl = make_workload(kind="pretrain", method="full", tokens=1e9, seq_len=2048, global_batch=8, precision="bf16")
    return estimate_training("llama-3.2-1b", wl, "MI300X", 1, tp=1, pp=1, dp=1, cp=1, micro_batch=8,
                             recompute="none", zero=0, n_runners_up=0)


def _h100_serve():
    return estimate_serving("llama-3.1-8b", "H100-SXM", tp=1, precision="fp8", engine="trtllm",
                            input_len=1000, output_len=1000)


def _apes(runs) -> list[float]:
    return [abs(cal.predict(r) / r.speed - 1) * 100 for r in runs]


def _median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def _one_line_error(code: int, out: str, err: str) -> str:
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# ---------------------------------------------------------------- the fit -------------------------
def test_no_profile_changes_nothing_and_is_read_once(config_dir, monkeypatch):
    assert not config_dir.exists()
    bundled = applied_factor("H100-SXM", "training")
    assert cal.active_profile() is None and bundled.basis == "curve" and bundled.factor == 1.0
    calls = []
    real = cal.active_choice
    monkeypatch.setattr(cal, "active_choice", lambda: calls.append(1) or real())
    cal.invalidate()
    for _ in range(200):
        applied_factor("H100-SXM", "training")
        applied_factor("MI300X", "serving")
    assert len(calls) == 1  # cached per process...
    monkeypatch.setenv(cal.ENV_PROFILE, "none")
    applied_factor("H100-SXM", "training")
    assert len(calls) == 2  # ...and re-read when the variable changes
    assert not config_dir.exists()  # nothing written by reading


def test_training_rows_move_training_toward_them_and_nothing_else(cli, tmp_path, config_dir):
    runs_csv = _csv(tmp_path, H100_TRAIN_ROWS)
    runs = cal.read_runs(runs_csv)
    before = {"h100_train": _h100_train(), "h200_train": _h200_train(), "mi300x_train": _mi300x_train(),
              "h100_serve": _h100_serve()}
    ape_before = _apes(runs)

    code, out, err = cli("calibrate", runs_csv, "--name", "h100")
    assert code == 0, err
    assert "h100" in out and (config_dir / "profiles" / "h100.json").is_file()
    assert json.loads((config_dir / "active.json").read_text()) == {"profile": "h100"}

    prof = cal.active_profile()
    assert prof is not None and prof.name == "h100" and set(prof.factors) == {"training"}
    kf = prof.get("training", "Hopper")
    assert kf.rows == 3 and 1.05 < kf.factor < 1.5 and kf.p10 < kf.factor < kf.p90

    # The calibrated regime moves toward the measurements: median error shrinks, bias ~ 0.
    ape_after = _apes(runs)
    assert _median(ape_after) < _median(ape_before)
    bias = math.exp(sum(math.log(r.speed / cal.predict(r)) for r in runs) / len(runs))
    assert bias == pytest.approx(1.0, abs=0.005)
    after_train = _h100_train()
    assert after_train.tokens_per_s > before["h100_train"].tokens_per_s
    assert _h200_train().tokens_per_s > before["h200_train"].tokens_per_s  # the whole architecture

    # Other regimes and architectures: bit-identical.
    assert _h100_serve().model_dump() == before["h100_serve"].model_dump()
    assert _mi300x_train().model_dump() == before["mi300x_train"].model_dump()

    # Before/after, printed for the record (pytest -s).
    print(f"\nH100 training rows: median |error| {_median(ape_before):.1f}% -> {_median(ape_after):.1f}% "
          f"(factor x{kf.factor:.3f}, p10-p90 {kf.p10:.3f}-{kf.p90:.3f}); llama-3.2-1b 1xH100 "
          f"{before['h100_train'].tokens_per_s:,.0f} -> {after_train.tokens_per_s:,.0f} tok/s (measured 63,119)")


def test_serving_rows_move_serving_and_leave_training_alone(cli, tmp_path):
    # A vLLM deployment 20 % slower than predicted, on two shapes.
    rows = []
    for isl, osl in ((1000, 1000), (2048, 256)):
        pred = estimate_serving("llama-3.1-8b", "H100-SXM", tp=1, precision="bf16", engine="vllm",
                                input_len=isl, output_len=osl).output_tokens_per_s
        rows.append(f"serve,llama-3.1-8b,H100-SXM,,,1,,,,,,,bf16,,,,,vllm,{isl},{osl},,{0.8 * pred:.1f}")
    train_before = _h100_train().model_dump()
    serve_before = estimate_serving("llama-3.1-8b", "H100-SXM", tp=1, precision="bf16", engine="vllm",
                                    input_len=1000, output_len=1000)
    code, out, err = cli("calibrate", _csv(tmp_path, rows), "--name", "vllm-h100")
    assert code == 0, err
    serve_after = estimate_serving("llama-3.1-8b", "H100-SXM", tp=1, precision="bf16", engine="vllm",
                                   input_len=1000, output_len=1000)
    assert serve_after.output_tokens_per_s / serve_before.output_tokens_per_s == pytest.approx(0.8, abs=0.02)
    assert serve_after.assumptions["calibration"]["profile"] == "vllm-h100"
    assert _h100_train().model_dump() == train_before


def test_profile_is_shown_in_assumptions_summaries_and_cli(cli, tmp_path):
    assert _h100_train().assumptions["calibration"] is None
    assert _h100_serve().assumptions["calibration"] is None
    code, _, err = cli("calibrate", EXAMPLE, "--name", "example")
    assert code == 0, err
    t = _h100_train().assumptions["calibration"]
    assert t["profile"] == "example" and t["rows"] == 5 and t["architecture"] == "Hopper" and t["factor"] > 1
    s = _h100_serve().assumptions["calibration"]
    assert s["profile"] == "example" and s["rows"] == 4
    assert _mi300x_train().assumptions["calibration"] is None  # no CDNA3 rows: not applied, not shown
    # A user-given efficiency bypasses the architecture factor, so the profile is not claimed.
    wl = make_workload(kind="pretrain", method="full", tokens=1e9, seq_len=2048, global_batch=8, precision="bf16")
    assert estimate_training("llama-3.2-1b", wl, "H100-SXM", 1, efficiency=0.4).assumptions["calibration"] is None

    code, out, err = cli("estimate", "train", "--model", "llama-3.2-1b", "--gpu", "H100", "--gpus", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["assumptions"]["calibration"]["profile"] == "example"

    from gpuplan.catalog.catalog import Catalog
    from gpuplan.planner import plan_serving, plan_training
    from gpuplan.planner.requests import Constraints, ServePlanRequest, TrainPlanRequest

    catalog = Catalog.load(use_store=False)
    only = Constraints(gpus=["H100-SXM"])
    train = plan_training(TrainPlanRequest(model="llama-3.2-1b", tokens=1e10, limit=3, constraints=only), catalog)
    assert train.summary["calibration"]["profile"] == "example"
    assert train.summary["calibration"]["factors"]["Hopper"] > 1
    assert train.plans and train.plans[0].assumptions["vendor_efficiency_factor"] > 1
    serve = plan_serving(ServePlanRequest(model="llama-3.1-8b", requests_per_s=2, limit=3, constraints=only), catalog)
    assert serve.summary["calibration"]["profile"] == "example"

    code, _, _ = cli("calibrate", "use", "none")
    assert code == 0
    again = plan_training(TrainPlanRequest(model="llama-3.2-1b", tokens=1e10, limit=3, constraints=only), catalog)
    assert again.summary["calibration"] is None  # and the planner's search cache is not stale:
    assert again.plans[0].assumptions["vendor_efficiency_factor"] == 1.0
    # the same offer and size is slower without the profile's factor > 1 (the #1 itself may change)
    first = train.plans[0]
    same = [p for p in plan_training(TrainPlanRequest(model="llama-3.2-1b", tokens=1e10, limit=1000,
                                                      constraints=only), catalog).plans
            if (p.provider, p.instance_type, p.gpus, p.pricing) == (first.provider, first.instance_type,
                                                                     first.gpus, first.pricing)]
    assert same and same[0].wall_hours > first.wall_hours * 1.05


def test_use_none_and_profile_none_restore_the_bundled_numbers_exactly(cli, tmp_path, monkeypatch):
    bundled = {"train": _h100_train().model_dump(), "serve": _h100_serve().model_dump(),
               "grid": estimate_training("llama-3.2-1b", make_workload(kind="pretrain", tokens=1e10, seq_len=2048),
                                         "H100-SXM").model_dump(),
               "factor": applied_factor("H100-SXM", "training")}
    assert cli("calibrate", EXAMPLE, "--name", "example")[0] == 0
    calibrated = _h100_train().model_dump()
    assert calibrated != bundled["train"]
    grid_cal = estimate_training("llama-3.2-1b", make_workload(kind="pretrain", tokens=1e10, seq_len=2048), "H100-SXM")
    assert grid_cal.step_time_s < bundled["grid"]["step_time_s"]  # the searched path too

    # --profile none for one command; the next command follows active.json again.
    args = ("estimate", "train", "--model", "llama-3.2-1b", "--gpu", "H100", "--gpus", "1", "--json")
    code, out, _ = cli("--profile", "none", *args)
    assert code == 0 and json.loads(out)["assumptions"]["calibration"] is None
    code, out, _ = cli(*args)
    assert code == 0 and json.loads(out)["assumptions"]["calibration"]["profile"] == "example"

    # $GPUPLAN_PROFILE=none, read again when it changes.
    monkeypatch.setenv(cal.ENV_PROFILE, "none")
    assert _h100_train().model_dump() == bundled["train"]
    monkeypatch.setenv(cal.ENV_PROFILE, "example")
    assert _h100_train().model_dump() == calibrated
    monkeypatch.delenv(cal.ENV_PROFILE)

    code, out, err = cli("calibrate", "use", "none")
    assert code == 0, err
    assert _h100_train().model_dump() == bundled["train"]
    assert _h100_serve().model_dump() == bundled["serve"]
    assert estimate_training("llama-3.2-1b", make_workload(kind="pretrain", tokens=1e10, seq_len=2048),
                             "H100-SXM").model_dump() == bundled["grid"]
    assert applied_factor("H100-SXM", "training") == bundled["factor"]

    # The profile is kept: `use` brings it back, `remove` deletes it and clears active.json.
    assert cli("calibrate", "use", "example")[0] == 0
    assert _h100_train().model_dump() == calibrated
    code, out, _ = cli("calibrate", "list", "--json")
    listed = json.loads(out)
    assert code == 0 and listed["active"] == "example" and listed["profiles"][0]["name"] == "example"
    code, out, _ = cli("calibrate", "remove", "example")
    assert code == 0 and "it was active" in out
    assert _h100_train().model_dump() == bundled["train"]


def test_no_use_keeps_the_current_profile_and_profile_flag_picks_one(cli, tmp_path):
    assert cli("calibrate", _csv(tmp_path, H100_TRAIN_ROWS), "--name", "first")[0] == 0
    first = _h100_train().tokens_per_s
    rows = [H100_TRAIN_ROWS[0].replace("0.259574", "0.40")]  # a slower setup: one row, bundled band kept
    code, out, err = cli("calibrate", _csv(tmp_path, rows, name="slow.csv"), "--no-use")
    assert code == 0, err
    assert cal.active_profile().name == "first" and _h100_train().tokens_per_s == first
    slow = cal.load_profile("slow")  # default name: the CSV's
    assert slow.get("training", "Hopper").p10 is None and slow.get("training", "Hopper").factor < 1
    code, out, _ = cli("--profile", "slow", "estimate", "train", "--model", "llama-3.2-1b", "--gpu", "H100",
                       "--gpus", "1", "--tp", "1", "--pp", "1", "--micro-batch", "8", "--global-batch", "8",
                       "--seq-len", "2048", "--recompute", "none", "--zero", "0", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["assumptions"]["calibration"]["profile"] == "slow"
    assert d["tokens_per_s"] == pytest.approx(8 * 2048 / 0.40, rel=0.01)
    f = applied_factor("H100-SXM", "training")
    assert f.basis == "calibrated" and "first" in f.note  # back to active.json after that command


def test_text_commands_name_the_profile_they_used_on_stderr(cli):
    assert cli("calibrate", EXAMPLE, "--name", "example")[0] == 0
    code, out, err = cli("estimate", "train", "--model", "llama-3.2-1b", "--gpu", "H100", "--gpus", "8",
                         "--tokens", "1e10")
    assert code == 0 and "note: calibration profile 'example' applied (training Hopper x" in err
    code, out, err = cli("estimate", "train", "--model", "llama-3.2-1b", "--gpu", "MI300X", "--gpus", "8",
                         "--tokens", "1e10")
    assert code == 0 and err == ""  # nothing measured on CDNA3: nothing applied, nothing said
    code, out, err = cli("--profile", "none", "estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100")
    assert code == 0 and err == ""


def test_show_prints_the_profile(cli, tmp_path):
    assert cli("calibrate", EXAMPLE, "--name", "example", "--no-use")[0] == 0
    code, out, err = cli("calibrate", "show", "example", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["format"] == cal.FORMAT and set(data["factors"]) == {"training", "serving"}
    hop = data["factors"]["training"]["Hopper"]
    assert hop["median_abs_error_pct_after"] < hop["median_abs_error_pct_before"]
    assert set(hop["by_method"]) == {"full", "lora"} and len(data["rows"]) == 9
    code, out, _ = cli("calibrate", "show", "example")
    assert code == 0 and "Hopper" in out and "x1." in out


# ---------------------------------------------------------------- bad input -----------------------
GOOD = H100_TRAIN_ROWS[0]
BAD_FILES = [
    ("empty", None, "", "empty file"),
    ("header only", None, HEADER + "\n", "no runs"),
    ("no kind column", None, "model,gpu\nllama-3.2-1b,H100\n", "missing column 'kind'"),
    ("missing columns", None, "kind,model,gpu,n_gpus,tp,pp,micro_batch,global_batch\n"
                              "train,llama-3.2-1b,H100,1,1,1,8,8\n", "missing column(s) seq_len, step_time_s"),
    ("serve columns", None, "kind,model,gpu,tp,input_len,output_len\nserve,llama-3.1-8b,H100,1,10,10\n",
     "missing column(s) output_tokens_per_s"),
    ("unknown kind", [GOOD.replace("train,", "finetune,", 1)], None, "kind 'finetune'"),
    ("unknown model", [GOOD.replace("llama-3.2-1b", "llama-9000b")], None, "unknown model 'llama-9000b'"),
    ("unknown GPU", [GOOD.replace("H100-SXM", "H900")], None, "unknown GPU 'H900'"),
    ("zero", [GOOD.replace("0.259574", "0")], None, "step_time_s must be a positive number"),
    ("negative", [GOOD.replace("0.259574", "-0.25")], None, "step_time_s must be a positive number"),
    ("NaN", [GOOD.replace("0.259574", "nan")], None, "step_time_s must be a positive number, got 'nan'"),
    ("inf", [GOOD.replace("0.259574", "inf")], None, "got 'inf'"),
    ("no speed", [GOOD.replace("0.259574", "")], None, "give step_time_s or tokens_per_s"),
    ("fraction", [GOOD.replace(",8,8,2048,", ",8,8.5,2048,")], None, "global_batch must be a whole number"),
    ("layout too big", ["train,llama-3.1-70b,H100-SXM,1,1,1,1,1,1,1,4096,full,bf16,none,0,,20,,,,,"], None,
     "the layout does not fit"),
    ("tp does not divide", [GOOD.replace("H100-SXM,1,1,1,1,1,", "H100-SXM,3,8,2,1,,")], None,
     "does not divide n_gpus 3"),
    ("dp mismatch", [GOOD.replace("H100-SXM,1,1,1,1,1,", "H100-SXM,8,8,2,1,2,")], None, "dp 2 != n_gpus"),
    ("units", [GOOD.replace("0.259574", "0.0026")], None, "check the units"),
    ("serve does not fit", ["serve,llama-3.1-405b,H100-SXM,,,1,,,,,,,bf16,,,,,vllm,1000,1000,,100"], None,
     "does not fit"),
    ("unknown engine", ["serve,llama-3.1-8b,H100-SXM,,,1,,,,,,,bf16,,,,,fastllm,1000,1000,,100"], None,
     "unknown engine 'fastllm'"),
    ("ragged", [GOOD + ",extra,more"], None, "fields, the header has"),
    ("impossible etp", None, "kind,model,gpu,n_gpus,tp,pp,etp,micro_batch,global_batch,seq_len,step_time_s\n"
                             "train,qwen3-30b-a3b,H100-SXM,8,2,1,4,1,64,4096,2.0\n", "etp 4: the experts' tensor"),
    ("batch not divisible", None, "kind,model,gpu,n_gpus,tp,pp,micro_batch,global_batch,seq_len,step_time_s\n"
                                  "train,llama-3.1-70b,H100-SXM,64,8,4,1,3,8192,3.0\n",
     "global_batch 3 is not a multiple of dp x micro_batch = 2"),
    ("interleaving a partial group", None,
     "kind,model,gpu,n_gpus,tp,pp,vp,micro_batch,global_batch,seq_len,step_time_s\n"
     "train,llama-3.1-70b,H100-SXM,64,8,4,5,1,6,8192,3.0\n",
     "vp 5 needs pp > 1 and micro-batches per step (3) in whole groups of pp (4)"),
]


@pytest.mark.parametrize("rows,text,fragment", [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES])
def test_bad_files_are_one_line_exit_2_and_write_nothing(cli, tmp_path, config_dir, rows, text, fragment):
    path = tmp_path / "runs.csv"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    else:
        _csv(tmp_path, [H100_TRAIN_ROWS[1], *rows])
    code, out, err = cli("calibrate", path, "--name", "bad")
    line = _one_line_error(code, out, err)
    assert fragment in line, line
    assert out == "" and not config_dir.exists()


@pytest.mark.parametrize("make", ["missing", "directory", "binary"])
def test_unreadable_inputs(cli, tmp_path, config_dir, make):
    path = tmp_path / "runs.csv"
    if make == "directory":
        path.mkdir()
    elif make == "binary":
        path.write_bytes(b"\xff\xfe\x00kind\x00")
    line = _one_line_error(*cli("calibrate", path))
    assert str(path) in line
    assert not config_dir.exists()


def test_a_bad_refit_leaves_the_stored_profile_and_the_choice_alone(cli, tmp_path, config_dir):
    assert cli("calibrate", _csv(tmp_path, H100_TRAIN_ROWS), "--name", "h100")[0] == 0
    stored = _files(config_dir)
    bad = _csv(tmp_path, [GOOD.replace("0.259574", "nan")], name="bad.csv")
    _one_line_error(*cli("calibrate", bad, "--name", "h100"))
    assert _files(config_dir) == stored
    for args in (("calibrate", "show", "nope"), ("calibrate", "use", "nope"), ("calibrate", "remove", "nope"),
                 ("calibrate", "use", "../etc"), ("calibrate", GOOD), ("--profile", "a/b", "gpus")):
        _one_line_error(*cli(*args))
    assert _files(config_dir) == stored


# ---------------------------------------------------------------- corrupt profiles ----------------
@pytest.mark.parametrize("content", ["{not json", "[]", '{"format": "gpuplan-calibration/1"}',
                                     '{"format": "gpuplan-calibration/1", "factors": {"training": '
                                     '{"Hopper": {"factor": -1, "rows": 1}}}}',
                                     '{"format": "gpuplan-calibration/1", "factors": {"training": '
                                     '{"Hopper": {"factor": NaN, "rows": 1}}}}',
                                     '{"format": "gpuplan-calibration/1", "factors": {"training": '
                                     '{"Hopper": {"factor": 1e308, "rows": 1}}}}'])
def test_a_corrupt_profile_is_one_line_not_a_traceback(cli, config_dir, content):
    (config_dir / "profiles").mkdir(parents=True)
    (config_dir / "profiles" / "broken.json").write_text(content, encoding="utf-8")
    (config_dir / "active.json").write_text('{"profile": "broken"}', encoding="utf-8")
    args = ("estimate", "train", "--model", "llama-3.2-1b", "--gpu", "H100", "--gpus", "1")
    line = _one_line_error(*cli(*args))
    assert "broken" in line and "calibrate use none" in line
    _one_line_error(*cli("calibrate", "show", "broken"))
    _one_line_error(*cli("calibrate", "use", "broken"))
    code, out, err = cli("calibrate", "list")
    assert code == 0 and "unreadable" in out
    code, out, err = cli("--profile", "none", *args)  # one command without it
    assert code == 0, err
    assert cli("calibrate", "use", "none")[0] == 0  # and the way out
    assert cli(*args)[0] == 0
    code, out, _ = cli("calibrate", "remove", "broken")
    assert code == 0 and not (config_dir / "profiles" / "broken.json").exists()


@pytest.mark.parametrize("content", ["{oops", '["x"]', '{"profile": 3}'])
def test_a_corrupt_active_file_is_one_line(cli, config_dir, content):
    config_dir.mkdir(parents=True)
    (config_dir / "active.json").write_text(content, encoding="utf-8")
    line = _one_line_error(*cli("estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100"))
    assert "active.json" in line
    assert cli("calibrate", "use", "none")[0] == 0
    assert cli("estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100")[0] == 0


def test_a_missing_profile_named_by_the_environment_is_one_line(cli, monkeypatch):
    monkeypatch.setenv(cal.ENV_PROFILE, "nowhere")
    line = _one_line_error(*cli("estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100"))
    assert "no calibration profile 'nowhere'" in line


def test_no_calibration_lifts_training_past_the_efficiency_ceiling(cli, tmp_path):
    # A fast single run (the 1B at 1.3x its measured speed) fits a factor near 1.9: 70B estimates must
    # still stay under the efficiency ceiling (without it the 70B reads above it).
    from gpuplan.perf.training_time import ETA_CEILING

    rows = [H100_TRAIN_ROWS[0].replace("0.259574", "0.2")]
    assert cli("calibrate", _csv(tmp_path, rows), "--name", "fast")[0] == 0
    code, out, err = cli("estimate", "train", "--model", "llama-3.1-70b", "--tokens", "1e12", "--gpu", "H100",
                         "--gpus", "64", "--json")
    assert code == 0, err
    assert json.loads(out)["mfu"] <= ETA_CEILING


def test_packed_training_rows_predict_with_their_example_length(cli, tmp_path, config_dir):
    """A run of packed SFT examples (sample_len) is predicted with attention inside each example, so its predicted
    speed is higher than the same row without packing; a sample_len past seq_len is one line, nothing written."""
    header = "kind,model,gpu,n_gpus,tp,pp,micro_batch,global_batch,seq_len,method,precision,step_time_s,sample_len"
    row = "train,llama-3.2-1b,H100-SXM,1,1,1,1,4,8192,lora,bf16,0.5,{}"
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([header, row.format(""), row.format(512)]) + "\n", encoding="utf-8")
    plain, packed = cal.read_runs(path)
    assert packed.args["sample_len"] == 512 and plain.args["sample_len"] is None
    assert cal.predict(packed) > 1.1 * cal.predict(plain)
    path.write_text("\n".join([header, row.format(9000)]) + "\n", encoding="utf-8")
    code, out, err = cli("calibrate", path, "--name", "bad")
    assert "sample_len" in _one_line_error(code, out, err) and not config_dir.exists()


def test_a_pytorch_fp8_run_is_predicted_with_its_stack(cli, tmp_path, config_dir):
    """A `framework` column (megatron | pytorch) reaches the estimator: a torchtitan-style FP8 run is predicted slower
    than the same run on Megatron, so the fitted factor is not spent on the stack's unfused casts; an unknown stack is
    one line, nothing written."""
    header = "kind,model,gpu,n_gpus,tp,pp,micro_batch,global_batch,seq_len,precision,step_time_s,framework"
    row = "train,llama-3.1-8b,H100-SXM,8,1,1,2,16,8192,fp8,2.0,{}"
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([header, row.format(""), row.format("PyTorch")]) + "\n", encoding="utf-8")
    mega, torch = cal.read_runs(path)
    assert mega.args["framework"] == "megatron" and torch.args["framework"] == "pytorch"
    assert cal.predict(torch) < 0.95 * cal.predict(mega)
    path.write_text("\n".join([header, row.format("jax")]) + "\n", encoding="utf-8")
    code, out, err = cli("calibrate", path, "--name", "bad")
    assert "framework 'jax'" in _one_line_error(code, out, err) and not config_dir.exists()


def test_a_fixed_length_benchmark_row_is_predicted_with_grouped_arrivals(cli, tmp_path, config_dir):
    """`vllm bench serve`'s random data set at range ratio 0 keeps its clients in groups: a row that says so
    (fixed_lengths 1) is predicted as the estimator times such a loop, slower than with one-at-a-time arrivals;
    without its concurrency it is one line, nothing written."""
    header = "kind,model,gpu,tp,input_len,output_len,concurrency,output_tokens_per_s,fixed_lengths"
    row = "serve,qwen3-8b,MI300X,1,1024,1024,{},2701,{}"
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([header, row.format(32, ""), row.format(32, 1)]) + "\n", encoding="utf-8")
    spread, grouped = cal.read_runs(path)
    assert grouped.args["fixed_lengths"] and not spread.args["fixed_lengths"]
    assert cal.predict(grouped) < cal.predict(spread)
    path.write_text("\n".join([header, row.format("", 1)]) + "\n", encoding="utf-8")
    code, out, err = cli("calibrate", path, "--name", "bad")
    assert "fixed_lengths describes closed-loop clients" in _one_line_error(code, out, err)
    assert not config_dir.exists()
