"""`draplan migrate`: device-plugin counts rewritten into DRA claims over a corpus of manifests.

Every produced object must decode and validate, and everything the migration does not own
(other fields, comments, layout) must come out exactly as it went in.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA, Run
from draplan.api.codec import decode
from draplan.api.core_v1 import Pod
from draplan.api.resource_v1 import ResourceClaimTemplate
from draplan.cluster.podresources import is_extended
from draplan.migrate import CheckRow, Migration, migrate
from draplan.migrate.sites import pod_sites
from draplan.sources.yamltext import MarkedLoader as Loader

HERE = DATA / "migrate"
CLUSTER = str(HERE / "cluster.yaml")
MAPPING = str(HERE / "mapping.yaml")
CORPUS = [
    "deployment.yaml",
    "job.yaml",
    "statefulset.yaml",
    "pytorchjob.yaml",
    "two-containers.yaml",
    "mig.yaml",
    "no-gpu.yaml",
    "sidecars.yaml",
    "pinned.yaml",
]
# Lines a migration may delete: device counts and the sections they emptied.
DELETABLE = re.compile(r"^\s*(nvidia\.com/|rdma/|limits:\s*$|requests:\s*$)")


@pytest.fixture(scope="module")
def corpus() -> Migration:
    return migrate([CLUSTER, *(str(HERE / f) for f in CORPUS)], mapping_file=MAPPING)


def _file(m: Migration, name: str) -> Any:
    return next(f for f in m.files if f.source.endswith(name))


def _site(m: Migration, label: str) -> Any:
    return next(s for s in m.sites if s.label == label)


def _docs(text: str) -> list[Any]:
    return [d for d in yaml.load_all(text, Loader) if d is not None]


def _template(m: Migration, namespace: str, name: str) -> dict[str, Any]:
    hit = [t for t in m.templates if (t.namespace, t.name) == (namespace, name)]
    assert len(hit) == 1, [(t.namespace, t.name) for t in m.templates]
    return hit[0].obj


# --- what the migration must leave alone ---------------------------------------------------------


def _without_devices(spec: dict[str, Any]) -> dict[str, Any]:
    """The original pod spec minus its device-plugin counts (and sections they emptied)."""
    spec = copy.deepcopy(spec)
    for field in ("initContainers", "containers"):
        for c in spec.get(field) or []:
            res = c.get("resources") or {}
            for section in ("limits", "requests"):
                values = res.get(section)
                if isinstance(values, dict):
                    kept = {k: v for k, v in values.items() if not _migrated_name(k)}
                    if kept:
                        res[section] = kept
                    else:
                        del res[section]
    return spec


def _migrated_name(name: str) -> bool:
    return is_extended(name) and not name.startswith("example.com/")


def _without_claims(spec: dict[str, Any], templates: set[str]) -> dict[str, Any]:
    """The migrated pod spec minus what the migration added."""
    spec = copy.deepcopy(spec)
    added = {
        c["name"]
        for c in spec.get("resourceClaims", [])
        if c.get("resourceClaimTemplateName") in templates
    }
    spec["resourceClaims"] = [c for c in spec.get("resourceClaims", []) if c["name"] not in added]
    if not spec["resourceClaims"]:
        del spec["resourceClaims"]
    for field in ("initContainers", "containers"):
        for c in spec.get(field) or []:
            res = c.get("resources") or {}
            claims = [r for r in res.get("claims", []) if r["name"] not in added]
            res.pop("claims", None)
            if claims:
                res["claims"] = claims
    return spec


def _strip(doc: dict[str, Any], strip: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for site in pod_sites(doc):
        parent: Any = doc
        for step in site.path[:-1]:
            parent = parent[step]
        parent[site.path[-1]] = strip(parent[site.path[-1]])
    return doc


def test_everything_but_the_devices_is_unchanged(corpus: Migration) -> None:
    templates = {t.name for t in corpus.templates}
    for f in corpus.files:
        before = _docs(f.original)
        after = [d for d in _docs(f.text) if d.get("kind") != "ResourceClaimTemplate"]
        assert len(before) == len(after), f.source
        for old, new in zip(before, after, strict=True):
            assert _strip(old, _without_devices) == _strip(
                new, lambda s: _without_claims(s, templates)
            ), f.source


def test_only_device_lines_are_deleted_and_comments_stay(corpus: Migration) -> None:
    for f in corpus.files:
        old, new = f.original.splitlines(), f.text.splitlines()
        matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
        for op, i1, i2, _, _ in matcher.get_opcodes():
            if op in ("delete", "replace"):
                for line in old[i1:i2]:
                    assert DELETABLE.match(line), (f.source, line)
        comments = [line for line in old if line.lstrip().startswith("#")]
        assert all(c in new for c in comments), f.source
        assert not f.reformatted, f.source


def test_an_object_without_gpus_comes_out_byte_for_byte(corpus: Migration, run_cli: Any) -> None:
    plain = _file(corpus, "no-gpu.yaml")
    assert plain.text == plain.original and not plain.changed
    result = run_cli("migrate", "-f", str(HERE / "no-gpu.yaml"), "-o", "yaml")
    assert result.code == 0
    assert result.out == (HERE / "no-gpu.yaml").read_text()
    assert run_cli("migrate", "-f", str(HERE / "no-gpu.yaml"), "-o", "diff").out == ""


# --- what it produces must validate ----------------------------------------------------------


def test_generated_templates_and_pods_validate(corpus: Migration) -> None:
    for t in corpus.templates:
        typed = decode(t.obj)
        assert isinstance(typed, ResourceClaimTemplate)
    for f in corpus.files:
        for doc in _docs(f.text):
            if doc.get("kind") == "ResourceClaimTemplate":
                decode(doc, source=f.source)
    for site, before, after in corpus.pods():
        assert isinstance(before, Pod) and isinstance(after, Pod)
        template = _template(corpus, site.namespace, site.template)
        requests = {r["name"] for r in template["spec"]["spec"]["devices"]["requests"]}
        claim = next(c for c in after.spec.resource_claims if c.resource_claim_template_name)
        for container in (*after.spec.containers, *after.spec.init_containers):
            assert not any(_migrated_name(k) for k in container.resources.limits)
            assert not any(_migrated_name(k) for k in container.resources.requests)
            for ref in container.resources.claims:
                if ref.name == claim.name and len(requests) > 1:
                    assert ref.request in requests


# --- the corpus, object by object ------------------------------------------------------------


def test_deployment_gets_one_gpu_template(corpus: Migration) -> None:
    site = _site(corpus, "Deployment serving/llm-serve")
    assert site.template == "gpu-1"
    assert site.decision.attribute is None
    assert "one device" in site.decision.reason
    server = site.migrated["containers"][0]["resources"]
    assert server["claims"] == [{"name": "gpu"}]
    assert server["limits"] == {"cpu": "8", "memory": "32Gi"}
    assert site.migrated["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "gpu-1"}
    ]
    assert site.migrated["containers"][1] == site.original["containers"][1]
    assert site.site.replicas == 3
    exactly = _template(corpus, "serving", "gpu-1")["spec"]["spec"]["devices"]["requests"][0]
    assert exactly == {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}


def test_job_with_equal_requests_and_limits_aligns_on_numa(corpus: Migration) -> None:
    site = _site(corpus, "Job ml/finetune")
    resources = site.migrated["containers"][0]["resources"]
    assert "limits" not in resources  # it held only the GPUs
    assert resources["requests"] == {"cpu": 16}
    devices = _template(corpus, "ml", "gpu-4-numa")["spec"]["spec"]["devices"]
    assert devices["constraints"] == [{"matchAttribute": "gpu.nvidia.com/numa"}]
    assert "pcieRoot holds at most 2" in site.decision.reason
    assert "h100-a" in site.decision.reason


def test_statefulset_pair_aligns_on_pcie_root(corpus: Migration) -> None:
    site = _site(corpus, "StatefulSet serving/embedder")
    assert site.decision.attribute == "resource.kubernetes.io/pcieRoot"
    assert site.template == "gpu-2-pcieroot"
    assert "resources" not in site.migrated or "limits" not in site.migrated["containers"][0]
    doc = next(
        d for d in _docs(_file(corpus, "statefulset.yaml").text) if d["kind"] == "StatefulSet"
    )
    # A PVC template's `resources.requests` is not a container's and stays.
    assert doc["spec"]["volumeClaimTemplates"][0]["spec"]["resources"] == {
        "requests": {"storage": "100Gi"}
    }


def test_pytorchjob_master_and_worker_share_a_template(corpus: Migration) -> None:
    master = _site(corpus, "PyTorchJob ml/llama-pretrain spec.pytorchReplicaSpecs.Master.template")
    worker = _site(corpus, "PyTorchJob ml/llama-pretrain spec.pytorchReplicaSpecs.Worker.template")
    assert master.template == worker.template == "gpu-8-ib-1"
    assert (master.site.replicas, worker.site.replicas) == (1, 3)
    assert master.decision.attribute is None
    assert "8 devices fit no single group" in master.decision.reason
    requests = _template(corpus, "ml", "gpu-8-ib-1")["spec"]["spec"]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["deviceClassName"]) for r in requests] == [
        ("gpu", "gpu.nvidia.com"),
        ("ib", "rdma.dra.net"),
    ]
    refs = worker.migrated["containers"][0]["resources"]["claims"]
    assert refs == [{"name": "devices", "request": "gpu"}, {"name": "devices", "request": "ib"}]
    text = _file(corpus, "pytorchjob.yaml").text
    assert text.count("kind: ResourceClaimTemplate") == 1


def test_two_gpu_containers_get_requests_of_their_own(corpus: Migration) -> None:
    site = _site(corpus, "Pod ml/pipeline")
    encoder, decoder = (c["resources"]["claims"] for c in site.migrated["containers"])
    assert encoder == [{"name": "gpu", "request": "gpu-0"}]
    assert decoder == [{"name": "gpu", "request": "gpu-1"}]
    devices = _template(corpus, "ml", site.template)["spec"]["spec"]["devices"]
    assert [r["exactly"]["count"] for r in devices["requests"]] == [1, 1]
    # One constraint over both: the pair lands under one PCIe root.
    assert devices["constraints"] == [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]


def test_mig_requests_select_the_profile(corpus: Migration) -> None:
    notebooks = _site(corpus, "Deployment research/notebooks")
    cron = _site(corpus, "CronJob research/nightly-eval spec.jobTemplate.spec.template")
    for site, profile in ((notebooks, "1g.5gb"), (cron, "3g.20gb")):
        exactly = _template(corpus, "research", site.template)["spec"]["spec"]["devices"][
            "requests"
        ][0]["exactly"]
        assert exactly["deviceClassName"] == "mig.nvidia.com"
        expr = f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"
        assert exactly["selectors"] == [{"cel": {"expression": expr}}]
        assert site.decision.attribute is None
    assert notebooks.migrated["containers"][0]["resources"]["limits"] == {"memory": "8Gi"}


def test_existing_claims_init_containers_zero_counts_and_kept_resources(
    corpus: Migration,
) -> None:
    site = _site(corpus, "Pod ml/mixed")
    spec = site.migrated
    assert [c["name"] for c in spec["resourceClaims"]] == ["gpu", "gpu-2"]  # `gpu` was taken
    main = spec["containers"][0]["resources"]
    assert main["claims"] == [{"name": "gpu"}]  # its own DRA claim, untouched
    assert main["limits"] == {"example.com/fpga-license": 1}  # kept: the mapping says so
    assert spec["initContainers"][0]["resources"]["claims"] == [
        {"name": "gpu-2", "request": "gpu-0"}
    ]
    assert any("init container warmup" in n for n in site.notes)
    assert any("0 removed" in n for n in site.notes)


def test_node_selection_narrows_the_topology_decision(corpus: Migration) -> None:
    site = _site(corpus, "Deployment l40s-pair")
    assert site.decision.attribute == "gpu.nvidia.com/numa"
    assert "matching the pod's node selection" in site.decision.reason
    assert "l40s-a" in site.decision.reason


# --- options and other inputs ------------------------------------------------------------------


def test_topology_none_and_without_slices() -> None:
    paths = [str(HERE / "job.yaml"), str(HERE / "statefulset.yaml")]
    off = migrate([CLUSTER, *paths], topology="none")
    assert all(t.shape.match_attribute is None for t in off.templates)
    assert all(s.decision.reason == "--topology none" for s in off.sites)
    blind = migrate(paths)
    assert all(t.shape.match_attribute is None for t in blind.templates)
    assert all("no ResourceSlices" in s.decision.reason for s in blind.sites)


def test_chart_classes_are_known_without_device_classes(tmp_path: Path) -> None:
    slices = [d for d in _docs((HERE / "cluster.yaml").read_text()) if d["kind"] != "DeviceClass"]
    bare = tmp_path / "slices.yaml"
    bare.write_text(yaml.safe_dump_all(slices))
    m = migrate([str(bare), str(HERE / "statefulset.yaml")])
    assert m.sites[0].decision.attribute == "resource.kubernetes.io/pcieRoot"


def test_standard_numa_node_attribute_is_preferred_to_the_drivers(tmp_path: Path) -> None:
    # The same nodes, publishing resource.kubernetes.io/numaNode (stable in 1.37) beside the
    # driver's own `numa`: the standard attribute is chosen.
    docs = _docs((HERE / "cluster.yaml").read_text())
    for doc in docs:
        for dev in doc.get("spec", {}).get("devices", []) if doc["kind"] == "ResourceSlice" else []:
            numa = dev.get("attributes", {}).get("numa")
            if numa is not None:
                dev["attributes"]["resource.kubernetes.io/numaNode"] = numa
    standard = tmp_path / "cluster.yaml"
    standard.write_text(yaml.safe_dump_all(docs))
    m = migrate([str(standard), str(HERE / "job.yaml")])
    assert [s.decision.attribute for s in m.sites] == ["resource.kubernetes.io/numaNode"]
    assert [s.decision.attribute for s in migrate([CLUSTER, str(HERE / "job.yaml")]).sites] == [
        "gpu.nvidia.com/numa"
    ]


def test_kubectl_list_and_json_inputs(tmp_path: Path) -> None:
    deployment = _docs((HERE / "deployment.yaml").read_text())[0]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    listing = {"apiVersion": "v1", "kind": "List", "items": [service, deployment]}
    as_yaml = tmp_path / "list.yaml"
    as_yaml.write_text(yaml.safe_dump(listing, sort_keys=False))
    as_json = tmp_path / "one.json"
    # Another namespace, so it needs a template of its own.
    other = {**deployment, "metadata": {**deployment["metadata"], "namespace": "other"}}
    as_json.write_text(json.dumps(other, indent=4))
    m = migrate([str(as_yaml), str(as_json)])
    (out_list,) = _docs(m.files[0].text)
    kinds = [i["kind"] for i in out_list["items"]]
    assert kinds == ["Service", "ResourceClaimTemplate", "Deployment"]
    assert m.files[0].reformatted == []
    out_json = json.loads(m.files[1].text)
    assert out_json["kind"] == "List"  # a JSON file holds one object: the template joins it
    assert m.files[1].text.startswith('{\n    "apiVersion"')
    for item in (*out_list["items"], *out_json["items"]):
        if item["kind"] == "ResourceClaimTemplate":
            decode(item)


def test_flow_style_and_anchors_keep_their_meaning(tmp_path: Path) -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {containers: [{name: a, resources: {limits: {nvidia.com/gpu: 1, cpu: 1}}}]}\n"
        "---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  containers:\n"
        "  - name: a\n    resources: &r\n      limits: {nvidia.com/gpu: 1}\n"
        "  - name: b\n    resources: *r\n"
    )
    path = tmp_path / "odd.yaml"
    path.write_text(text)
    m = migrate([str(path)])
    docs = _docs(m.files[0].text)
    pods = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Pod"}
    assert pods["p"]["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": 1},
        "claims": [{"name": "gpu"}],
    }
    assert [c["resources"]["claims"] for c in pods["q"]["spec"]["containers"]] == [
        [{"name": "gpu", "request": "gpu-0"}],
        [{"name": "gpu", "request": "gpu-1"}],
    ]
    # The alias cannot be edited in place: that document is re-emitted, and the report says so.
    assert m.files[0].reformatted == ["Pod q"]
    for site, _, after in m.pods():
        assert after.spec.resource_claims, site.label


def test_existing_templates_are_reused_or_avoided(tmp_path: Path) -> None:
    def template(name: str, count: int) -> dict[str, Any]:
        request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "serving"},
            "spec": {"spec": {"devices": {"requests": [request]}}},
        }

    deployment = str(HERE / "deployment.yaml")
    same = tmp_path / "same.yaml"
    same.write_text(yaml.safe_dump(template("gpu-1", 1)))
    reused = migrate([str(same), deployment])
    assert [(t.name, t.emitted) for t in reused.templates] == [("gpu-1", False)]
    assert "ResourceClaimTemplate" not in _file(reused, "deployment.yaml").text
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(template("gpu-1", 2)))
    avoided = migrate([str(other), deployment])
    assert [(t.name, t.emitted) for t in avoided.templates] == [("gpu-1-2", True)]


def test_pod_sites_cover_the_workload_kinds() -> None:
    pod = {"containers": [{"name": "c"}]}
    template = {"spec": pod}
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({"kind": "DaemonSet", "spec": {"template": template}}, ["spec.template"]),
        ({"kind": "PodTemplate", "template": template}, ["template"]),
        (
            {
                "kind": "JobSet",
                "spec": {"replicatedJobs": [{"template": {"spec": {"template": template}}}]},
            },
            ["spec.replicatedJobs[0].template.spec.template"],
        ),
        (
            {
                "kind": "LeaderWorkerSet",
                "spec": {
                    "leaderWorkerTemplate": {"leaderTemplate": template, "workerTemplate": template}
                },
            },
            [
                "spec.leaderWorkerTemplate.leaderTemplate",
                "spec.leaderWorkerTemplate.workerTemplate",
            ],
        ),
        (
            {
                "kind": "RayCluster",
                "spec": {
                    "headGroupSpec": {"template": template},
                    "workerGroupSpecs": [{"replicas": 4, "template": template}],
                },
            },
            ["spec.headGroupSpec.template", "spec.workerGroupSpecs[0].template"],
        ),
        ({"kind": "ConfigMap", "data": {"template": "x"}}, []),
    ]
    for obj, expected in cases:
        assert [s.template for s in pod_sites(obj)] == expected, obj["kind"]
    ray = pod_sites(cases[4][0])
    assert ray[1].replicas == 4
    assert pod_sites(cases[0][0])[0].replicas is None  # a DaemonSet runs one per node


def test_a_check_step_gets_the_migration() -> None:
    seen: list[Migration] = []

    def check(m: Migration) -> list[CheckRow]:
        seen.append(m)
        return [CheckRow(s.label, "fits", "fits") for s in m.sites]

    m = migrate([CLUSTER, str(HERE / "job.yaml")], check=check)
    assert seen == [m]
    assert m.checks == [CheckRow("Job ml/finetune", "fits", "fits")]
    assert any(type(o).__name__ == "ResourceSlice" for o, _ in m.cluster)


# --- the command line ----------------------------------------------------------------------------


def test_cli_outputs(run_cli: Any) -> None:
    args = ["migrate", "-f", CLUSTER, "-f", str(HERE / "job.yaml"), "-f", str(HERE / "mig.yaml")]
    table = run_cli(*args)
    assert table.code == 0, table.err
    assert "gpu-4-numa" in table.out and "matchAttribute" in table.out
    assert "ResourceClaimTemplates" in table.out
    manifests = run_cli(*args, "-o", "yaml")
    assert manifests.code == 0
    docs = _docs(manifests.out)
    assert not any(d["kind"] in ("Node", "ResourceSlice", "DeviceClass") for d in docs)
    assert sum(d["kind"] == "ResourceClaimTemplate" for d in docs) == 3
    assert manifests.out.startswith("apiVersion: resource.k8s.io/v1\n")
    assert "# Notebooks on MIG slices" in manifests.out
    patch = run_cli(*args, "-o", "diff")
    assert patch.code == 0
    assert "+++ b/" in patch.out and "-              nvidia.com/gpu: 4\n" in patch.out


BAD_INPUT = [
    (["unknown-resource.yaml"], None, "limits[amd.com/gpu]: unknown device resource 'amd.com/gpu'"),
    (["conflicting-requests.yaml"], None, "requests (1) and limits (2) differ"),
    (["fractional-count.yaml"], None, "must be a whole number, got '500m'"),
    (["too-many-devices.yaml"], None, "asks for 40 devices"),
    (["unknown-resource.yaml"], "mapping-unparsable.yaml", "invalid YAML at line 3"),
    (["unknown-resource.yaml"], "mapping-unknown-field.yaml", "unknown field deviceClass"),
    (["unknown-resource.yaml"], "mapping-bad-cel.yaml", "selectors[0]: CEL compile error"),
    (["unknown-resource.yaml"], "mapping-bad-class.yaml", "deviceClassName: invalid value"),
]


@pytest.mark.parametrize(("inputs", "mapping", "fragment"), BAD_INPUT)
@pytest.mark.parametrize("output", ["yaml", "diff", "table"])
def test_bad_input_exits_2_and_writes_nothing(
    run_cli: Any, inputs: list[str], mapping: str | None, fragment: str, output: str
) -> None:
    # A good file first: nothing of it may be printed either.
    args = ["migrate", "-f", str(HERE / "job.yaml"), "-o", output]
    for name in inputs:
        args += ["-f", str(HERE / "bad" / name)]
    if mapping:
        args += ["--mapping", str(HERE / "bad" / mapping)]
    result: Run = run_cli(*args)
    assert result.code == 2, (result.out, result.err)
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.err
    source = mapping or inputs[0]
    assert f"bad/{source}: " in lines[0]
    assert fragment in lines[0]


def test_missing_mapping_file(run_cli: Any) -> None:
    result = run_cli("migrate", "-f", str(HERE / "job.yaml"), "--mapping", "/no/such/map.yaml")
    assert result.code == 2 and result.out == ""
    assert result.err.startswith("error: /no/such/map.yaml: --mapping: ")


def test_manifests_are_required(run_cli: Any) -> None:
    result = run_cli("migrate", "--topology", "none")
    assert result.code == 2 and result.out == ""
    assert result.err == "error: -f: give the manifests to migrate with -f\n"


def test_cluster_from_a_live_context(run_cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from draplan.cli import cmd_migrate
    from draplan.sources import load_objects

    asked: list[Any] = []

    def fake_load_input(filenames: tuple[str, ...], *, live: Any = None) -> list[Any]:
        asked.append((filenames, live))
        return load_objects([CLUSTER])

    monkeypatch.setattr(cmd_migrate, "load_input", fake_load_input)
    job = str(HERE / "job.yaml")
    result = run_cli("migrate", "-f", job, "--context", "prod", "-o", "yaml")
    assert result.code == 0, result.err
    assert "matchAttribute: gpu.nvidia.com/numa" in result.out
    assert asked and asked[0][0] == () and asked[0][1].context == "prod"
    assert "matchAttribute" not in run_cli("migrate", "-f", job, "-o", "yaml").out


def test_line_endings_and_a_missing_last_newline(tmp_path: Path) -> None:
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
        "    resources:\n      requests:\n        nvidia.com/gpu: 2"
    )
    crlf = tmp_path / "crlf.yaml"
    crlf.write_bytes(pod.replace("\n", "\r\n").encode() + b"\r\n")
    bare = tmp_path / "bare.yaml"
    bare.write_text(pod)
    plain = tmp_path / "plain.yaml"
    plain.write_bytes(b"apiVersion: v1\r\nkind: Service\r\nmetadata: {name: s}\r\n")
    m = migrate([str(crlf), str(bare), str(plain)])
    assert m.files[2].text.encode() == plain.read_bytes()  # untouched, CRLF and all
    crlf_out = m.files[0].text
    assert crlf_out.count("\r\n") == crlf_out.count("\n")
    assert not m.files[1].text.endswith("\n")
    for f in m.files[:2]:
        (pod_doc,) = [d for d in _docs(f.text) if d["kind"] == "Pod"]
        assert pod_doc["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == "gpu-2"
        assert pod_doc["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
        assert not f.reformatted


def test_migrating_twice_changes_nothing(corpus: Migration, tmp_path: Path) -> None:
    paths = []
    for i, f in enumerate(corpus.files):
        if not f.cluster_only:
            path = tmp_path / f"{i}.yaml"
            path.write_text(f.text)
            paths.append(str(path))
    again = migrate([CLUSTER, *paths], mapping_file=MAPPING)
    assert again.sites == [] and again.templates == []
    assert all(not f.changed for f in again.files)
