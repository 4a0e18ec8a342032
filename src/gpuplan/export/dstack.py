"""A plan as a dstack run configuration: `type: task` for training, `type: service` for serving.

dstack matches GPUs by gpuhunt's names plus memory (`H100:80GB:8`), so SXM and PCIe parts of one
chip share a name; the backend, region and instance type pins keep the planned part. Runs only use
existing fleets (dstack >= 0.20): a multi-node task gets its own fleet file with `placement: cluster`,
which puts the nodes on one interconnect (EFA on AWS, InfiniBand GPU cluster on Nebius, ...).
"""
from __future__ import annotations

import math
import re
from typing import Any

from gpuplan.export.common import (
    SERVE_PORT, Context, ExportResult, clean_region, data_map, dump_yaml, fast_fabric, header, launch_env, model_id,
    network_notes, optional_secret_flags, serve_command, serve_layout, serve_setup, train_launch,
    unsupported_provider,
)

_NATIVE_INSTANCE_TYPES = frozenset({"aws", "gcp", "azure", "oci"})
PRICE_HEADROOM = 1.2  # max_price guard: the plan's cost assumes this price; refuse much dearer capacity
FLEET_IDLE = "30m"  # instances a run provisioned in the fleet stay this long for a restart, then go


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
    # NAME=value only: a bare NAME is read from the shell at `dstack apply` and fails it when unset, so the
    # secrets are not listed here; the launch line passes each with `-e NAME` only when it is set.
    return [f"{k}={v}" for k, v in env.items()]


def fleet_name(ctx: Context) -> str:
    return f"{ctx.name[:35].rstrip('-')}-fleet"


def _where(ctx: Context, doc: dict[str, Any]) -> list[str]:
    """Backend, region, instance type and price pins (a task's or a fleet's)."""
    p = ctx.plan
    notes: list[str] = []
    backend = backend_for(p.provider)
    doc["backends"] = [backend]
    region = clean_region(p.region)
    if region and backend != "kubernetes":
        doc["regions"] = [region]
    elif p.region and backend != "kubernetes":
        notes.append(f"plan region {p.region!r} is not one {backend} region; any region may be used")
    if p.provider in _NATIVE_INSTANCE_TYPES and re.fullmatch(r"[A-Za-z0-9._-]+", p.instance_type):
        doc["instance_types"] = [p.instance_type]
    doc["spot_policy"] = "spot" if p.offer.preemptible else "on-demand"
    doc["max_price"] = math.ceil(p.offer.price_per_hour_usd * PRICE_HEADROOM * 100) / 100
    notes.append(f"max_price {doc['max_price']} $/h per instance = planned ${p.offer.price_per_hour_usd:g}/h "
                 f"+{PRICE_HEADROOM - 1:.0%}; dearer capacity would break the plan's cost")
    if p.provider in data_map("dstack")["backend_notes"]:
        notes.append(data_map("dstack")["backend_notes"][p.provider])
    return notes


def _placement(ctx: Context, doc: dict[str, Any]) -> list[str]:
    p = ctx.plan
    if ctx.options.fleet:
        doc["fleets"] = [ctx.options.fleet]
        doc["spot_policy"] = "spot" if p.offer.preemptible else "on-demand"
        note = f"runs on your fleet {ctx.options.fleet!r} ({p.provider_name} machines)"
        if p.nodes > 1:
            note += "; a multi-node task needs it to be a cluster (`placement: cluster`, or an SSH fleet on one network)"
        return [note]
    if backend_for(p.provider) is None:
        hint = data_map("dstack")["backend_notes"].get(p.provider, "")
        raise unsupported_provider(ctx, "dstack", "register the rented nodes as an SSH fleet (`type: fleet` with "
                                                  "`ssh_config.hosts`) and pass --fleet <its name>"
                                   + (f" ({hint.split(':')[0]})" if hint else ""))
    return _where(ctx, doc)


def _fleet(ctx: Context) -> tuple[str, str, list[str]]:
    """(file name, text, notes): the cluster fleet a multi-node task runs on."""
    p = ctx.plan
    backend = backend_for(p.provider)
    if backend not in data_map("network")["dstack"]["multinode_backends"]:
        raise unsupported_provider(ctx, "dstack", "register the nodes as an SSH fleet and pass --fleet <its name>",
                                   what=f"run a {p.nodes}-node task on",
                                   reason=f"dstack's {backend} backend has no multi-node support")
    name = fleet_name(ctx)
    doc: dict[str, Any] = {"type": "fleet", "name": name, "nodes": f"0..{p.nodes}", "placement": "cluster",
                           "resources": {"gpu": gpu_spec(ctx, ctx.gpus_per_node)}}
    _where(ctx, doc)
    doc["idle_duration"] = FLEET_IDLE
    f = fast_fabric(ctx)
    notes = [f"placement: cluster puts the {p.nodes} nodes on one interconnect"
             + (f" (the plan assumed {f})" if f else "")]
    text = (f"# dstack fleet for {ctx.name} (plan rank {p.rank}): apply it before the task\n"
            f"# {p.nodes} node(s) on one interconnect, provisioned when the task runs, released {FLEET_IDLE} "
            "after it ends\n" + dump_yaml(doc))
    return f"{name}.dstack.yml", text, notes


def _launch(files: dict[str, str]) -> str:
    fleet = "".join(f"dstack apply -f {n} && " for n in files)
    return f"{fleet}dstack apply -f <this file> {optional_secret_flags('-e')}"


def render(ctx: Context) -> ExportResult:
    return _render_serve(ctx) if ctx.plan.workload == "serve" else _render_train(ctx)


def _render_train(ctx: Context) -> ExportResult:
    p = ctx.plan
    launch = train_launch(ctx, node_rank="$DSTACK_NODE_RANK", master_addr="$DSTACK_MASTER_NODE_IP",
                          nnodes="$DSTACK_NODES_NUM", nproc="$DSTACK_GPUS_PER_NODE")
    env = launch_env(ctx, launch)
    doc: dict[str, Any] = {"type": "task", "name": ctx.name, "nodes": p.nodes}
    image = ctx.options.image or launch.image
    if image:
        doc["image"] = image
    doc["env"] = _env_list(env)
    doc["commands"] = launch.setup + launch.run
    doc["resources"] = {"gpu": gpu_spec(ctx, ctx.gpus_per_node), "shm_size": _shm_size(ctx)}
    notes = _placement(ctx, doc)
    files: dict[str, str] = {}
    if p.nodes > 1 and not ctx.options.fleet:
        fname, ftext, fnotes = _fleet(ctx)
        files[fname] = ftext
        doc["fleets"] = [fleet_name(ctx)]
        notes += fnotes
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
    if p.nodes == 1 and not ctx.options.fleet:
        notes.append("dstack runs use existing fleets: create one for this backend first (`type: fleet`, "
                     "`nodes: 0..1`) unless the project has one")
    else:
        notes.append(f"point CHECKPOINT_DIR={ctx.options.checkpoint_dir} at storage shared by all nodes "
                     "(instance volume on a shared filesystem, or sync to a bucket)")
    notes += launch.notes + network_notes(ctx)
    notes.append(f"checkpoint every {env.get('CHECKPOINT_INTERVAL_MIN', '?')} min; `retry` reruns the commands, "
                 "which must resume from the latest checkpoint")
    notes.append("HF_TOKEN / WANDB_API_KEY are passed with -e only when set in your shell")
    cmd = _launch(files)
    return ExportResult("dstack", header(ctx, "dstack task", cmd, notes) + dump_yaml(doc), list(ctx.warnings),
                        cmd, files)


def _render_serve(ctx: Context) -> ExportResult:
    p = ctx.plan
    tp, per_node, nodes = serve_layout(ctx)
    engine, command = serve_command(ctx)
    model = model_id(ctx)
    doc: dict[str, Any] = {"type": "service", "name": ctx.name}
    image = ctx.options.image or serve_setup(ctx, engine)[0] or data_map("images")["serve"].get(engine, {}).get(
        ctx.vendor)
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
    notes.append("dstack runs use existing fleets: create one for this backend first (`type: fleet`, "
                 f"`nodes: 0..{nodes}`) unless the project has one")
    notes.append("HF_TOKEN is passed with -e only when set in your shell (gated models need it)")
    cmd = _launch({})
    return ExportResult("dstack", header(ctx, "dstack service", cmd, notes) + dump_yaml(doc), list(ctx.warnings),
                        cmd)
