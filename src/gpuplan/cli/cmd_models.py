"""`gpuplan models`: the model presets, one model's shape and counts, and shapes from a size."""
from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from gpuplan.cli.app import app
from gpuplan.models.spec import LINEAR_KIND_LABELS

models_app = typer.Typer(help="Model shapes: presets, config.json files, shapes derived from a size.")
app.add_typer(models_app, name="models")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
CsvOpt = Annotated[bool, typer.Option("--csv", help="Print CSV.")]

LIST_COLUMNS = [
    ("id", "model"), ("params_b", "params B"), ("active_b", "active B"), ("n_layers", "layers"),
    ("hidden_size", "hidden"), ("heads", "heads/kv"), ("attention", "attn"), ("experts", "experts"),
    ("kv_kib_per_token_bf16", "KV KiB/tok bf16"), ("max_seq_len", "context"),
]


def _experts_text(spec: Any) -> str:
    if not spec.is_moe:
        return "-"
    text = f"{spec.n_experts} top-{spec.n_active_experts}"
    if spec.n_shared_experts:
        text += f" +{spec.n_shared_experts} shared"
    return text


def _row(spec: Any) -> dict[str, Any]:
    return {
        "id": spec.name,
        "params_b": round(spec.total_params() / 1e9, 3),
        "active_b": round(spec.active_params() / 1e9, 3),
        "n_layers": spec.n_layers,
        "hidden_size": spec.hidden_size,
        "n_heads": spec.n_heads,
        "n_kv_heads": spec.n_kv_heads,
        "heads": f"{spec.n_heads}/{spec.n_kv_heads}" if spec.attention != "mla" else f"{spec.n_heads}/latent",
        "attention": spec.attention,
        "n_experts": spec.n_experts,
        "n_active_experts": spec.n_active_experts,
        "experts": _experts_text(spec),
        "kv_kib_per_token_bf16": round(spec.kv_bytes_per_token(2.0) / 1024, 2),
        "max_seq_len": spec.max_seq_len,
    }


@models_app.callback(invoke_without_command=True)
def models_root(ctx: typer.Context, as_json: JsonOpt = False, as_csv: CsvOpt = False) -> None:
    """Without a subcommand: list the presets."""
    if ctx.invoked_subcommand is None:
        list_command(as_json=as_json, as_csv=as_csv)


@models_app.command("list")
def list_command(as_json: JsonOpt = False, as_csv: CsvOpt = False) -> None:
    """Every preset: size, shape, attention kind, experts, KV cache per token."""
    from gpuplan.cli.output import emit
    from gpuplan.models import get_preset, preset_ids

    rows = [_row(get_preset(pid)) for pid in preset_ids()]
    columns = LIST_COLUMNS if not as_csv else [(k, k) for k in rows[0]]
    emit(rows, columns, as_json=as_json, as_csv=as_csv, title=f"{len(rows)} model presets",
         caption="gpuplan models show ID for the working; a config.json path works wherever a model name does")


def _details(spec: Any) -> dict[str, Any]:
    total, active = spec.total_params(), spec.active_params()
    counts = {
        "total_params": total,
        "active_params": active,
        "non_embedding_active_params": spec.non_embedding_active_params(),
        "embedding_params": spec.embedding_params(),
        "attention_params_per_layer": spec.attention_params_per_layer(),
        "kv_bytes_per_token_bf16": spec.kv_bytes_per_token(2.0),
        "kv_bytes_per_token_fp8": spec.kv_bytes_per_token(1.0),
    }
    if spec.is_moe:
        counts["expert_params"] = spec.expert_params()
    if spec.n_linear_attention_layers:
        counts["linear_state_mib_per_sequence"] = spec.linear_state_bytes_per_sequence() / 2**20
    if spec.sliding_window or spec.n_local_attention_layers or spec.n_linear_attention_layers:
        # windows cap the KV cache at long context; a hybrid's linear layers hold a fixed state instead
        counts["kv_gib_per_128k_sequence_bf16"] = spec.kv_bytes_per_sequence(131072, 2.0) / 2**30
    if spec.published_params:
        counts["total_vs_published_pct"] = round((total / spec.published_params - 1) * 100, 3)
    if spec.published_active_params:
        counts["active_vs_published_pct"] = round((active / spec.published_active_params - 1) * 100, 3)
    return counts


def _kv_working(spec: Any) -> str:
    if spec.attention == "mla":
        index = (f" + {spec.n_layers} layers x {spec.index_head_dim} indexer key x 1.03 B (fp8 + scale)"
                 if spec.sparse_attention else "")
        return (f"{spec.n_layers} layers x ({spec.kv_lora_rank} latent + {spec.qk_rope_head_dim} rope) x 2 B{index}"
                f" = {spec.kv_bytes_per_token(2.0) / 1024:.1f} KiB")
    text = (f"2 x {spec.n_kv_layers} layers x {spec.n_kv_heads} KV heads x {spec.head_dim} x 2 B"
            f" = {spec.kv_bytes_per_token(2.0) / 1024:.1f} KiB")
    if spec.n_linear_attention_layers:
        kind = LINEAR_KIND_LABELS[spec.linear_attention_kind]
        text += (f"; the other {spec.n_linear_attention_layers} layers (linear attention, {kind}) keep a"
                 f" {spec.linear_state_bytes_per_sequence() / 2**20:.1f} MiB state per sequence instead")
    if spec.n_local_attention_layers:
        text += (f"; {spec.n_local_attention_layers} of {spec.n_layers} layers keep only the last"
                 f" {spec.local_attention_window} tokens")
    elif spec.sliding_window:
        text += f"; every layer keeps only the last {spec.sliding_window} tokens"
    return text


@models_app.command("show")
def show_command(
    model: Annotated[str, typer.Argument(help="Preset id (e.g. llama-3.1-70b) or a config.json path / folder.")],
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """One model's shape, parameter counts and KV cache per token, with the working."""
    from gpuplan.models import resolve_model

    _show(resolve_model(model), as_json, as_csv)


@models_app.command("derive")
def derive_command(
    total: Annotated[str, typer.Argument(help="Total parameters: 7e9, 70B, 1.5T, 350M.")],
    active: Annotated[Optional[str], typer.Option("--active", help="Active parameters per token (MoE), e.g. 37B.")] = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """A plausible shape for a parameter count (Llama-style; MoE when --active is smaller)."""
    from gpuplan.models import model_from_params

    spec = model_from_params(parse_count(total, "TOTAL"), parse_count(active, "--active") if active else None)
    _show(spec, as_json, as_csv)


def parse_count(text: str, what: str) -> float:
    """'70B', '1.5T', '350M', '7e9' -> a number of parameters."""
    from gpuplan.errors import UsageError

    s = text.strip().upper().replace("_", "").replace(",", "")
    scale = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}.get(s[-1:], 1.0)
    if scale != 1.0:
        s = s[:-1]
    try:
        return float(s) * scale
    except ValueError:
        raise UsageError(f"{what}: not a parameter count: {text!r} (try 7e9, 70B, 1.5T)") from None


def _show(spec: Any, as_json: bool, as_csv: bool = False) -> None:
    from gpuplan.cli.output import print_json, print_table

    counts = _details(spec)
    if as_json or as_csv:
        print_json({"model": spec.model_dump(mode="json"), "counts": counts, "kv_working": _kv_working(spec)}, as_csv)
        return
    rows = [{"field": k, "value": v} for k, v in spec.model_dump().items()
            if v not in (None, "", 0) or k in ("n_experts",)]
    rows += [{"field": k, "value": _fmt_count(k, v)} for k, v in counts.items()]
    rows.append({"field": "kv_working", "value": _kv_working(spec)})
    print_table(rows, [("field", "field"), ("value", "value")], title=spec.name)


def _fmt_count(key: str, v: float) -> str:
    if key.endswith("_pct"):
        return f"{v:+.3f}%"
    if key.startswith("kv_bytes"):
        return f"{v / 1024:,.2f} KiB"
    if key.startswith("kv_gib"):
        return f"{v:,.2f} GiB"
    if key.endswith("_mib_per_sequence"):
        return f"{v:,.1f} MiB"
    return f"{v / 1e9:,.3f} B" if v >= 1e8 else f"{v / 1e6:,.3f} M"
