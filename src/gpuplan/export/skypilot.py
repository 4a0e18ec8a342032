"""A plan as a SkyPilot task (training: `sky jobs launch`) or service (serving: `sky serve up`).

Written for SkyPilot >= 0.10, which names where to run with `infra: cloud/region`; managed jobs
recover from spot preemption by themselves, and `job_recovery` adds restarts on user errors.
"""
from __future__ import annotations

import re
from typing import Any

from gpuplan.export.common import (
    SECRET_NAMES, SERVE_PORT, Context, ExportResult, clean_region, data_map, default_image, dump_yaml, header,
    model_id, serve_command, serve_layout, torchrun_command, train_env,
)

# Clouds whose instance type names in the catalog are the provider's own, so pinning them is safe.
_NATIVE_INSTANCE_TYPES = frozenset({"aws", "gcp", "azure", "oci"})
READINESS_DELAY_S = 1200  # weights download + engine warm-up of a large model


def cloud_for(provider: str) -> str | None:
    return data_map("skypilot")["clouds"].get(provider)


def accelerator_name(ctx: Context, cloud: str | None) -> str:
    """SkyPilot's catalog name for the plan's GPU on that cloud (it differs per cloud for a few)."""
    m = data_map("skypilot")
    gpu = ctx.plan.gpu
    name = (m["accelerators_by_cloud"].get(cloud or "", {}).get(gpu) or m["accelerators"].get(gpu))
    known = data_map("skypilot_accelerators")["accelerators"]
    if name is None:
        ctx.warn(f"SkyPilot's catalog has no name for {gpu}; the file asks for {gpu!r}, which only a "
                 "Kubernetes or SSH pool labelled with that name can satisfy")
        return gpu
    if cloud and cloud in ("aws", "gcp", "azure", "oci", "lambda", "runpod", "vast", "nebius", "paperspace", "cudo",
                           "fluidstack", "hyperbolic", "ibm", "do") and cloud not in known.get(name, []):
        ctx.warn(f"SkyPilot's catalog does not list {name} on {cloud}; `sky jobs launch` may find no offer")
    return name


def _placement(ctx: Context) -> tuple[dict[str, Any], list[str]]:
    """The resources keys that say where to run, and the notes for the header."""
    p = ctx.plan
    cloud = cloud_for(p.provider)
    notes: list[str] = []
    res: dict[str, Any] = {}
    if cloud is None:
        hint = data_map("skypilot")["cloud_notes"].get(p.provider, "use a Kubernetes cluster or SSH node pool there")
        msg = (f"SkyPilot does not support provider {p.provider!r} ({p.provider_name}); resources are left "
               f"cloud-agnostic. {hint}")
        ctx.warn(msg)
        return res, notes
    region = clean_region(p.region)
    res["infra"] = f"{cloud}/{region}" if region else cloud
    if not region and p.region:
        notes.append(f"plan region {p.region!r} is not one SkyPilot region; any region of {cloud} may be used")
    if p.provider in _NATIVE_INSTANCE_TYPES and re.fullmatch(r"[A-Za-z0-9._-]+", p.instance_type):
        res["instance_type"] = p.instance_type
    return res, notes


def render(ctx: Context) -> ExportResult:
    return _render_serve(ctx) if ctx.plan.workload == "serve" else _render_train(ctx)


def _base_resources(ctx: Context, count: int) -> tuple[dict[str, Any], list[str]]:
    res, notes = _placement(ctx)
    cloud = res.get("infra", "").split("/")[0] or None
    res["accelerators"] = f"{accelerator_name(ctx, cloud)}:{count}"
    if ctx.plan.offer.preemptible:
        res["use_spot"] = True
    if ctx.options.image:
        res["image_id"] = f"docker:{ctx.options.image}"
    return res, notes


def _secrets() -> dict[str, None]:
    # null = the value is given at launch with --secret NAME; the file never holds it.
    return {k: None for k in SECRET_NAMES}


def _render_train(ctx: Context) -> ExportResult:
    p = ctx.plan
    res, notes = _base_resources(ctx, ctx.gpus_per_node)
    pinned_region = "/" in res.get("infra", "")
    res["job_recovery"] = {
        # Pinned to the planned region: retry there; otherwise chase capacity to the next region.
        "strategy": "FAILOVER" if pinned_region else "EAGER_NEXT_REGION",
        "max_restarts_on_errors": ctx.options.max_restarts,
    }
    cloud = res.get("infra", "").split("/")[0]
    store = data_map("skypilot")["checkpoint_store"].get(cloud, data_map("skypilot")["default_checkpoint_store"])
    envs = train_env(ctx)
    torchrun = torchrun_command(ctx, nnodes="$SKYPILOT_NUM_NODES", nproc="$SKYPILOT_NUM_GPUS_PER_NODE",
                                node_rank="$SKYPILOT_NODE_RANK", master_addr="$MASTER_ADDR")
    run_lines = ["set -euo pipefail"]
    if p.nodes > 1:
        run_lines.append('MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)')
    run_lines.append(torchrun)
    doc: dict[str, Any] = {
        "name": ctx.name,
        "num_nodes": p.nodes,
        "resources": res,
        "workdir": ".",
        "file_mounts": {
            ctx.options.checkpoint_dir: {"name": f"{ctx.name}-checkpoints", "store": store, "mode": "MOUNT_CACHED",
                                         "persistent": True},
        },
        "envs": envs,
        "secrets": _secrets(),
        "setup": "[ -f requirements.txt ] && pip install -r requirements.txt || true\n",
        "run": "\n".join(run_lines) + "\n",
    }
    notes.append(f"checkpoints go to bucket {ctx.name}-checkpoints ({store}) mounted at {ctx.options.checkpoint_dir}; "
                 f"save every {envs.get('CHECKPOINT_INTERVAL_MIN', '?')} min and resume from the latest on restart")
    if p.offer.preemptible:
        notes.append("spot: managed jobs relaunch preempted nodes and rerun `run`, which must resume from the checkpoint")
    launch = f"sky jobs launch -n {ctx.name} --secret HF_TOKEN <this file>"
    return ExportResult("skypilot", header(ctx, "SkyPilot task", launch, notes) + dump_yaml(doc), list(ctx.warnings),
                        launch)


def _render_serve(ctx: Context) -> ExportResult:
    p = ctx.plan
    tp, per_node, nodes = serve_layout(ctx)
    engine, command = serve_command(ctx)
    res, notes = _base_resources(ctx, ctx.gpus_per_node)
    res["ports"] = SERVE_PORT
    service: dict[str, Any] = {
        "readiness_probe": {"path": "/health", "initial_delay_seconds": READINESS_DELAY_S},
    }
    if p.offer.preemptible:
        # Spot replicas: keep the planned count, fall back to on-demand while spot is short.
        service["replica_policy"] = {"min_replicas": nodes, "max_replicas": nodes,
                                     "dynamic_ondemand_fallback": True}
    else:
        service["replicas"] = nodes
    doc: dict[str, Any] = {"name": ctx.name, "service": service, "resources": res,
                           "envs": {"MODEL_ID": model_id(ctx), "ENGINE": engine, "TENSOR_PARALLEL": str(tp),
                                    "ENGINES_PER_NODE": str(per_node)},
                           "secrets": _secrets()}
    if not ctx.options.image:
        pkg = "vllm" if engine == "vllm" else "'sglang[all]'"
        doc["setup"] = f"pip install {pkg}\n"
        image = default_image(ctx, engine)
        if image:
            notes.append(f"or run in the engine's image: resources.image_id: docker:{image}")
    doc["run"] = command + "\n"
    notes.append(f"{nodes} replica(s), each one {p.instance_type} node running {per_node} x TP{tp} engine(s)")
    launch = f"sky serve up -n {ctx.name} --secret HF_TOKEN <this file>"
    return ExportResult("skypilot", header(ctx, "SkyPilot service", launch, notes) + dump_yaml(doc),
                        list(ctx.warnings), launch)


__all__ = ["render", "cloud_for", "accelerator_name"]
