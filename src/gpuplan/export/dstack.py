"""A plan as a dstack run configuration: `type: task` for training, `type: service` for serving.

dstack matches GPUs by gpuhunt's names plus memory (`H100:80GB:8`), so SXM and PCIe parts of one
chip share a name; the backend, region and instance type pins keep the planned part.
"""
from __future__ import annotations

import math
import re
from typing import Any

from gpuplan.export.common import (
    SECRET_NAMES, SERVE_PORT, Context, ExportResult, clean_region, data_map, default_image, dump_yaml, header,
    model_id, serve_command, serve_layout, torchrun_command, train_env,
)

_NATIVE_INSTANCE_TYPES = frozenset({"aws", "gcp", "azure", "oci"})
PRICE_HEADROOM = 1.2  # max_price guard: the plan's cost assumes this price; refuse much dearer capacity


def backend_for(provider: str) -> str | None:
    return data_map("dstack")["backends"].get(provider)


def gpu_spec(ctx: Context, count: int) -> str:
    hit = data_map("dstack")["gpus"].get(ctx.plan.gpu)
    if hit is None:
        ctx.warn(f"dstack (gpuhunt) has no name for {ctx.plan.gpu}; the file asks for {ctx.plan.gpu!r}")
        return f"{ctx.plan.gpu}:{count}"
    name, memory = hit
    return f"{name}:{memory}:{count}"


def _shm_size(ctx: Context) -> str:
    return "16GB" if ctx.gpus_per_node >= 4 else "8GB"


def _env_list(env: dict[str, str]) -> list[str]:
    # NAME=value for plain settings; a bare NAME is taken from the launching shell (dstack's way for secrets).
    return [f"{k}={v}" for k, v in env.items()] + list(SECRET_NAMES)


def _placement(ctx: Context, doc: dict[str, Any]) -> list[str]:
    p = ctx.plan
    notes: list[str] = []
    backend = backend_for(p.provider)
    if backend is None:
        hint = data_map("dstack")["backend_notes"].get(
            p.provider, "register the machines as an SSH fleet (`type: fleet` with `ssh_config.hosts`)")
        ctx.warn(f"dstack has no backend for provider {p.provider!r} ({p.provider_name}); no backend is pinned. {hint}")
    else:
        doc["backends"] = [backend]
        region = clean_region(p.region)
        if region:
            doc["regions"] = [region]
        elif p.region:
            notes.append(f"plan region {p.region!r} is not one {backend} region; any region may be used")
        if p.provider in _NATIVE_INSTANCE_TYPES and re.fullmatch(r"[A-Za-z0-9._-]+", p.instance_type):
            doc["instance_types"] = [p.instance_type]
    doc["spot_policy"] = "spot" if p.offer.preemptible else "on-demand"
    doc["max_price"] = math.ceil(p.offer.price_per_hour_usd * PRICE_HEADROOM * 100) / 100
    notes.append(f"max_price {doc['max_price']} $/h per instance = planned ${p.offer.price_per_hour_usd:g}/h "
                 f"+{PRICE_HEADROOM - 1:.0%}; dearer capacity would break the plan's cost")
    return notes


def render(ctx: Context) -> ExportResult:
    return _render_serve(ctx) if ctx.plan.workload == "serve" else _render_train(ctx)


def _render_train(ctx: Context) -> ExportResult:
    p = ctx.plan
    env = train_env(ctx)
    torchrun = torchrun_command(ctx, nnodes="$DSTACK_NODES_NUM", nproc="$DSTACK_GPUS_PER_NODE",
                                node_rank="$DSTACK_NODE_RANK", master_addr="$DSTACK_MASTER_NODE_IP")
    doc: dict[str, Any] = {"type": "task", "name": ctx.name, "nodes": p.nodes}
    image = ctx.options.image or default_image(ctx)
    if image:
        doc["image"] = image
    doc["env"] = _env_list(env)
    doc["commands"] = ["[ -f requirements.txt ] && pip install -r requirements.txt || true", torchrun]
    doc["resources"] = {"gpu": gpu_spec(ctx, ctx.gpus_per_node), "shm_size": _shm_size(ctx)}
    notes = _placement(ctx, doc)
    retry_h = max(1, math.ceil(max(p.wall_p90_hours, p.wall_hours)))
    doc["retry"] = {"on_events": ["no-capacity", "interruption", "error"], "duration": f"{retry_h}h"}
    backend = backend_for(p.provider)
    m = data_map("dstack")
    if p.nodes == 1 and backend in m["network_volume_backends"]:
        doc["volumes"] = [{"name": f"{ctx.name}-ckpt", "path": ctx.options.checkpoint_dir}]
        notes.append(f"create the network volume {ctx.name}-ckpt first (`type: volume`, same backend and region)")
    elif p.nodes == 1 and (backend is None or backend in m["instance_volume_backends"]):
        doc["volumes"] = [{"instance_path": f"/mnt/{ctx.name}-ckpt", "path": ctx.options.checkpoint_dir}]
        notes.append("checkpoints live on the instance's disk: they survive a restart on the same machine, "
                     "not its loss; copy them to a bucket for safety")
    elif p.nodes == 1:
        notes.append(f"{backend} has no dstack volumes: have the script sync CHECKPOINT_DIR to a bucket")
    else:
        notes.append(f"multi-node tasks need a cluster fleet (`type: fleet`, `nodes: {p.nodes}`, `placement: cluster`); "
                     f"point CHECKPOINT_DIR={ctx.options.checkpoint_dir} at storage shared by all nodes "
                     "(instance volume on a shared filesystem, or sync to a bucket)")
    notes.append(f"checkpoint every {env.get('CHECKPOINT_INTERVAL_MIN', '?')} min; `retry` reruns the commands, "
                 "which must resume from the latest checkpoint")
    launch = "HF_TOKEN=... dstack apply -f <this file>"
    return ExportResult("dstack", header(ctx, "dstack task", launch, notes) + dump_yaml(doc), list(ctx.warnings),
                        launch)


def _render_serve(ctx: Context) -> ExportResult:
    p = ctx.plan
    tp, per_node, nodes = serve_layout(ctx)
    engine, command = serve_command(ctx)
    model = model_id(ctx)
    doc: dict[str, Any] = {"type": "service", "name": ctx.name}
    image = ctx.options.image or default_image(ctx, engine)
    if image:
        doc["image"] = image
    doc["env"] = _env_list({"MODEL_ID": model, "ENGINE": engine, "TENSOR_PARALLEL": str(tp),
                            "ENGINES_PER_NODE": str(per_node)})
    doc["commands"] = [command]
    doc["port"] = SERVE_PORT
    doc["model"] = model
    doc["replicas"] = nodes
    doc["probes"] = [{"type": "http", "url": "/health"}]
    doc["resources"] = {"gpu": gpu_spec(ctx, ctx.gpus_per_node), "shm_size": _shm_size(ctx)}
    notes = _placement(ctx, doc)
    if p.offer.preemptible:
        doc["retry"] = {"on_events": ["no-capacity", "interruption"], "duration": "1h"}
    notes.append(f"{nodes} replica(s), each one {p.instance_type} node running {per_node} x TP{tp} engine(s)")
    launch = "HF_TOKEN=... dstack apply -f <this file>"
    return ExportResult("dstack", header(ctx, "dstack service", launch, notes) + dump_yaml(doc), list(ctx.warnings),
                        launch)
