"""The notebooks as a person uses them: JupyterLab in a real Chromium, Run > Run All Cells, then the panel's Run.

JupyterLab (the version `.ci/run` installs) is started by this module on a free loopback port with a token, on a
temporary copy of notebooks/ whose parameters cells are edited to tiny sizes (spring-jetty and spring-undertow,
2 s measured after a fixed 1 s warm-up, 8 connections, one repeat), with PYTHONPATH so its kernels import the
benchlab under test. Debian's Chromium, driven by Playwright, opens each notebook at 1400x1000 and runs it from
the menu. What a person must see:

- no error and no red stderr box;
- the widgets drawn as widgets, and explore.ipynb's Run button working;
- every chart an interactive Vega view: a tooltip appears when the mouse is over a mark (a still SVG picture
  has none);
- one progress bar in compare.ipynb's run cell, the widget (no second bar of text);
- compare.ipynb, saved and opened in Notebook 7, draws the same charts, interactive, from the file alone.

A screenshot of each notebook goes to a temporary folder, whose path is printed (``pytest -s`` shows it). Requests
that leave 127.0.0.1 are refused and counted: the notebooks work offline. JupyterLab is stopped with every
process it started (its kernels, their JVMs), by PID.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("BENCHLAB_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
TINY = {"servers": ["spring-jetty", "spring-undertow"], "connections": 8, "duration": "2s", "warmup": "1s",
        "repeats": 1}

pytestmark = pytest.mark.integration


# --- the notebooks, at tiny sizes -----------------------------------------------------------------------------

def _tiny(notebook: Path, values: dict) -> None:
    """Set ``values`` in the notebook's parameters cell, as a person edits it: ``name: type = value  # why``."""
    nb = json.loads(notebook.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    source = "".join(cell["source"])
    for name, value in values.items():
        source, count = re.subn(rf"^({name}: [^=]+= )(.*?)(\s+#.*)?$",
                                lambda m, v=value: f"{m[1]}{v!r}{m[3] or ''}", source, count=1, flags=re.M)
        assert count == 1, f"no parameter {name} in {notebook.name}"
    cell["source"] = source.splitlines(keepends=True)
    notebook.write_text(json.dumps(nb, indent=1))


def _live_notebook(path: Path) -> None:
    """A notebook feeding the live view two warm-up slices, as compare() does while a JVM warms; then the run ends."""
    rows = [{"run": "spring-jetty hello c8 r1", "t": 5.0 * i, "phase": "load", "connections": 8, "rps": rps,
             "compile_s": 2.5 * i} for i, rps in enumerate((900.0, 1400.0), start=1)]
    cells = ["from benchlab.present.live import Live\nview = Live()",
             "\n".join(f"view.add({row!r})" for row in rows), "view.clear()"]
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [],
                                           "execution_count": None} for c in cells],
                                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                            "language": "python"}},
                                "nbformat": 4, "nbformat_minor": 5}))


# --- JupyterLab, started and stopped by PID ---------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop_tree(root: subprocess.Popen) -> None:
    """Stop JupyterLab and everything under it (its kernels, what they started), by PID: SIGTERM, then SIGKILL."""
    try:
        tree = [*psutil.Process(root.pid).children(recursive=True), psutil.Process(root.pid)]
    except psutil.NoSuchProcess:
        return
    for proc in tree:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(tree, timeout=15)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


@pytest.fixture(scope="module")
def lab(jars, tmp_path_factory):
    """JupyterLab on a copy of notebooks/ at tiny sizes: ``(base url, token, folder)``."""
    folder = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", folder / "notebooks")
    # compare.ipynb's windows fit for its merged spectrum: C1 only, the JIT done within a 3 s warm-up
    _tiny(folder / "notebooks" / "compare.ipynb", {**TINY, "warmup": "3s", "jvm_opts": ["-XX:TieredStopAtLevel=1"],
                                                   "results_dir": str(folder / "compare-results")})
    _tiny(folder / "notebooks" / "explore.ipynb", {**TINY, "results_dir": str(folder / "explore-results")})
    _live_notebook(folder / "notebooks" / "live.ipynb")
    port, token = _free_port(), secrets.token_hex(16)
    home = folder / "jupyter"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
           "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
    # no toast asking to fetch Jupyter's news: it would cover the notebook, and the answer is online
    news = home / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false"}))
    # every cell attached, in view or not: JupyterLab 4.6 and Notebook 7 attach a cell out of view when the browser
    # is idle (windowing "contentVisibility"), and a chart's count then hangs on the page's height and idle time
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))
    log = (folder / "jupyterlab.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={folder / 'notebooks'}",
         "--ServerApp.allow_root=True", "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=folder / "notebooks", env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not start: {(folder / 'jupyterlab.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield base, token, folder
    finally:
        _stop_tree(server)
        log.close()


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (never 'playwright "
                                                                      "install': the system chromium is used)")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no chromium at {CHROMIUM}: apt-get install chromium, or set BENCHLAB_CHROMIUM")
    profile = tempfile.mkdtemp(prefix="benchlab-chromium-")
    with playwright_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=FLAGS,
                                                       viewport={"width": 1400, "height": 1000})
        yield context
        context.close()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def shots() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="benchlab-notebook-screens-"))
    print(f"\nscreenshots of the notebooks as JupyterLab shows them: {folder}")
    return folder


# --- driving JupyterLab ---------------------------------------------------------------------------------------

class Notebook:
    """One notebook open in JupyterLab, with what left the machine and what the page logged."""

    def __init__(self, context, lab, name: str, *, ui: str = "lab"):
        base, token, _ = lab
        self.page = context.new_page()
        self.outside: list[str] = []
        self.logged: list[str] = []
        self.page.on("pageerror", lambda exc: self.logged.append(f"page error: {exc}"))
        self.page.route("**/*", self._only_loopback)
        if ui == "notebook7":  # Notebook 7's own page for one notebook, as `jupyter notebook` opens it
            # tall: every chart in view as it draws, as a person scrolling would bring it
            self.page.set_viewport_size({"width": 1400, "height": 12_000})
            self.page.goto(f"{base}/notebooks/{name}?token={token}", wait_until="domcontentloaded")
            self.page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
            return
        # ?reset: a fresh workspace, so the notebook opened before in this browser is not opened again beside it
        self.page.goto(f"{base}/lab/tree/{name}?reset&token={token}", wait_until="domcontentloaded")
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        # the kernel started and idle, as the status bar says: a menu command before that is lost
        self.page.wait_for_function("() => /\\| Idle/.test(document.querySelector('#jp-main-statusbar')?.innerText)",
                                    timeout=120_000)

    def _only_loopback(self, route) -> None:
        url = route.request.url
        if url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def run_all(self, timeout: float = 300) -> None:
        """Run > Run All Cells, from the menu, then wait until the kernel is idle with every cell run."""
        self.page.click("#jp-MainMenu .lm-MenuBar-itemLabel:text-is('Run')")
        self.page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
        self.wait_idle(timeout)

    def wait_idle(self, timeout: float) -> None:
        self.page.wait_for_function(
            """() => { const prompts = [...document.querySelectorAll(
                   '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')];
                 return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent))
                   && document.querySelector(".jp-Notebook-ExecutionIndicator[data-status='idle']") !== null; }""",
            timeout=timeout * 1000)

    def save(self) -> None:
        """File > Save Notebook, then wait until JupyterLab says it is saved (its tab is no longer dirty)."""
        self.page.click("#jp-MainMenu .lm-MenuBar-itemLabel:text-is('File')")
        self.page.click(".lm-Menu-itemLabel:text-is('Save Notebook')")
        self.page.wait_for_function("() => !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')",
                                    timeout=30_000)

    def count(self, selector: str) -> int:
        return self.page.locator(selector).count()

    def red_boxes(self) -> list[str]:
        """The text of every stderr stream and error output: the red boxes a person would see."""
        return self.page.eval_on_selector_all(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']", "boxes => boxes.map(b => "
            "b.innerText.slice(0, 500))")

    def tooltips(self) -> list[str]:
        """Point at one mark of every Vega view (a dot where it has dots) and return the tooltip each showed ('' where
        none appeared)."""
        page, shown = self.page, []
        for view in page.locator(".jp-RenderedVegaCommon5").all():
            view.scroll_into_view_if_needed()
            page.wait_for_timeout(300)  # JupyterLab draws a view again once it has added its PNG to the output
            marks = view.locator("g.mark-symbol.role-mark path")  # a data mark: not a legend's symbol
            mark = (marks if marks.count() else view.locator("g.mark-rect.role-mark path")).first
            # the mark in the middle of the window: at its bottom edge, JupyterLab's status bar takes the pointer
            mark.evaluate("e => e.scrollIntoView({block: 'center'})")
            page.wait_for_timeout(300)
            box = mark.bounding_box()
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            page.mouse.move(x - 2, y - 2)
            page.mouse.move(x, y, steps=3)  # Vega shows a tooltip on the pointer's moves over a mark
            try:
                page.wait_for_selector("#vg-tooltip-element.visible", state="attached", timeout=5_000)
                shown.append(page.inner_text("#vg-tooltip-element"))
            except Exception:  # no tooltip is the finding, reported by the assertion
                shown.append("")
            page.mouse.move(1, 1)
        return shown

    def screenshot(self, folder: Path, name: str) -> Path:
        """The whole notebook: the window made as tall as the notebook's scrolled content, for one picture."""
        shot = folder / f"{name}.png"
        tall = self.page.eval_on_selector(".jp-NotebookPanel .jp-WindowedPanel-outer",
                                          "e => { e.scrollTop = 0; return e.scrollHeight; }")
        self.page.set_viewport_size({"width": 1400, "height": min(20_000, tall + 200)})
        self.page.wait_for_timeout(500)
        self.page.screenshot(path=str(shot))
        self.page.set_viewport_size({"width": 1400, "height": 1000})
        return shot


def _still_charts(notebook: Notebook, expected: int, named: str = "server") -> list[str]:
    """What keeps the charts from being what a person hovers: still pictures, a count off, a view without a
    tooltip (or one that does not name the server)."""
    found = []
    views = notebook.count(".jp-RenderedVegaCommon5")
    stills = notebook.count(".jp-OutputArea .jp-RenderedSVG, .jp-OutputArea .jp-RenderedImage")
    if views != expected or stills:
        found.append(f"{views} interactive Vega views of the {expected} charts, {stills} still pictures")
    tips = notebook.tooltips()
    if not all(named in tip for tip in tips):
        found.append(f"a chart showed no tooltip (or one without its {named}) on hover: {tips}")
    return found


def _seen(notebook: Notebook) -> list[str]:
    """What a person must not see in any notebook: a red box, an error, a request off the machine, a page error."""
    found = [f"a red box: {box}" for box in notebook.red_boxes()]
    if notebook.count(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']"):
        found.append("an error output")
    found += [f"a request off the machine: {url}" for url in notebook.outside]
    return found + notebook.logged


# --- the tests --------------------------------------------------------------------------------------------------

def test_compare_notebook_runs_all_with_one_bar_and_interactive_charts(lab, browser, shots, no_jvm_left):
    """Every finding is gathered first, so a failure says all that is wrong (today's code showed still charts)."""
    notebook = Notebook(browser, lab, "compare.ipynb")
    notebook.run_all()
    found = _seen(notebook)
    # one progress bar, the widget: no text bar of block characters beside it
    bars = notebook.count(".jp-OutputArea-output .widget-hprogress")
    text_bar = "\u2588" in notebook.page.inner_text(".jp-Notebook")  # the block characters of tqdm's text bar
    if bars != 1 or text_bar:
        found.append(f"{bars} progress widgets, {'and' if text_bar else 'no'} bar of text")
    found += _still_charts(notebook, 5)  # throughput, latency, the merged spectrum, each window, resources
    shot = notebook.screenshot(shots, "compare")
    notebook.save()
    notebook.page.close()
    # the saved notebook, opened in Notebook 7: its charts drawn from the file, interactive, with no cell run
    saved = Notebook(browser, lab, "compare.ipynb", ui="notebook7")
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        saved.page.wait_for_function("() => document.querySelectorAll('.jp-RenderedVegaCommon5 svg.marks').length "
                                     ">= 5", timeout=60_000)
    except PlaywrightTimeout:
        found.append(f"Notebook 7 drew {saved.count('.jp-RenderedVegaCommon5 svg.marks')} of the 5 charts in 60 s, "
                     f"{saved.count('.jp-Cell')} cells attached")
    # Notebook 7.6.5's own page logs two errors from its start-up code (a setting read before its schema, a file
    # browser command its page lacks), not from any output: not counted; any other is
    saved.logged = [line for line in saved.logged if not line.endswith((
        "Cannot read properties of undefined (reading 'schema')", "Command 'filebrowser:open-path' not registered."))]
    found += [f"Notebook 7: {finding}" for finding in _still_charts(saved, 5) + _seen(saved)]
    saved.page.close()
    assert found == [], "\n".join(found)
    assert shot.stat().st_size > 50_000


def test_explore_notebook_waits_for_run_then_draws_what_it_ran(lab, browser, shots, no_jvm_left):
    _, _, folder = lab
    notebook = Notebook(browser, lab, "explore.ipynb")
    notebook.run_all(timeout=180)
    assert not (folder / "explore-results").exists(), "Run All started load that nobody asked for"
    page = notebook.page
    for widget in (".widget-select-multiple", ".widget-dropdown", ".widget-text", ".widget-hprogress"):
        assert page.locator(widget).count() >= 1, f"no {widget}: the panel is not drawn as widgets"
    assert page.inner_text(".widget-html").startswith("ready")
    page.click(".widget-button:has-text('Run')")
    page.wait_for_function("() => [...document.querySelectorAll('.widget-html')].some(w => /^\\s*(done|failed)/"
                           ".test(w.innerText))", timeout=180_000)
    status = page.inner_text(".widget-html")
    assert status.startswith("done"), status
    page.wait_for_selector(".jp-RenderedVegaCommon5", timeout=30_000)
    found = _seen(notebook) + _still_charts(notebook, 2)  # throughput and latency
    # issue 47: the status line and the chart tell one story. 2 s windows after a 1 s warm-up usually catch the JIT
    # compiling: then none of the windows can be used, the line says why, and the chart draws their marks, says why
    # and names its axis; else the line counts the windows used as the chart's bars do.
    throughput = page.locator(".jp-RenderedVegaCommon5").first
    chart_text = throughput.evaluate("v => [...v.querySelectorAll('svg text')].map(t => t.textContent).join(' ')")
    hollow = throughput.locator(", ".join(f"g.mark-symbol.role-mark path[aria-label*='kind: {kind}']"  # each not used
                                          for kind in ("left out", "retaken"))).evaluate_all(
        "ps => ps.map(p => parseFloat(p.getAttribute('stroke-width') || '0'))")
    none = re.search(r"none of the (\d+) windows can be used: \d+ left out \((.+?)\)", status)
    if none:
        if f"no bars: none of the {none[1]} windows can be used" not in " ".join(chart_text.split()):
            found.append(f"the chart does not say why it has no bars: {chart_text!r}")
        if len(hollow) != int(none[1]) or not all(width > 0 for width in hollow):
            found.append(f"{none[1]} windows not used, {len(hollow)} hollow marks with outlines {hollow}")
        if "value" in chart_text.split():
            found.append("the y axis is titled 'value', not the metric")
    elif not re.search(r"\d+ windows? used", status):
        found.append(f"the status line counts no windows: {status!r}")
    shot = notebook.screenshot(shots, "explore")
    assert found == [], "\n".join(found)
    assert page.locator(".jp-RenderedHTMLCommon table").count() >= 1
    assert shot.stat().st_size > 50_000
    notebook.page.close()


def test_the_live_view_draws_each_slice_as_it_comes_and_is_emptied_when_the_run_ends(lab, browser):
    """What compare() and the panel feed while a JVM warms (a fixed 1 s warm-up draws one slice, as it ends)."""
    notebook = Notebook(browser, lab, "live.ipynb")
    page = notebook.page
    page.click(".jp-Notebook .jp-Cell >> nth=0")
    page.click("#jp-MainMenu .lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run Selected Cell')")
    page.click("#jp-MainMenu .lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run Selected Cell')")
    page.wait_for_selector(".jp-RenderedVegaCommon5 svg.marks", timeout=60_000)
    found = _seen(notebook) + _still_charts(notebook, 1, named="spring-jetty hello c8 r1")
    assert found == [], "\n".join(found)
    page.click("#jp-MainMenu .lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run Selected Cell')")
    # the run ended: its live view is emptied
    page.wait_for_function("() => !document.querySelector('.jp-RenderedVegaCommon5')", timeout=60_000)
    assert _seen(notebook) == []
    page.close()
