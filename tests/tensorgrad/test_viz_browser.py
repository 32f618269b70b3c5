"""The explorer in a real browser (headless Chromium driven by selenium): open the pages written
for a scalar expression, an MLP and GPT-mini, open and close modules, read a tooltip, toggle the
backward view, search, and save a screenshot.

Needs Debian's `chromium` and `chromium-driver` (apt-get install chromium chromium-driver) and
`pip install selenium`; skipped with the reason when any is absent. TENSORGRAD_SCREENSHOT_DIR=docs
writes the docs' picture there (explore.png)."""
import os
import shutil
import warnings

import pytest

import tensorgrad as tg
from tensorgrad import nn, viz

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                "(pip install selenium)")
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                       reason="Chromium and its driver are not installed "
                              "(apt-get install chromium chromium-driver)"),
    pytest.mark.skipif(shutil.which("dot") is None,
                       reason="Graphviz's `dot` binary is not installed "
                              "(apt-get install graphviz)"),
]


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def load(browser, path):
    """Open the page and wait until it has inflated its drawings and shown the first."""
    browser.get("file://" + path)
    WebDriverWait(browser, 60).until(
        lambda b: b.execute_script("return document.body.dataset.ready === 'true'"))


def nodes(browser):
    return browser.find_elements(By.CSS_SELECTOR, "#graph g.node")


def titled(browser, title):
    """The id of the drawn node whose first line is `title`."""
    return browser.execute_script(
        "return [...document.querySelectorAll('#graph g.node')].find(g => "
        "g.querySelector('text').textContent === arguments[0]).id", title)


def tooltip_of(browser, element_id):
    ActionChains(browser).move_to_element(browser.find_element(By.ID, element_id)).perform()
    tip = browser.find_element(By.ID, "tooltip")
    assert tip.is_displayed()
    return tip.text


def test_scalar_expression(browser, tmp_path):
    a, b = tg.tensor(2.0, requires_grad=True), tg.tensor(-3.0, requires_grad=True)
    c, f = tg.tensor(10.0, requires_grad=True), tg.tensor(-2.0, requires_grad=True)
    loss = (a * b + c) * f
    load(browser, viz.explore(loss, {"a": a, "b": b, "c": c, "f": f},
                              str(tmp_path / "scalar.html")))
    assert len(nodes(browser)) == 7
    assert browser.find_element(By.ID, "heading").text == "graph: 3 ops, 4 parameters"
    text = tooltip_of(browser, titled(browser, "a"))
    assert "param a" in text and "grad norm 6.000" in text and "mean 2.000" in text
    browser.find_element(By.ID, "search").send_keys("mul")
    assert browser.find_element(By.ID, "matches").text == "2 found"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph g.node.match")) == 2
    assert browser.get_log("browser") == []


def test_nan_and_where_it_began(browser, tmp_path):
    x = tg.tensor([1.0, 0.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's: log(0), 0 * inf
        y = (x.log() * x).sum()
        load(browser, viz.explore(y, {"x": x}, str(tmp_path / "nan.html")))
    banner = browser.find_element(By.ID, "nonfinite")
    assert banner.is_displayed() and "log (forward)" in banner.text
    title = lambda n: n.text.split("\n")[0]
    red = browser.find_elements(By.CSS_SELECTOR, "#graph g.node.nonfinite")
    assert sorted(map(title, red)) == ["log", "mul", "sum"]
    origins = browser.find_elements(By.CSS_SELECTOR, "#graph g.node.origin")
    assert sorted(map(title, origins)) == ["log", "mul"]  # mul: its gradient rule, 0 * -inf
    assert "NaN/Inf first appears here (forward)" in tooltip_of(browser, titled(browser, "log"))


def test_mlp(browser, tmp_path):
    tg.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
    loss = tg.cross_entropy(mlp(tg.randn(8, 2)), tg.randint(0, 2, (8,)))
    load(browser, viz.explore(loss, mlp, str(tmp_path / "mlp.html")))
    assert len(nodes(browser)) == 4  # three module boxes and the loss
    assert "module 0 (Linear)\n1 ops, 48 parameters" in tooltip_of(browser, "m-0")
    browser.find_element(By.ID, "m-0").click()
    ids = {n.get_attribute("id") for n in nodes(browser)}
    assert "m-0" not in ids and {"m-1", "m-2"} <= ids
    assert {"0.weight", "0.bias", "linear"} <= {n.text.split("\n")[0] for n in nodes(browser)}
    browser.find_element(By.ID, "m-2").click()  # both open: every combination is laid out
    assert len(nodes(browser)) == len(ids) - 1 + 3  # the box of 2 becomes its three nodes
    assert browser.find_element(By.ID, "status").text == ""
    browser.find_element(By.CSS_SELECTOR, "g.cluster[id='c-0'] > text").click()  # close 0
    assert "m-0" in {n.get_attribute("id") for n in nodes(browser)}
    browser.find_element(By.ID, "backward").click()
    edges = browser.find_elements(By.CSS_SELECTOR, "#graph g.edge path")
    assert edges and all(e.value_of_css_property("stroke").startswith("rgb(") and
                         e.value_of_css_property("stroke") != "rgb(85, 85, 85)" for e in edges)


def test_gpt_mini(browser, tmp_path):
    from tensorgrad.models import GPT, GPTConfig
    tg.manual_seed(0)
    config = GPTConfig.mini()
    gpt = GPT(config)
    ids = tg.randint(0, config.vocab_size, (2, 16))
    _, loss = gpt(ids, ids)
    load(browser, viz.explore(loss, gpt, str(tmp_path / "gpt.html")))
    top = {n.get_attribute("id") for n in nodes(browser)}
    assert {f"m-blocks.{i}" for i in range(4)} <= top
    browser.find_element(By.ID, "m-blocks.1").click()
    opened = {n.get_attribute("id") for n in nodes(browser)}
    assert "m-blocks.1.self_attn" in opened and "m-blocks.1" not in opened
    browser.find_element(By.ID, "m-blocks.1.self_attn").click()
    text = browser.find_element(By.ID, "graph").text
    assert "scaled_dot_product_attention" in text and "blocks.1.self_attn.qkv_proj" in text
    browser.find_element(By.ID, "m-blocks.2").click()  # not every combination is laid out:
    clusters = {c.get_attribute("id") for c in browser.find_elements(By.CSS_SELECTOR,
                                                                     "#graph g.cluster")}
    assert {"c-blocks.1", "c-blocks.2"} <= clusters  # the nearest that is keeps blocks.1 open
    if "c-blocks.1.self_attn" not in clusters:
        assert browser.find_element(By.ID, "status").text.startswith(
            "closed blocks.1.self_attn: that combination")
    browser.find_element(By.CSS_SELECTOR, "g.cluster[id='c-blocks.2'] > text").click()
    clusters = {c.get_attribute("id") for c in browser.find_elements(By.CSS_SELECTOR,
                                                                     "#graph g.cluster")}
    assert "c-blocks.1" in clusters and "c-blocks.2" not in clusters
    for box in browser.find_elements(By.ID, "m-blocks.1.self_attn"):  # closed on the way
        box.click()
    tip = tooltip_of(browser, titled(browser, "scaled_dot_product_attention"))
    assert "module  blocks.1.self_attn" in tip and "in 0" in tip and "(2, 4, 16, 32)" in tip
    assert "std" in tip and "NaN 0  Inf 0" in tip
    browser.find_element(By.ID, "backward").click()
    weight = next(o for o in browser.find_elements(By.CSS_SELECTOR, "#param option")
                  if o.text == "blocks.1.ffn.up_proj.weight")
    weight.click()  # its path to the loss: lit, the rest dimmed
    lit = browser.find_elements(By.CSS_SELECTOR, "#graph g.node.onpath")
    assert lit and len(lit) < len(nodes(browser))
    assert "cross_entropy" in {n.text.split("\n")[0] for n in lit}
    search = browser.find_element(By.ID, "search")
    search.send_keys("blocks.3.ffn")
    assert browser.find_element(By.ID, "matches").text.endswith("found")
    results = browser.find_elements(By.CSS_SELECTOR, "#results a")
    assert results and all("blocks.3.ffn" in r.text for r in results)
    results[0].click()  # opens the module holding it
    assert browser.find_elements(By.CSS_SELECTOR, "#graph g.cluster[id='c-blocks.3']")
    browser.execute_script("const s = arguments[0]; s.value = '';"
                           "s.dispatchEvent(new Event('input'))", search)
    assert not browser.find_elements(By.CSS_SELECTOR, "#results li")
    browser.find_element(By.CSS_SELECTOR, "#param option[value='']").click()
    assert not browser.find_elements(By.CSS_SELECTOR, "#graph g.node.onpath")
    browser.find_element(By.CSS_SELECTOR, "#depth option[value='1']").click()
    browser.find_element(By.ID, "m-blocks.1").click()
    browser.find_element(By.ID, "m-blocks.1.ffn").click()
    tooltip_of(browser, titled(browser, "gelu"))
    folder = os.environ.get("TENSORGRAD_SCREENSHOT_DIR", str(tmp_path))
    assert browser.save_screenshot(os.path.join(folder, "explore.png"))
    assert browser.get_log("browser") == []
