"""Is a chart's spec one that JupyterLab draws? Checked against Vega-Lite 5.6.1's own JSON schema.

JupyterLab 4.6.6 (and Notebook 7 on it) draws ``application/vnd.vegalite.v5+json`` with Vega-Lite 5.6.1; a spec
that uses anything later is drawn wrong or not at all, and Vega-Lite ignores an unknown property without a word.
The schema is the npm package's ``vega-lite@5.6.1/build/vega-lite-schema.json``, gzipped (``npm pack
vega-lite@5.6.1``); it is draft 7, with ``additionalProperties: false`` almost everywhere, so a property that
5.6.1 does not know fails here.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

SCHEMA = Path(__file__).resolve().parent / "captures" / "vega-lite-5.6.1-schema.json.gz"


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema

    return jsonschema.Draft7Validator(json.loads(gzip.decompress(SCHEMA.read_bytes())))


def problems(spec: dict) -> list[str]:
    """What Vega-Lite 5.6.1's schema finds wrong in ``spec`` (the deepest error of each), empty if nothing."""
    import jsonschema

    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message[:200]}"
            for error in sorted(_validator().iter_errors(spec), key=jsonschema.exceptions.relevance)]
