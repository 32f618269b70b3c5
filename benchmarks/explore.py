"""tensorgrad.viz.explore: the time to write an explorer, its size, and the time to open it and to
open a block in headless Chromium, for a scalar expression, an MLP, GPT-mini and GPT-2 small.

    .venv/bin/python benchmarks/explore.py           # all four (GPT-2 small: about a minute)
    .venv/bin/python benchmarks/explore.py --quick   # without GPT-2 small

The browser columns need Debian's chromium and chromium-driver and `pip install selenium`; without
them they read "-". Opening the page is timed until the first drawing shows; opening a block
inside the page, from the click to the next frame.
"""
import argparse
import json
import os
import re
import shutil
import tempfile
import time

import tensorgrad as tg
from tensorgrad import nn, viz
from tensorgrad.models import GPT, GPTConfig

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument("--quick", action="store_true", help="leave GPT-2 small out")
parser.add_argument("--tokens", type=int, default=16, help="sequence length of the GPT forwards")
args = parser.parse_args()


def scalar():
    a, b = tg.tensor(2.0, requires_grad=True), tg.tensor(-3.0, requires_grad=True)
    c, f = tg.tensor(10.0, requires_grad=True), tg.tensor(-2.0, requires_grad=True)
    return (a * b + c) * f, {"a": a, "b": b, "c": c, "f": f}, None


def mlp():
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 2))
    return tg.cross_entropy(model(tg.randn(32, 2)), tg.randint(0, 2, (32,))), model, "m-2"


def gpt(config):
    def build():
        model = GPT(config)
        ids = tg.randint(0, config.vocab_size, (1, args.tokens))
        return model(ids, ids)[1], model, "m-blocks.1"
    return build


def browser():
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    if chromium is None or driver is None:
        return None
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(driver), options=options)


OPEN_BLOCK = """
const done = arguments[arguments.length - 1], t0 = performance.now();
document.getElementById(arguments[0]).dispatchEvent(new MouseEvent("click", {bubbles: true}));
requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0)));
"""

tg.manual_seed(0)
cases = [("scalar", scalar), ("mlp", mlp), ("gpt-mini", gpt(GPTConfig.mini()))]
if not args.quick:
    cases.append(("gpt2-small", gpt(GPTConfig.gpt2())))
driver = browser()
folder = tempfile.mkdtemp()
print(f"{'graph':<12}{'nodes':>7}{'states':>8}{'write s':>9}{'MB':>7}{'open s':>8}"
      f"{'block ms':>10}")
for name, build in cases:
    loss, params, block = build()
    path = os.path.join(folder, f"{name}.html")
    start = time.perf_counter()
    viz.explore(loss, params, path)
    written = time.perf_counter() - start
    page = open(path, encoding="utf-8").read()
    data = json.loads(re.search(r'id="graph-data">(.*?)</script>', page, re.S).group(1))
    nodes, states = len(data["graph"]["nodes"]), len(data["svgs"])
    opened = block_ms = "-"
    if driver is not None:
        start = time.perf_counter()
        driver.get("file://" + path)
        while not driver.execute_script("return document.body.dataset.ready === 'true'"):
            time.sleep(0.01)  # the drawings are inflated after the page loads
        opened = f"{time.perf_counter() - start:.2f}"
        if block:
            block_ms = f"{driver.execute_async_script(OPEN_BLOCK, block):.0f}"
    print(f"{name:<12}{nodes:>7}{states:>8}{written:>9.1f}{len(page) / 1e6:>7.2f}{opened:>8}"
          f"{block_ms:>10}")
if driver is not None:
    driver.quit()
shutil.rmtree(folder)
