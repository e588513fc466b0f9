"""Malformed input: exit code 2 and one line naming the file, the object, the field path.

The corpus is `tests/data/bad/`; `expected.yaml` maps each file to a fragment of its line.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA, Run

BAD = DATA / "bad"
EXPECTED: dict[str, str] = yaml.safe_load((BAD / "expected.yaml").read_text())
DRAPLAN = Path(sys.executable).with_name("draplan")

GOOD_NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n"


def assert_bad_input(result: Run, source: str, fragment: str) -> str:
    """Exit 2, nothing on stdout, one line on stderr: `error: SOURCE: ...FRAGMENT...`."""
    assert result.code == 2, (result.out, result.err)
    assert "Traceback" not in result.err
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    line = lines[0]
    assert line.startswith(f"error: {source}: "), line
    assert fragment in line, line
    return line


def test_corpus_is_large_and_matches_expected() -> None:
    files = {p.name for p in BAD.iterdir() if p.is_file() and p.name != "expected.yaml"}
    assert len(EXPECTED) >= 30
    assert files == set(EXPECTED)
    assert all(isinstance(v, str) and v for v in EXPECTED.values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_file(name: str, run_cli: Any) -> None:
    path = str(BAD / name)
    assert_bad_input(run_cli("validate", "-f", path), path, EXPECTED[name])


@pytest.mark.parametrize(
    "name",
    [
        "nested-10000-levels.yaml",
        "not-utf8.yaml",
        "class-cel-does-not-compile.yaml",
        "capacity-invalid-quantity.yaml",
    ],
)
def test_bad_file_through_the_installed_command(name: str) -> None:
    # A separate process: its own stack depth and the real console script and exit code.
    path = str(BAD / name)
    proc = subprocess.run(
        [str(DRAPLAN), "validate", "-f", path], capture_output=True, text=True, timeout=60
    )
    assert_bad_input(Run(proc.returncode, proc.stdout, proc.stderr), path, EXPECTED[name])


def test_committed_nesting_file_is_10000_levels() -> None:
    text = (BAD / "nested-10000-levels.yaml").read_text().strip()
    assert text == "[" * 10_000 + "]" * 10_000


@pytest.mark.parametrize(
    ("suffix", "text"),
    [
        (".json", '{"a": ' * 10_000 + "1" + "}" * 10_000),
        (".json", "[" * 10_000 + "]" * 10_000),
        (".yaml", "{a: " * 10_000 + "1" + "}" * 10_000),
        (".yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  x: " + "[" * 10_000 + "]" * 10_000),
    ],
)
def test_deeply_nested_generated(suffix: str, text: str, tmp_path: Path, run_cli: Any) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text(text)
    line = assert_bad_input(run_cli("validate", "-f", str(path)), str(path), "")
    assert "nested too deeply" in line or "exceeded maximum nesting depth" in line


def test_cel_compile_error_also_stops_allocate(run_cli: Any) -> None:
    path = str(BAD / "claim-cel-does-not-compile.yaml")
    result = run_cli("allocate", "-f", path, "--node", "node-1", "-o", "json")
    assert_bad_input(result, path, EXPECTED["claim-cel-does-not-compile.yaml"])


def test_cel_compile_error_in_template(tmp_path: Path, run_cli: Any) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(
        "apiVersion: resource.k8s.io/v1\n"
        "kind: ResourceClaimTemplate\n"
        "metadata: {name: gpu-template, namespace: default}\n"
        "spec:\n"
        "  spec:\n"
        "    devices:\n"
        "      requests:\n"
        "      - name: gpu\n"
        "        exactly:\n"
        "          deviceClassName: gpu.example.com\n"
        "          selectors:\n"
        "          - cel: {expression: size(device.driver)}\n"
    )
    # `size(device.driver)` compiles but is an int, not a bool.
    assert_bad_input(
        run_cli("validate", "-f", str(path)),
        str(path),
        'ResourceClaimTemplate "gpu-template": '
        "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: CEL compile error: "
        "must evaluate to bool",
    )


def test_the_bad_file_is_named_among_good_ones(tmp_path: Path, run_cli: Any) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD_NODE)
    bad = str(BAD / "attribute-two-types.yaml")
    result = run_cli("validate", "-f", str(good), "-f", bad)
    assert_bad_input(result, bad, EXPECTED["attribute-two-types.yaml"])


def test_duplicate_across_files_names_both(tmp_path: Path, run_cli: Any) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(GOOD_NODE)
    second.write_text(GOOD_NODE)
    result = run_cli("validate", "-f", str(first), "-f", str(second))
    assert_bad_input(result, str(second), f'Node "node-1": duplicate object (also in {first})')


def test_bad_input_on_stdin(monkeypatch: pytest.MonkeyPatch, run_cli: Any) -> None:
    text = (BAD / "slice-duplicate-device-name.yaml").read_text()
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    result = run_cli("validate", "-f", "-")
    assert_bad_input(result, "<stdin>", EXPECTED["slice-duplicate-device-name.yaml"])


def test_missing_file_and_empty_directory(tmp_path: Path, run_cli: Any) -> None:
    missing = str(tmp_path / "nope.yaml")
    assert_bad_input(run_cli("validate", "-f", missing), missing, "no such file or directory")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a manifest")
    empty = str(tmp_path / "empty")
    assert_bad_input(run_cli("validate", "-f", empty), empty, "directory holds no .yaml")


def test_empty_kind_list_is_not_an_error(tmp_path: Path, run_cli: Any) -> None:
    # `kubectl get resourceclaims -A -o yaml` with no claims prints an empty List.
    path = tmp_path / "claims.yaml"
    path.write_text("apiVersion: v1\nitems: []\nkind: List\nmetadata: {resourceVersion: ''}\n")
    node = tmp_path / "node.yaml"
    node.write_text(GOOD_NODE)
    result = run_cli("validate", "-f", str(path), "-f", str(node), "-o", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["objects"] == 1


# --- errors found after loading still name the file, the object and the field (issue 19) ---

GPU_NODE = """\
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes: {healthy: {bool: true}}
  - name: gpu-1
"""
GPU_CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.attributes['gpu.example.com'].healthy == true"}
"""


def _claim(class_name: str, count: int = 1) -> str:
    return (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
        "metadata: {name: c, namespace: default}\nspec:\n  devices:\n    requests:\n"
        f"    - name: gpu\n      exactly: {{deviceClassName: {class_name}, count: {count}}}\n"
    )


def _files(tmp_path: Path, **texts: str) -> dict[str, str]:
    out = {}
    for name, text in texts.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        out[name] = str(path)
    return out


def test_allocate_unknown_class_names_the_claim_file(tmp_path: Path, run_cli: Any) -> None:
    f = _files(tmp_path, cluster=GPU_NODE, claim=_claim("no-such-class"))
    result = run_cli("allocate", "-f", f["cluster"], "-f", f["claim"], "--node", "node-1")
    assert_bad_input(
        result,
        f["claim"],
        'ResourceClaim "default/c": spec.devices.requests[0].exactly.deviceClassName: '
        'device class "no-such-class" does not exist',
    )


def test_allocate_cel_runtime_error_names_the_class_file(tmp_path: Path, run_cli: Any) -> None:
    # gpu-1 has no `healthy` attribute: first-fit evaluates it before finding two devices.
    f = _files(tmp_path, cluster=GPU_NODE, classes=GPU_CLASS, claim=_claim("gpu.example.com", 2))
    args = ["-f", f["cluster"], "-f", f["classes"], "-f", f["claim"], "--node", "node-1"]
    result = run_cli("allocate", *args, "--device-order", "first-fit")
    line = assert_bad_input(
        result,
        f["classes"],
        'DeviceClass "gpu.example.com": spec.selectors[0].cel.expression: CEL runtime error',
    )
    assert "gpu-1" in line


def test_allocate_more_than_32_devices_names_the_claim_file(tmp_path: Path, run_cli: Any) -> None:
    f = _files(tmp_path, cluster=GPU_NODE, claim=_claim("gpu.example.com", 33))
    f.update(_files(tmp_path, classes=GPU_CLASS.replace("healthy == true", "healthy")))
    result = run_cli(
        "allocate", "-f", f["cluster"], "-f", f["classes"], "-f", f["claim"], "--node", "node-1"
    )
    assert_bad_input(
        result,
        f["claim"],
        'ResourceClaim "default/c": spec.devices.requests: number of requested devices 33 '
        "exceeds the claim limit of 32",
    )


def test_claim_made_from_a_template_is_reported_as_the_template(tmp_path: Path) -> None:
    from draplan.allocator import AllocationError, allocate
    from draplan.api.meta import ObjectMeta
    from draplan.api.resource_v1 import ResourceClaim, ResourceClaimTemplate
    from draplan.cluster.state import ClusterState
    from draplan.sources import load_objects

    template = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
        "metadata: {name: t, namespace: default}\nspec:\n  spec:\n    devices:\n      requests:\n"
        "      - name: gpu\n        exactly: {deviceClassName: no-such-class}\n"
    )
    f = _files(tmp_path, cluster=GPU_NODE, template=template)
    state = ClusterState.from_objects(load_objects([f["cluster"], f["template"]]))
    made = state.claim_templates[("default", "t")]
    assert isinstance(made, ResourceClaimTemplate)
    claim = ResourceClaim(
        metadata=ObjectMeta(name="p-gpu-x", namespace="default"), spec=made.spec.spec
    )
    with pytest.raises(AllocationError) as caught:
        allocate(state, state.nodes["node-1"], [claim])
    assert str(caught.value) == (
        f'{f["template"]}: ResourceClaimTemplate "default/t": '
        "spec.spec.devices.requests[0].exactly.deviceClassName: "
        'device class "no-such-class" does not exist'
    )


SCENARIO_JOBS = """\
apiVersion: draplan.io/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  policies: [dra]
  workload:
    jobs:
    - name: j1
      arrivalSeconds: 0
      durationSeconds: 60
      objects:
      - apiVersion: resource.k8s.io/v1
        kind: ResourceClaimTemplate
        metadata: {name: t, namespace: default}
        spec:
          spec:
            devices:
              requests:
              - name: gpu
                exactly:
                  deviceClassName: gpu.nvidia.com
                  selectors:
                  - cel: {expression: "EXPRESSION"}
      - apiVersion: v1
        kind: Pod
        metadata: {name: p, namespace: default}
        spec:
          containers: [{name: c, image: x}]
          resourceClaims: [{name: g, resourceClaimTemplateName: t}]
    - name: j2
      arrivalSeconds: 5
      durationSeconds: 60
      objects:
      - apiVersion: v1
        kind: Pod
        metadata: {name: POD, namespace: default}
        spec:
          containers: [{name: c, image: x}]
"""
REALISTIC = str(DATA / "realistic" / "cluster.yaml")


@pytest.mark.parametrize("command", ["simulate", "validate"])
def test_scenario_job_cel_compile_error(command: str, tmp_path: Path, run_cli: Any) -> None:
    text = SCENARIO_JOBS.replace("EXPRESSION", "device.driver +").replace("POD", "q")
    f = _files(tmp_path, scenario=text)
    assert_bad_input(
        run_cli(command, "-f", REALISTIC, "-f", f["scenario"]),
        f["scenario"],
        'Scenario "s": spec.workload.jobs[0].objects[0].spec.spec.devices.requests[0].exactly'
        ".selectors[0].cel.expression: CEL compile error",
    )


def test_scenario_job_duplicate_object(tmp_path: Path, run_cli: Any) -> None:
    text = SCENARIO_JOBS.replace("EXPRESSION", "true").replace("POD", "p")
    f = _files(tmp_path, scenario=text)
    assert_bad_input(
        run_cli("simulate", "-f", REALISTIC, "-f", f["scenario"]),
        f["scenario"],
        'Scenario "s": spec.workload.jobs[1].objects[0]: '
        f"duplicate object (also in {f['scenario']})",
    )


def test_simulate_duplicate_across_files_names_both(tmp_path: Path, run_cli: Any) -> None:
    text = SCENARIO_JOBS.replace("EXPRESSION", "true").replace("POD", "q")
    f = _files(tmp_path, scenario=text, a="apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n")
    f.update(_files(tmp_path, b="apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n"))
    result = run_cli("simulate", "-f", f["scenario"], "-f", f["a"], "-f", f["b"])
    assert_bad_input(result, f["b"], f'Namespace "ml": duplicate object (also in {f["a"]})')


@pytest.mark.parametrize("command", ["scale", "why", "simulate"])
def test_node_pool_slice_error_stops_every_command_at_load(
    command: str, tmp_path: Path, run_cli: Any
) -> None:
    name = "nodepool-slice-bad-semver.yaml"
    path = str(BAD / name)
    assert_bad_input(run_cli(command, "-f", REALISTIC, "-f", path), path, EXPECTED[name])


# --- migrate reads through the same parser and header checks ---------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "nul-byte.yaml",
        "api-version-is-a-list.yaml",
        "duplicate-map-key.yaml",
        "duplicate-json-key.json",
        "list-billion-laughs.yaml",
        "alias-cycle.yaml",
        "list-item-is-a-list.yaml",
        "kind-is-a-map.yaml",
    ],
)
def test_migrate_bad_input(name: str, run_cli: Any) -> None:
    path = str(BAD / name)
    assert_bad_input(run_cli("migrate", "-f", path), path, EXPECTED[name])


def test_migrate_nul_byte_in_a_later_document(tmp_path: Path, run_cli: Any) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(GOOD_NODE + "---\n" + GOOD_NODE.replace("node-1", "node\x00-2"))
    assert_bad_input(
        run_cli("migrate", "-f", str(path)),
        str(path),
        "invalid YAML at line 7 column 22: unacceptable character #x0000",
    )


def test_validate_builds_a_node_of_every_pool_as_scale_would(tmp_path: Path, run_cli: Any) -> None:
    pool = (
        "apiVersion: draplan.io/v1alpha1\nkind: NodePool\nmetadata: {name: copy}\n"
        "spec: {maxNodes: 2, fromNode: no-such-node}\n"
    )
    f = _files(tmp_path, pool=pool)
    assert_bad_input(
        run_cli("validate", "-f", f["pool"]),
        f["pool"],
        "NodePool \"copy\": spec.fromNode: fromNode 'no-such-node' is not in the input",
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            "h100: 98.32\nh100: 1\n",
            'invalid YAML at line 2 column 1: key "h100" already set in map',
        ),
        ("h100: 98\x0032\n", "invalid YAML at line 1 column 9: unacceptable character #x0000"),
        (
            "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
            + "".join(
                f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n"
                for p, c in zip("abcde", "bcdef", strict=True)
            ),
            "document contains excessive aliasing",
        ),
    ],
)
def test_prices_file_reads_through_the_common_parser(
    text: str, fragment: str, tmp_path: Path, run_cli: Any
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(text)
    result = run_cli("scale", "-f", REALISTIC, "--prices", str(prices))
    assert_bad_input(result, str(prices), fragment)


@pytest.mark.parametrize(
    ("item", "fragment"),
    [
        ("[1, 2]", "List: items[1]: expected an object, got list"),
        ('"node-2"', "List: items[1]: expected an object, got str"),
        (
            '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "Node_2"}}',
            'Node "Node_2": metadata.name: invalid value "Node_2"',
        ),
    ],
)
def test_json_dump_items_are_checked_on_the_fast_path(
    item: str, fragment: str, tmp_path: Path, run_cli: Any
) -> None:
    path = tmp_path / "dump.json"
    node = '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}'
    path.write_text('{"apiVersion": "v1", "kind": "List", "items": [' + node + ", " + item + "]}")
    assert_bad_input(run_cli("validate", "-f", str(path)), str(path), fragment)
