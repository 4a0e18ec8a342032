"""A plan as a SkyPilot task (training: `sky jobs launch`) or service (serving: `sky serve up`).

Written for SkyPilot >= 0.10, which names where to run with `infra: cloud/region`; managed jobs
recover from spot preemption by themselves, and `job_recovery` adds restarts on user errors.
A multi-node plan on a fast fabric asks for it with `resources.network_tier: best` where the cloud
supports it (data/network.json), and carries the NCCL settings for that fabric.
"""
from __future__ import annotations

import re
from typing import Any

from gpuplan.export.common import (
    SERVE_PORT, Context, ExportResult, clean_region, data_map, dump_yaml, fast_fabric, header, launch_env, model_id,
    network_notes, optional_secret_flags, serve_command, serve_layout, serve_setup, train_launch,
    unsupported_provider,
)

# Clouds whose instance type names in the catalog are the provider's own, so pinning them is safe.
_NATIVE_INSTANCE_TYPES = frozenset({"aws", "gcp", "azure", "oci"})
READINESS_DELAY_S = 1200  # weights download + engine warm-up of a large model


def cloud_for(provider: str) -> str | None:
    m = data_map("skypilot")
    if provider in m.get("kubernetes_providers", {}):
        return "kubernetes"
    return m["clouds"].get(provider)


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
    notes: list[str] = []
    res: dict[str, Any] = {}
    if ctx.options.infra:
        infra = ctx.options.infra
        res["infra"] = "k8s" + infra[len("kubernetes"):] if infra.startswith("kubernetes") else infra
        notes.append(f"runs on your own {res['infra']} ({p.provider_name} machines), not on a SkyPilot cloud")
        return res, notes
    cloud = cloud_for(p.provider)
    if cloud is None:
        raise unsupported_provider(ctx, "skypilot", "rent the nodes and pass --infra ssh/<node-pool> or "
                                                    "--infra k8s/<context> to run SkyPilot on them")
    if cloud == "kubernetes":
        res["infra"] = "k8s"
        notes.append(data_map("skypilot")["kubernetes_providers"][p.provider])
        return res, notes
    region = clean_region(p.region)
    res["infra"] = f"{cloud}/{region}" if region else cloud
    if not region and p.region:
        notes.append(f"plan region {p.region!r} is not one SkyPilot region; any region of {cloud} may be used")
    if p.provider in _NATIVE_INSTANCE_TYPES and re.fullmatch(r"[A-Za-z0-9._-]+", p.instance_type):
        res["instance_type"] = p.instance_type
    return res, notes


def _network_tier(ctx: Context, res: dict[str, Any], notes: list[str]) -> None:
    """`network_tier: best` for a multi-node plan on a fast fabric, where the cloud can give it."""
    f = fast_fabric(ctx)
    if f is None:
        return
    m = data_map("network")["skypilot"]
    cloud = res.get("infra", "").split("/")[0]
    cloud = "kubernetes" if cloud == "k8s" else cloud
    if cloud in m["network_tier_clouds"]:
        res["network_tier"] = "best"
        notes.append(f"network_tier: best asks {cloud} for the {f} fabric the plan assumed")
    else:
        hint = m["notes"].get(ctx.plan.provider) or (
            f"SkyPilot cannot request a {f} fabric on {cloud or 'this infra'}: check that the nodes share it "
            "(NCCL logs name the transport) or export k8s for a cluster that has it")
        ctx.warn(hint)


def render(ctx: Context) -> ExportResult:
    return _render_serve(ctx) if ctx.plan.workload == "serve" else _render_train(ctx)


def _base_resources(ctx: Context, count: int) -> tuple[dict[str, Any], list[str]]:
    res, notes = _placement(ctx)
    cloud = res.get("infra", "").split("/")[0] or None
    cloud = "kubernetes" if cloud == "k8s" else cloud
    res["accelerators"] = f"{accelerator_name(ctx, cloud)}:{count}"
    if ctx.plan.offer.preemptible:
        res["use_spot"] = True
    if ctx.options.image:
        res["image_id"] = f"docker:{ctx.options.image}"
    return res, notes


def _launch_line(verb: str, name: str) -> str:
    return f"{verb} -n {name} {optional_secret_flags('--secret')} <this file>"


def _render_train(ctx: Context) -> ExportResult:
    p = ctx.plan
    res, notes = _base_resources(ctx, ctx.gpus_per_node)
    _network_tier(ctx, res, notes)
    pinned_region = "/" in res.get("infra", "") and not ctx.options.infra
    res["job_recovery"] = {
        # Pinned to the planned region: retry there; otherwise chase capacity to the next region.
        "strategy": "FAILOVER" if pinned_region else "EAGER_NEXT_REGION",
        "max_restarts_on_errors": ctx.options.max_restarts,
    }
    launch = train_launch(ctx, node_rank="$SKYPILOT_NODE_RANK", master_addr="$MASTER_ADDR",
                          nnodes="$SKYPILOT_NUM_NODES", nproc="$SKYPILOT_NUM_GPUS_PER_NODE")
    if "image_id" not in res and launch.image and (launch.kind == "megatron" or ctx.vendor != "nvidia"):
        # Megatron needs TransformerEngine/apex (NGC image); AMD and Gaudi need their vendor's PyTorch build.
        res["image_id"] = f"docker:{launch.image}"
    cloud = res.get("infra", "").split("/")[0]
    store = data_map("skypilot")["checkpoint_store"].get(cloud, data_map("skypilot")["default_checkpoint_store"])
    envs = launch_env(ctx, launch)
    run_lines = ["set -euo pipefail"]
    if p.nodes > 1:
        run_lines.append('MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)')
    run_lines += launch.run
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
        "setup": "set -e\n" + "\n".join(launch.setup) + "\n",
        "run": "\n".join(run_lines) + "\n",
    }
    notes += launch.notes + network_notes(ctx)
    notes.append(f"checkpoints go to bucket {ctx.name}-checkpoints ({store}) mounted at {ctx.options.checkpoint_dir}; "
                 f"save every {envs.get('CHECKPOINT_INTERVAL_MIN', '?')} min and resume from the latest on restart")
    if p.offer.preemptible:
        notes.append("spot: managed jobs relaunch preempted nodes and rerun `run`, which must resume from the checkpoint")
    notes.append("HF_TOKEN / WANDB_API_KEY are passed with --secret only when set in your shell")
    cmd = _launch_line("sky jobs launch", ctx.name)
    return ExportResult("skypilot", header(ctx, "SkyPilot task", cmd, notes) + dump_yaml(doc), list(ctx.warnings),
                        cmd)


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
                                    "ENGINES_PER_NODE": str(per_node)}}
    if not ctx.options.image:
        image, setup = serve_setup(ctx, engine)
        if image and not setup:
            res["image_id"] = f"docker:{image}"  # ROCm / Gaudi build of the engine; the pip wheel is CUDA-only
        if setup:
            doc["setup"] = "\n".join(setup) + "\n"
            from gpuplan.export.common import default_image

            alt = default_image(ctx, engine)
            if alt:
                notes.append(f"or run in the engine's image: resources.image_id: docker:{alt}")
    doc["run"] = command + "\n"
    notes.append(f"{nodes} replica(s), each one {p.instance_type} node running {per_node} x TP{tp} engine(s)")
    notes.append("HF_TOKEN is passed with --secret only when set in your shell (gated models need it)")
    cmd = _launch_line("sky serve up", ctx.name)
    return ExportResult("skypilot", header(ctx, "SkyPilot service", cmd, notes) + dump_yaml(doc),
                        list(ctx.warnings), cmd)


__all__ = ["render", "cloud_for", "accelerator_name"]
