"""Kubernetes exports, validated against the Kubernetes OpenAPI JSON schema (kubernetes-validate, strict,
no cluster); the PyTorchJob envelope against a schema written from the Kubeflow training-operator v1
API, and each of its pod templates against Kubernetes' own PodTemplate schema."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpuplan.export import build_export, export_result, load_plan_result, parse_plan_result

PLANS = Path(__file__).parent / "fixtures" / "plans"
CASES = [(f.name, p.rank) for f in sorted(PLANS.glob("*.json")) for p in load_plan_result(f).plans]
K8S_VERSION = "1.33"
DNS1123 = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

# kubeflow.org/v1 PyTorchJob, the parts we emit (training-operator API reference: PyTorchJobSpec,
# ReplicaSpec, RunPolicy); unknown keys are rejected so a typo fails here, not in the cluster.
_REPLICA = {
    "type": "object", "additionalProperties": False, "required": ["replicas", "template"],
    "properties": {
        "replicas": {"type": "integer", "minimum": 0},
        "restartPolicy": {"enum": ["Always", "OnFailure", "Never", "ExitCode"]},
        "template": {"type": "object"},
    },
}
PYTORCHJOB_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "kubeflow.org/v1"},
        "kind": {"const": "PyTorchJob"},
        "metadata": {"type": "object", "required": ["name"],
                     "properties": {"name": {"type": "string", "pattern": DNS1123, "maxLength": 63}}},
        "spec": {
            "type": "object", "additionalProperties": False, "required": ["pytorchReplicaSpecs"],
            "properties": {
                "runPolicy": {"type": "object", "additionalProperties": False, "properties": {
                    "backoffLimit": {"type": "integer", "minimum": 0},
                    "cleanPodPolicy": {"enum": ["All", "Running", "None"]},
                    "activeDeadlineSeconds": {"type": "integer", "minimum": 0},
                    "ttlSecondsAfterFinished": {"type": "integer", "minimum": 0},
                }},
                "nprocPerNode": {"type": "string"},
                "pytorchReplicaSpecs": {"type": "object", "additionalProperties": False, "required": ["Master"],
                                        "properties": {"Master": _REPLICA, "Worker": _REPLICA}},
            },
        },
    },
}


def _docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def _validate_pod_template(kv, template: dict) -> None:
    kv.validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "check"}, "template": template},
                K8S_VERSION, strict=True)


@pytest.mark.parametrize("fixture, rank", CASES)
def test_manifests_validate_against_the_kubernetes_schema(fixture, rank):
    result = load_plan_result(PLANS / fixture)
    plan = next(p for p in result.plans if p.rank == rank)
    _validate_export(plan, export_result(result, "k8s", rank).text)


def _validate_export(plan, text: str) -> list[dict]:
    """Every manifest against the schemas; returns the pod templates."""
    kv = pytest.importorskip("kubernetes_validate")
    jsonschema = pytest.importorskip("jsonschema")
    docs = _docs(text)
    gpu_key = "amd.com/gpu" if plan.gpu.startswith("MI") else "nvidia.com/gpu"

    templates = []
    for doc in docs:
        if doc["apiVersion"] == "kubeflow.org/v1":
            jsonschema.validate(doc, PYTORCHJOB_SCHEMA)
            specs = doc["spec"]["pytorchReplicaSpecs"]
            assert specs["Master"]["replicas"] == 1 and specs["Worker"]["replicas"] == plan.nodes - 1
            for spec in specs.values():
                _validate_pod_template(kv, spec["template"])
                # the operator finds the training container by this name
                assert spec["template"]["spec"]["containers"][0]["name"] == "pytorch"
                templates.append(spec["template"])
        else:
            kv.validate(doc, K8S_VERSION, strict=True)
            if doc["kind"] in ("Job", "Deployment"):
                templates.append(doc["spec"]["template"])

    kinds = [d["kind"] for d in docs]
    if plan.workload == "serve":
        assert kinds == ["Deployment", "Service"]
        assert docs[0]["spec"]["replicas"] == plan.nodes
        labels = docs[0]["spec"]["template"]["metadata"]["labels"]
        assert all(labels[k] == v for k, v in docs[1]["spec"]["selector"].items())
    else:
        assert kinds == ["PersistentVolumeClaim", "PyTorchJob" if plan.nodes > 1 else "Job"]
    for t in templates:
        (container,) = t["spec"]["containers"]
        assert container["resources"]["limits"][gpu_key] == plan.gpus_per_node
        env = {e["name"]: e for e in container["env"]}
        assert "value" not in env["HF_TOKEN"] and env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["optional"] is True
        if plan.workload == "train":
            assert env["TP_SIZE"]["value"] == str(plan.layout.tp)
            script = container["command"][-1]
            gpn = int(plan.gpus_per_node)
            assert (f"--nnodes={plan.nodes}" in script and f"--nproc-per-node={gpn}" in script) or \
                f"accelerate launch --num_machines {plan.nodes} --num_processes {plan.nodes * gpn}" in script
        if plan.offer.preemptible and plan.provider == "aws":
            assert t["spec"]["nodeSelector"]["eks.amazonaws.com/capacityType"] == "SPOT"
    return templates


@pytest.mark.parametrize("provider, fabric, resource, count", [
    ("nebius", "infiniband", "rdma/rdma_shared_device_a", 1),
    ("aws", "efa", "vpc.amazonaws.com/efa", None),
    ("oci", "roce", "rdma/rdma_shared_device_a", 1),
])
def test_multi_node_fast_fabric_pods_get_rdma_devices(cli, provider, fabric, resource, count):
    code, out, err = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--providers", provider,
                         "--json")
    assert code == 0, err
    result = parse_plan_result(json.loads(out))
    plan = next((p for p in sorted(result.plans, key=lambda p: p.rank)
                 if p.nodes > 1 and p.assumptions.get("fabric") == fabric), None)
    assert plan is not None, f"the planner ranked no multi-node {provider} plan on {fabric}"
    templates = _validate_export(plan, build_export(plan, "k8s", summary=result.summary).text)
    assert len(templates) == 2  # Master and Worker
    for t in templates:
        (c,) = t["spec"]["containers"]
        limits = c["resources"]["limits"]
        want = count or {"p5.48xlarge": 32, "p5e.48xlarge": 32, "p5en.48xlarge": 16, "p4d.24xlarge": 4,
                         "p6-b200.48xlarge": 8, "8x B200": 8}[plan.instance_type]
        assert limits[resource] == want
        assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["NCCL_DEBUG"] == "INFO"
        assert ("FI_PROVIDER" in env) == (fabric == "efa") and ("NCCL_IB_GID_INDEX" in env) == (fabric == "roce")


def test_invalid_manifest_is_caught_by_the_validator():
    """The validator is strict enough to catch the mistakes an export could make."""
    kv = pytest.importorskip("kubernetes_validate")
    result = load_plan_result(PLANS / "serve_runpod_l40s.json")
    deployment = _docs(export_result(result, "k8s", 1).text)[0]
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limit"] = {"nvidia.com/gpu": 1}
    with pytest.raises(kv.ValidationError):
        kv.validate(deployment, K8S_VERSION, strict=True)
