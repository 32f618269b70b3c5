"""tensorgrad.viz.to_json and explore without a browser: the JSON against its schema and the
graph, NaN/Inf origins, the expansion states laid out, and the page being self-contained."""
import base64
import gzip
import html
import json
import re
import shutil

import pytest

import tensorgrad as tg
from tensorgrad import nn, viz
from tensorgrad.viz.explore import _states

pytest.importorskip("graphviz")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's `dot` binary is not installed "
                                      "(apt-get install graphviz)")


def micrograd():
    a, b = tg.tensor(2.0, requires_grad=True), tg.tensor(-3.0, requires_grad=True)
    c, f = tg.tensor(10.0, requires_grad=True), tg.tensor(-2.0, requires_grad=True)
    return (a * b + c) * f, {"a": a, "b": b, "c": c, "f": f}


def mlp_loss():
    tg.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
    return tg.cross_entropy(mlp(tg.randn(4, 2)), tg.tensor([0, 1, 1, 0])), mlp


def by_name(data):
    return {n["name"]: n for n in data["nodes"]}


def test_json_follows_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    for loss, params in (micrograd(), mlp_loss()):
        data = json.loads(viz.to_json(loss, params))
        jsonschema.validate(data, viz.SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "nodes": [{"id": "n0"}]}, viz.SCHEMA)


def test_scalar_expression_as_json():
    loss, params = micrograd()
    data = json.loads(viz.to_json(loss, params))
    nodes = by_name(data)
    assert sorted(nodes) == ["a", "add", "b", "c", "f", "mul"]  # two muls share a name
    assert data["title"] == "3 ops, 4 parameters" and data["modules"] == []
    assert nodes["a"]["stats"]["mean"] == 2.0 and nodes["a"]["grad"]["norm"] == 6.0
    assert nodes["b"]["grad"]["norm"] == 4.0 and nodes["f"]["grad"]["norm"] == 4.0
    root = next(n for n in data["nodes"] if n["id"] == data["root"])
    assert root["stats"]["min"] == -8.0 and root["grad"]["norm"] == 1.0
    order = [n["id"] for n in data["nodes"]]
    assert all(order.index(a) < order.index(b) for a, b in data["edges"])  # inputs first
    add = nodes["add"]
    assert [by_id(data, i["node"])["name"] for i in add["inputs"]] == ["mul", "c"]
    assert all(t.grad is None for t in params.values())  # .grad is left alone


def by_id(data, node_id):
    return next(n for n in data["nodes"] if n["id"] == node_id)


def test_mlp_json_has_modules_shapes_and_devices():
    loss, mlp = mlp_loss()
    data = json.loads(viz.to_json(loss, mlp, values=False, grads=False))
    assert [(m["path"], m["class"], m["level"]) for m in data["modules"]] == [
        ("0", "Linear", 1), ("1", "ReLU", 1), ("2", "Linear", 1)]
    weight = by_name(data)["0.weight"]
    assert weight["kind"] == "param" and weight["module"] == "0" and weight["shape"] == [8, 2]
    assert weight["stats"]["numel"] == 16 and weight["grad"] is None  # a leaf's value is kept
    loss, params = micrograd()
    kept = json.loads(viz.to_json(loss, params, values=False))
    assert [n["stats"] is None for n in kept["nodes"] if n["kind"] == "op"] == [
        True, False, False]  # a * b feeds add, whose gradient rule reads no input: not kept
    assert all(n["stats"] for n in json.loads(viz.to_json(loss, params))["nodes"])
    linear = next(n for n in data["nodes"] if n["name"] == "linear" and n["module"] == "0")
    assert [i["shape"] for i in linear["inputs"]] == [[4, 2], [8, 2], [8]]
    assert {n["device"] for n in data["nodes"]} == {"cpu"}
    assert data["parameters"] == 2 * 8 + 8 + 8 * 2 + 2


def test_json_on_every_device(device):
    x = tg.tensor([[1.0, -2.0], [3.0, float("inf")]], device=device)
    w = tg.tensor([0.5, 2.0], device=device, requires_grad=True)
    y = (x * w).sum()
    data = json.loads(viz.to_json(y, {"x": x, "w": w}))
    nodes = by_name(data)
    assert {n["device"] for n in data["nodes"]} == {str(tg.device(device))}
    assert nodes["x"]["stats"] == {"numel": 4, "nan": 0, "inf": 1, "min": -2.0, "max": 3.0,
                                   "mean": 2 / 3, "std": pytest.approx(2.0548046676563256)}
    assert nodes["w"]["grad"] == {"norm": None, "nan": 0, "inf": 1}  # d/dw = column sums of x
    assert [by_id(data, i)["name"] for i in data["nonfinite"]["forward"]] == ["x"]


def test_output_that_is_a_leaf_as_json():
    w = tg.randn(2, requires_grad=True)
    data = json.loads(viz.to_json(w, {"w": w}))
    assert [n["name"] for n in data["nodes"]] == ["w"] and data["edges"] == []
    assert data["root"] == data["nodes"][0]["id"] and data["nodes"][0]["grad"] is None


def test_first_nan_forward_and_backward():
    x = tg.tensor([1.0, 0.0], requires_grad=True)
    with pytest.warns(RuntimeWarning):  # NumPy's own warnings about log(0) and 0 * inf
        y = (x.log() * x).sum()
        data = json.loads(viz.to_json(y, {"x": x}))
    names = {n["id"]: n["name"] for n in data["nodes"]}
    assert [names[i] for i in data["nonfinite"]["forward"]] == ["log"]  # -inf from log(0)
    assert {names[i] for i in data["nonfinite"]["backward"]} == {"log", "mul"}
    log = by_name(data)["log"]
    assert log["nonfinite"] and log["stats"]["inf"] == 1 and log["stats"]["min"] == 0.0
    assert not by_name(data)["x"]["nonfinite"] and by_name(data)["x"]["grad"]["nan"] == 1


def test_states_cover_every_combination_of_a_small_model():
    modules = [{"path": p, "parent": "", "level": 1} for p in "abcd"]
    assert len(_states(modules, max_states=64)) == 2 ** 4
    nested = [{"path": "b", "parent": "", "level": 1}, {"path": "b.x", "parent": "b", "level": 2},
              {"path": "c", "parent": "", "level": 1}]
    states = set(_states(nested, max_states=0))  # depth levels and each module alone
    assert states == {frozenset(), frozenset({"b", "c"}), frozenset({"b", "b.x", "c"}),
                      frozenset({"b"}), frozenset({"b", "b.x"}), frozenset({"c"})}


@needs_dot
def test_explorer_page_is_self_contained(tmp_path):
    loss, mlp = mlp_loss()
    path = viz.explore(loss, mlp, str(tmp_path / "sub" / "mlp.html"))
    text = open(path, encoding="utf-8").read()
    assert not re.search(r"<script[^>]+src=|<link|@import|https?://(?!www\.w3\.org)", text)
    page = json.loads(re.search(r'id="graph-data">(.*?)</script>', text, re.S).group(1))
    assert page["graph"] == json.loads(viz.to_json(loss, mlp))
    assert len(page["svgs"]) == 2 ** 3  # every combination of the three open modules
    closed, opened = (html.unescape(gzip.decompress(base64.b64decode(page["svgs"][key]))
                                    .decode()) for key in ("", "0"))
    assert {"m-0", "m-1", "m-2"} <= set(re.findall(r'<g id="([^"]+)" class="node"', closed))
    assert 'id="c-0"' in opened and 'id="m-0"' not in opened
    weight = by_name(page["graph"])["0.weight"]["id"]
    assert f'<g id="{weight}" class="node"' in opened


def test_explore_checks_its_input():
    with pytest.raises(TypeError, match="explore: expected a Tensor"):
        viz.explore([1.0], path="unused.html")
    loss, params = micrograd()
    with pytest.raises(TypeError, match="pass the file as path="):
        viz.explore(loss, "graph.html")
