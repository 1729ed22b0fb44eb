"""The explore panel driven as JupyterLab drives it: displayed in a real IPython shell, pressed twice with other
settings, then cleared; real servers and real wrk, 2 s and 3 s measured after 1 s of warm-up.

What the panel shows is read from the display messages IPython publishes (the display and its updates by
display id), which is what JupyterLab draws.
"""

from __future__ import annotations

import pytest

from benchlab import report
from benchlab.present import notebook
from benchlab.widgets import Panel

pytestmark = pytest.mark.integration


def _shown(outputs, handle) -> list[dict]:
    """Every bundle the panel published under ``handle``'s display id: the first display, then each update."""
    return [o.data for o in outputs if (o.transient or {}).get("display_id") == handle.display_id]


def test_panel_keeps_each_press_apart_refreshes_its_table_and_clears(tmp_path, jars, no_jvm_left):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    notebook.enable_charts()                                # as explore.ipynb's set-up does
    panel = Panel(servers=["spring-tomcat"], connections=16, duration="2s", warmup="1s", results_dir=tmp_path)
    with capture_output() as shown:
        display(panel)
        first = panel.run()
        panel.duration.value = "3s"                        # a second press with other settings
        second = panel.run()
        after_presses = len(shown.outputs)
        panel.reset()

    assert [r.status for r in first + second] == ["ok", "ok"], [r.error for r in first + second]
    throughput, table = _shown(shown.outputs, panel._handles["throughput"]), _shown(shown.outputs,
                                                                                   panel._handles["runs"])
    # the table: the placeholder, one update per finished run, then Clear's placeholder again
    assert len(table) == 4
    assert "no runs shown" in table[0]["text/plain"] and "no runs shown" in table[-1]["text/plain"]
    one, two = table[1]["text/html"], table[2]["text/html"]
    assert one.count("spring-tomcat-") == 1 and two.count("spring-tomcat-") == 2
    assert "duration" in two and "3.0" in two                 # the setting that differs is a column
    # the last chart of the presses: each setting its own panel and mean, nobody pooled into "2 repeats"
    spec = next(b for b in reversed(throughput) if report.VEGALITE_MIMETYPE in b)[report.VEGALITE_MIMETYPE]
    cells = [v for v in list(spec["datasets"].values())[0] if v["kind"] == "cell"]
    assert sorted(c["load_point"] for c in cells) == ["16 connections, 2 s measured", "16 connections, 3 s measured"]
    assert [c["n"] for c in cells] == [1, 1] and all(c["ci_high"] is None for c in cells)
    assert "1 repeat," in " ".join(spec["title"]["subtitle"])
    assert len(shown.outputs) > after_presses and panel.records == [] and panel.runs.empty
    assert "appear here" in throughput[-1]["text/plain"]
