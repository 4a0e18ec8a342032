"""A plan as Kubernetes manifests: a PyTorchJob (Kubeflow training operator) for multi-node
training, a batch/v1 Job for one node, a Deployment + Service for serving; one multi-document YAML.

Any cluster works, so no provider is 'unsupported' here; what varies is how nodes are labelled,
hence the GPU product selector comes from the data map and is left out where unknown.
"""
from __future__ import annotations

import math
from typing import Any

from gpuplan.export.common import (
    MASTER_PORT, SECRET_NAMES, SERVE_PORT, Context, ExportResult, TrainLaunch, data_map, default_image, dump_yaml_all,
    fast_fabric, header, launch_env, model_id, network_notes, serve_command, serve_layout, serve_setup, train_launch,
)

SECRET_NAME = "gpuplan-secrets"
# Full checkpoint (bf16 weights, fp32 master copy and Adam moments): about 16 bytes per parameter.
CHECKPOINT_BYTES_PER_PARAM = 16
CHECKPOINTS_KEPT = 2
DEFAULT_CHECKPOINT_GIB = 1000
READINESS_DELAY_S = 120


def gpu_resource(ctx: Context) -> str:
    return data_map("kubernetes")["resource_by_vendor"].get(ctx.vendor, "nvidia.com/gpu")


def _labels(ctx: Context, component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": ctx.name, "app.kubernetes.io/component": component,
            "app.kubernetes.io/managed-by": "gpuplan"}


def _scheduling(ctx: Context, notes: list[str]) -> dict[str, Any]:
    """nodeSelector and tolerations: GPU product, and spot capacity where the provider labels it."""
    m = data_map("kubernetes")
    p = ctx.plan
    selector: dict[str, str] = {}
    gke = m["gke_accelerators"].get(p.gpu) if p.provider == "gcp" else None
    if gke:
        selector["cloud.google.com/gke-accelerator"] = gke
    elif p.gpu in m["products"] and ctx.vendor in m["product_label"]:
        selector[m["product_label"][ctx.vendor]] = m["products"][p.gpu]
        notes.append(f"nodeSelector {m['product_label'][ctx.vendor]} is set by the GPU operator's feature discovery; "
                     "drop it if your nodes lack that label")
    else:
        notes.append(f"no node label known for {p.gpu}: add a nodeSelector for your {p.gpu} nodes")
    tolerations: list[dict[str, Any]] = [{"key": gpu_resource(ctx), "operator": "Exists", "effect": "NoSchedule"}]
    if p.offer.preemptible:
        spot = m["spot_node_selector"].get(p.provider)
        if spot:
            selector.update(spot)
            tolerations += m["spot_tolerations"].get(p.provider, [])
        else:
            notes.append("the plan prices spot capacity: schedule onto your cluster's spot node pool")
    out: dict[str, Any] = {}
    if selector:
        out["nodeSelector"] = selector
    out["tolerations"] = tolerations
    return out


def _fabric_resources(ctx: Context, notes: list[str]) -> tuple[dict[str, int], bool]:
    """(extra resource limits, needs IPC_LOCK) for the fabric of a multi-node training plan."""
    f = fast_fabric(ctx)
    if f is None:
        return {}, False
    m = data_map("network")["kubernetes"]
    if f == "efa":
        n = m["efa_interfaces"].get(ctx.plan.instance_type)
        if n is None:
            notes.append(f"set {m['efa_resource']} to the number of EFA interfaces of {ctx.plan.instance_type}")
            n = 1
        notes.append(f"{m['efa_resource']}: {n} needs the AWS EFA Kubernetes device plugin (EKS: enabled with EFA "
                     "node groups)")
        return {m["efa_resource"]: n}, True
    if f == "tcpx":
        notes.append("GPUDirect-TCPX on GKE also needs the multi-networking annotations and the tcpx daemon "
                     "sidecar from Google's GPUDirect guide; without them NCCL runs over the gVNIC")
        return {}, False
    res = dict(m["rdma_resource"].get(ctx.plan.provider) or m["rdma_resource"]["default"])
    name = ", ".join(res)
    notes.append(f"{f}: the pods ask for {name} (RDMA device plugin) and IPC_LOCK; rename the resource to your "
                 "cluster's (`kubectl describe node` lists it) or the pods stay Pending")
    return res, True


def _env(values: dict[str, str]) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in values.items()]
    env += [{"name": k, "valueFrom": {"secretKeyRef": {"name": SECRET_NAME, "key": k, "optional": True}}}
            for k in SECRET_NAMES]
    return env


def _shm_volume(ctx: Context) -> dict[str, Any]:
    return {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi" if ctx.gpus_per_node >= 4 else "8Gi"}}


def _image(ctx: Context, engine: str | None = None) -> str:
    image = ctx.options.image or default_image(ctx, engine)
    if not image:
        ctx.warn(f"no default image for {ctx.vendor} GPUs; pass --image")
        image = "REPLACE-WITH-YOUR-IMAGE"
    return image


def _pod_spec(ctx: Context, container_name: str, script: str, notes: list[str], restart: str | None,
              claim: str | None, launch: TrainLaunch) -> dict[str, Any]:
    count = ctx.gpus_per_node
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}]
    volumes: list[dict[str, Any]] = [_shm_volume(ctx)]
    if claim:
        mounts.append({"name": "checkpoints", "mountPath": ctx.options.checkpoint_dir})
        volumes.append({"name": "checkpoints", "persistentVolumeClaim": {"claimName": claim}})
    limits: dict[str, Any] = {gpu_resource(ctx): count}
    extra, ipc_lock = _fabric_resources(ctx, notes)
    limits.update(extra)
    container: dict[str, Any] = {
        "name": container_name,
        "image": ctx.options.image or launch.image or _image(ctx),
        "command": ["bash", "-c", script],
        "env": _env(launch_env(ctx, launch)),
        "resources": {"limits": limits},
        "volumeMounts": mounts,
    }
    if ipc_lock:
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    if ctx.plan.nodes > 1:
        container["ports"] = [{"name": "pytorchjob-port", "containerPort": MASTER_PORT}]
    spec: dict[str, Any] = {}
    if restart:
        spec["restartPolicy"] = restart
    spec.update(_scheduling(ctx, notes))
    spec["containers"] = [container]
    spec["volumes"] = volumes
    return spec


def _checkpoint_gib(ctx: Context) -> int:
    try:
        params = float(ctx.summary.get("params") or 0)
    except (TypeError, ValueError):
        params = 0.0
    if not params > 0 or not math.isfinite(params):
        return DEFAULT_CHECKPOINT_GIB
    if str(ctx.summary.get("method", "full")) in ("lora", "qlora"):
        params *= 0.02  # adapters and their optimizer state only, plus headroom
    gib = params * CHECKPOINT_BYTES_PER_PARAM * CHECKPOINTS_KEPT / 2**30
    return max(100, int(math.ceil(gib / 100.0) * 100))


def render(ctx: Context) -> ExportResult:
    return _render_serve(ctx) if ctx.plan.workload == "serve" else _render_train(ctx)


def _render_train(ctx: Context) -> ExportResult:
    p = ctx.plan
    notes: list[str] = []
    claim = f"{ctx.name}-checkpoints"
    size = _checkpoint_gib(ctx)
    pvc = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim, "labels": _labels(ctx, "checkpoints")},
        "spec": {"accessModes": ["ReadWriteMany" if p.nodes > 1 else "ReadWriteOnce"],
                 "resources": {"requests": {"storage": f"{size}Gi"}}},
    }
    notes.append(f"checkpoints on PVC {claim} ({size}Gi, "
                 f"{'ReadWriteMany: needs a shared-filesystem storage class' if p.nodes > 1 else 'ReadWriteOnce'})")
    notes.append(f"secrets: kubectl create secret generic {SECRET_NAME} --from-literal=HF_TOKEN=...")
    if p.nodes > 1:
        launch = train_launch(ctx, node_rank="$RANK", master_addr="$MASTER_ADDR", master_port="$MASTER_PORT")
        script = "set -euo pipefail\n" + "\n".join(launch.setup + launch.run) + "\n"
        master_notes: list[str] = []
        pod = {"metadata": {"labels": _labels(ctx, "train")},
               "spec": _pod_spec(ctx, "pytorch", script, master_notes, None, claim, launch)}
        notes += master_notes
        replica = {"restartPolicy": "OnFailure", "template": pod}
        job = {
            "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": ctx.name, "labels": _labels(ctx, "train")},
            "spec": {
                "runPolicy": {"backoffLimit": ctx.options.max_restarts, "cleanPodPolicy": "None"},
                "pytorchReplicaSpecs": {
                    "Master": {"replicas": 1, **replica},
                    "Worker": {"replicas": p.nodes - 1, **replica},
                },
            },
        }
        notes.append("needs the Kubeflow training operator (PyTorchJob); it sets MASTER_ADDR, MASTER_PORT and RANK "
                     "(the pod's node rank) in every pod")
        docs = [pvc, job]
    else:
        launch = train_launch(ctx, node_rank="0", master_addr="localhost")
        script = "set -euo pipefail\n" + "\n".join(launch.setup + launch.run) + "\n"
        job = {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": ctx.name, "labels": _labels(ctx, "train")},
            "spec": {
                "backoffLimit": ctx.options.max_restarts,
                "template": {"metadata": {"labels": _labels(ctx, "train")},
                             "spec": _pod_spec(ctx, "train", script, notes, "OnFailure", claim, launch)},
            },
        }
        docs = [pvc, job]
    launch_cmd = "kubectl apply -f <this file>"
    notes += launch.notes + network_notes(ctx)
    notes.append(f"checkpoint every {launch_env(ctx, launch).get('CHECKPOINT_INTERVAL_MIN', '?')} min; a restarted "
                 "pod must resume from the latest checkpoint")
    return ExportResult("k8s", header(ctx, "Kubernetes manifests", launch_cmd, notes) + dump_yaml_all(docs),
                        list(ctx.warnings), launch_cmd)


def _render_serve(ctx: Context) -> ExportResult:
    p = ctx.plan
    notes: list[str] = []
    tp, per_node, nodes = serve_layout(ctx)
    engine, command = serve_command(ctx)
    serve_setup(ctx, engine)  # vendor warnings (Gaudi's vLLM plugin); the image carries the engine
    labels = _labels(ctx, "serve")
    spec = _scheduling(ctx, notes)
    container = {
        "name": engine,
        "image": _image(ctx, engine),
        "command": ["bash", "-c", command],
        "env": _env({"MODEL_ID": model_id(ctx), "ENGINE": engine, "TENSOR_PARALLEL": str(tp),
                     "ENGINES_PER_NODE": str(per_node)}),
        "ports": [{"name": "http", "containerPort": SERVE_PORT}],
        "resources": {"limits": {gpu_resource(ctx): ctx.gpus_per_node}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "initialDelaySeconds": READINESS_DELAY_S,
                           "periodSeconds": 10, "failureThreshold": 60},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": ctx.name, "labels": labels},
        "spec": {
            "replicas": nodes,
            "selector": {"matchLabels": {"app.kubernetes.io/name": ctx.name, "app.kubernetes.io/component": "serve"}},
            "template": {"metadata": {"labels": labels},
                         "spec": {**spec, "containers": [container], "volumes": [_shm_volume(ctx)]}},
        },
    }
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": ctx.name, "labels": labels},
        "spec": {"selector": {"app.kubernetes.io/name": ctx.name, "app.kubernetes.io/component": "serve"},
                 "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }
    notes.append(f"{nodes} replica(s), each one {p.instance_type}-sized pod running {per_node} x TP{tp} engine(s)")
    notes.append(f"secrets: kubectl create secret generic {SECRET_NAME} --from-literal=HF_TOKEN=...")
    launch = "kubectl apply -f <this file>"
    return ExportResult("k8s", header(ctx, "Kubernetes manifests", launch, notes) + dump_yaml_all([deployment, service]),
                        list(ctx.warnings), launch)
