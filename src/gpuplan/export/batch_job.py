"""Run a batch fleet: SkyPilot managed jobs or Kubernetes Indexed Jobs, plus the work-queue command.

The work queue is a directory of input shards (JSONL, one item per line) on shared storage
(an object-store bucket mounted at /data, or a ReadWriteMany volume): worker `w` of a fleet group
takes shards `start + w`, `start + w + workers`, ... of its group's range and skips any shard whose
output already exists. A lost host is relaunched by the orchestrator (managed-job recovery, the
Job controller re-creating its index) and resumes where its outputs stop: the items in flight
are the only ones redone. Each group's range is its share of the items in the plan.
"""
from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field

from gpuplan.errors import UsageError

TARGETS = ("skypilot", "k8s")
SHARD_MINUTES = 15.0  # one shard takes about this long on one replica: what an interruption can lose
DATA_DIR = "/data"


@dataclass(frozen=True)
class BatchExport:
    """The YAML text (one document per fleet group, each naming its file), and how to run it."""

    target: str
    text: str
    command: str
    files: dict[str, str] = field(default_factory=dict)
    shards: int = 0
    shard_items: int = 0
    warnings: list[str] = field(default_factory=list)


def _name_ok(name: str) -> str:
    import re

    if not re.fullmatch(r"[a-z][a-z0-9-]{0,30}[a-z0-9]", name):
        raise UsageError(f"--name {name!r}: use 2-32 lowercase letters, digits or dashes, starting with a letter")
    return name


def _worker_script(kind: str, model_id: str, tp: int, replicas: int, gpus_per_replica: int, worker_cmd: str | None) -> str:
    """The work-queue loop one host runs: `replicas` workers, each on its own GPUs."""
    if kind == "gpu":
        run = worker_cmd or 'python worker.py --input "$inp" --output "$tmp"'
    else:
        run = (f'vllm run-batch -i "$inp" -o "$tmp" --model {shlex.quote(model_id)} '
               f'--tensor-parallel-size {tp}')
    return "\n".join([
        "set -euo pipefail",
        "WORKER=${WORKER:-${JOB_COMPLETION_INDEX:-0}}  # SkyPilot: --env WORKER=k; Kubernetes: the Job's index",
        f"mkdir -p {DATA_DIR}/out",
        "work() {  # worker $1 of this host: its stride of the group's shard range",
        "  local w=$(( WORKER * REPLICAS + $1 )) n=$(( HOSTS * REPLICAS ))",
        "  for (( i = SHARD_START + w; i < SHARD_END; i += n )); do",
        '    s=$(printf "shard-%05d.jsonl" "$i")',
        f'    [ -e "{DATA_DIR}/out/$s" ] && continue  # done before an interruption: skip',
        f'    inp="{DATA_DIR}/in/$s"; tmp="{DATA_DIR}/out/.$s.$HOSTNAME.$1"',
        f"    {run}",
        f'    mv "$tmp" "{DATA_DIR}/out/$s"',
        "  done",
        "}",
        f"for r in $(seq 0 $(( REPLICAS - 1 ))); do",
        f'  CUDA_VISIBLE_DEVICES=$(seq -s, $(( r * {gpus_per_replica} )) $(( r * {gpus_per_replica} + {gpus_per_replica} - 1 ))) work "$r" &',
        "done",
        "wait",
    ]) + "\n"


def batch_job(result, target: str = "skypilot", rank: int = 1, *, name: str | None = None,
              bucket: str = "s3://my-bucket/gpuplan-batch", image: str | None = None, model_id: str | None = None,
              worker_cmd: str | None = None) -> BatchExport:
    """The launch files of fleet `rank` of a batch plan result, and the command that runs them."""
    import yaml

    from gpuplan.export.common import dump_yaml

    target = {"sky": "skypilot", "kubernetes": "k8s"}.get(target, target)
    if target not in TARGETS:
        raise UsageError(f"unknown batch export target {target!r}; use skypilot or k8s")
    fleet = next((f for f in result.fleets if f.rank == rank), None)
    if fleet is None:
        raise UsageError(f"--rank {rank}: no such fleet" + (f"; ranks 1..{len(result.fleets)}" if result.fleets
                                                             else " (the plan has none)"))
    if not bucket.strip() or any(c.isspace() for c in bucket):
        raise UsageError(f"--bucket {bucket!r}: give a bucket URL without spaces, e.g. s3://my-bucket/batch")
    name = _name_ok(name or "gpuplan-batch")
    kind = result.kind
    model = model_id or _model_repo(result.model) or "MODEL"
    items = int(round(result.summary.get("items") or sum(g.items for g in fleet.groups)))
    # Shards: about SHARD_MINUTES of one replica each, so an interruption loses little.
    per_replica_h = min(g.items_per_host_hour / max(g.replicas_per_host, 1) for g in fleet.groups)
    shard_items = max(1, int(per_replica_h * SHARD_MINUTES / 60))
    shards = max(1, math.ceil(items / shard_items))
    ranges, start = [], 0
    for i, g in enumerate(fleet.groups):
        end = shards if i == len(fleet.groups) - 1 else min(shards, start + int(round(g.share * shards)))
        ranges.append((start, max(end, start)))
        start = max(end, start)
    img = image or ("vllm/vllm-openai:latest" if kind != "gpu" else "nvcr.io/nvidia/pytorch:24.12-py3")
    warnings = []
    if model == "MODEL":
        warnings.append("the model has no Hugging Face repo on record: pass --model-id org/repo")
    files: dict[str, str] = {}
    launch: list[str] = []
    for gi, (g, (lo, hi)) in enumerate(zip(fleet.groups, ranges), start=1):
        gpn = int(round(g.gpus_per_node))
        script = _worker_script(kind, model, g.tp, g.replicas_per_host, g.tp, worker_cmd)
        env = {"SHARD_START": str(lo), "SHARD_END": str(hi), "HOSTS": str(g.hosts), "REPLICAS": str(g.replicas_per_host),
               "WORKER": "0"}
        fname = f"{name}-g{gi}.{'sky' if target == 'skypilot' else 'k8s'}.yaml"
        head = (f"# file: {fname}\n# group {gi} of fleet #{fleet.rank} ({fleet.label}): {g.hosts} host(s) of "
                f"{g.provider} {gpn}x {g.gpu} ({g.pricing}), shards {lo}..{hi - 1} of {shards} "
                f"({g.share:.0%} of {items:,} items); plan: ${g.cost_usd:,.0f}\n")
        if target == "skypilot":
            doc = _sky_task(name, gi, g, gpn, img, env, script, bucket)
            launch.append(f"for w in $(seq 0 {g.hosts - 1}); do sky jobs launch -y -n {name}-g{gi}-w$w "
                          f"--env WORKER=$w ${{HF_TOKEN:+--env HF_TOKEN}} {fname}; done")
        else:
            doc = _k8s_job(name, gi, g, gpn, img, env, script)
            launch.append(f"kubectl apply -f {fname}  # in the cluster of {g.provider}")
        text = dump_yaml(doc)
        yaml.safe_load(text)  # what we hand out parses
        files[fname] = head + text
    shard_cmd = (f"split -d -a 5 -n l/{shards} --additional-suffix=.jsonl items.jsonl shard- && "
                 + (f"aws s3 cp . {bucket}/in/ --recursive --exclude '*' --include 'shard-*.jsonl'"
                    if target == "skypilot" else f"cp shard-*.jsonl <volume>{DATA_DIR}/in/"))
    command = "\n".join([f"# 1. the work queue: {shards} shards of ~{shard_items:,} items (one JSON request per line)",
                         shard_cmd, "# 2. the workers (each resumes after its last finished shard)"] + launch
                        + [f"# 3. results: {bucket}/out/shard-*.jsonl" if target == "skypilot"
                           else f"# 3. results: <volume>{DATA_DIR}/out/shard-*.jsonl"])
    if len({g.provider for g in fleet.groups}) > 1 and target == "k8s":
        warnings.append("the fleet spans several providers: one Job per provider's cluster, all on storage they share")
    text = "---\n".join(files.values())
    return BatchExport(target=target, text=text, command=command, files=files, shards=shards,
                       shard_items=shard_items, warnings=warnings)


def _model_repo(name: str | None) -> str | None:
    import re

    if not name:
        return None
    try:
        from gpuplan.models import resolve_model

        source = resolve_model(name).source or ""
    except Exception:  # noqa: BLE001 - a derived model has no repo
        return None
    m = re.match(r"https?://huggingface\.co/([^/\s]+/[^/\s]+)", source)
    return m.group(1) if m else None


def _sky_task(name: str, gi: int, g, gpn: int, image: str, env: dict[str, str], script: str, bucket: str) -> dict:
    from gpuplan.export.skypilot import cloud_for
    from gpuplan.export.common import data_map

    cloud = cloud_for(g.provider)
    m = data_map("skypilot")
    acc = m["accelerators_by_cloud"].get(cloud or "", {}).get(g.gpu) or m["accelerators"].get(g.gpu) or g.gpu
    resources: dict = {"accelerators": f"{acc}:{gpn}", "image_id": f"docker:{image}",
                       "use_spot": g.pricing in ("spot", "interruptible"),
                       "job_recovery": {"strategy": "EAGER_NEXT_REGION", "max_restarts_on_errors": 3}}
    if cloud:
        resources = {"infra": cloud, **resources}
    return {"name": f"{name}-g{gi}", "resources": resources, "num_nodes": 1,
            "envs": env,  # HF_TOKEN is passed by the launch command only when set in your shell
            "file_mounts": {DATA_DIR: {"source": bucket, "mode": "MOUNT"}},
            "run": script}


def _k8s_job(name: str, gi: int, g, gpn: int, image: str, env: dict[str, str], script: str) -> dict:
    """An Indexed Job: one pod per host; a lost pod is re-created with its index (its WORKER)."""
    env_list = [{"name": k, "value": v} for k, v in env.items() if k != "WORKER"]  # WORKER: JOB_COMPLETION_INDEX
    env_list.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token",
                                                                        "optional": True}}})
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": f"{name}-g{gi}", "labels": {"app.kubernetes.io/managed-by": "gpuplan"}},
        "spec": {
            "completionMode": "Indexed", "completions": g.hosts, "parallelism": g.hosts,
            "backoffLimitPerIndex": 10, "maxFailedIndexes": max(1, g.hosts // 2),
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "worker", "image": image, "command": ["bash", "-c", script], "env": env_list,
                    "resources": {"limits": {"nvidia.com/gpu": gpn}},
                    "volumeMounts": [{"name": "data", "mountPath": DATA_DIR}],
                }],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"{name}-data"}}],
            }},
        },
    }


__all__ = ["BatchExport", "batch_job", "TARGETS"]
