"""A server's first answer checked: the scenario's request, its settings against what it says it runs, its facts.

A server that answers wrongly, or runs other settings than asked (a stray ``_JAVA_OPTIONS=-Xmx64m``), fails its
fork before any load; what it says of itself (``GET /info``), what the machine and tools are, and how it was
launched become the metadata every window of the fork shares.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse

from ..errors import ServerError, VerifyError
from ..schema import Wire
from . import jars, metadata, protocols, servers, variants
from .backends.base import http_get
from .spec import RunSpec


def verify(url: str, scenario: servers.Scenario, *, timeout: float = 10.0,
           protocol: Wire = "http1") -> protocols.Answer:
    """Send the scenario's request once over ``protocol``; raise :class:`VerifyError` showing what came back if it
    is wrong, or if the server spoke another protocol (:func:`benchlab.running.protocols.request`)."""
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:  # Server.from_url and the backends make none such
        raise VerifyError(f"verify {url}: the url names no host; give http://HOST:PORT/PATH")
    headers = {"Content-Type": scenario.content_type} if scenario.content_type else {}
    try:
        answer = protocols.request(url, scenario.path, protocol, method=scenario.method, body=scenario.body,
                                   headers=headers, timeout=timeout)
    except (OSError, http.client.HTTPException) as exc:
        raise VerifyError(f"verify {scenario.method} {url}{scenario.path}: no answer ({exc})") from None
    problem = scenario.check(answer.status, answer.body)
    if problem:
        shown = answer.body[:200].decode(errors="replace")
        raise VerifyError(
            f"verify {scenario.method} {url}{scenario.path}: {problem}; got {answer.status} with body {shown!r} "
            "- check the scenario and the server's log"
        )
    return answer


def _server_info(url: str, server: servers.Server, protocol: Wire = "http1") -> dict:
    """What a built-in server says of itself (``GET /info``, a JSON object), read straight from it with a
    size limit; an answer that is not a JSON object is ``{}`` with a note, never an error of the run."""
    if not server.builtin:
        return {"server": server.name, "server_version": None}
    try:
        status, body = http_get(url, "/info", timeout=10, protocol=protocol)
        info = json.loads(body) if status == 200 else None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return {"server": server.flavour or server.name, "server_version": None, "note": f"GET /info failed: {exc}"}
    if not isinstance(info, dict):
        shown = f"status {status}" if status != 200 else f"a JSON {type(info).__name__}"
        return {"note": f"GET /info answered {shown}, not a JSON object: nothing read from it"}
    return info


def verified(spec: RunSpec, instance, driver) -> dict:
    """Verify the server's answer and its settings; return the fork's metadata, shared by all its windows.

    A server that runs other settings than the spec asks for fails the run, recorded with what it said it runs.
    """
    protocol = spec.load.protocol
    answer = verify(instance.url, spec.scenario, protocol=protocol)
    info = _server_info(instance.url, spec.server, protocol)
    checks = variants.check(spec.server.settings, info)
    wrong = variants.mismatch(spec.server.name, checks)
    if wrong:
        raise ServerError(wrong, metadata={"server": info, "settings": checks})
    meta = metadata.collect(java=spec.server_java if spec.server.jvm else "java", driver=spec.driver)
    meta.update(
        server=info,
        accept_queue=(metadata.collect_accept_queue(info, spec.jvm_opts) if spec.server.jvm
                      else {}),
        settings=checks,
        launch=_launch_metadata(spec),
        verify={"status": answer.status, "bytes": len(answer.body),
                "content_type": answer.headers.get("Content-Type") or answer.headers.get("content-type")},
        protocol={**protocols.listener(protocol).record(), **answer.facts(),
                  "stream_limit": protocols.stream_limit(spec.server, answer),
                  # the cipher the load used: h2load offers one alone; wrk and vegeta take the server's choice
                  "load_cipher": protocols.CIPHER if answer.cipher and spec.driver == "h2load" else answer.cipher},
        shared_cores=bool(set(spec.server_cpus) & set(spec.load_cpus)),
        latency_corrected=driver.corrected,
    )
    return meta


def _launch_metadata(spec: RunSpec) -> dict | None:
    """How a built-in server was launched locally: from its AOT cache, its CDS archive or the plain jar."""
    if not spec.server.jvm or spec.backend != "local":
        return None
    if spec.server.settings.aot:
        return _aot_metadata(spec)
    return jars.prepare_cds(spec.server, spec.server_java).metadata() if spec.cds else {"launch": "jar"}


def _aot_metadata(spec: RunSpec) -> dict:
    """What a run from an AOT cache records; ``-XX:AOTMode=on`` made its start prove the cache was used."""
    cache = jars.prepare_aot(spec.server, spec.server_java)
    return {"launch": "aot", "aot_cache": cache.archive, "aot_verified": "-XX:AOTMode=on: the JVM refuses to "
            "start from a cache it cannot use", "cds_archive": None, "cds_warning": None}
