"""HTTP/2 and TLS end to end: every built-in server over h2c, h2 and HTTPS, the protocol proved on the wire, every
status counted; a server without HTTP/2 refused in one line; streams above a server's limit flagged."""

from __future__ import annotations

import pytest

import benchlab
from benchlab.analysis import flags
from benchlab.errors import VerifyError
from benchlab.present import header

pytestmark = pytest.mark.integration

SERVERS = ["spring-tomcat", "spring-jetty", "spring-undertow", "spring-webflux", "nginx", "go-nethttp"]
NEGOTIATED = {"h2c": "h2c", "h2": "h2", "https": "http/1.1"}


def test_every_server_over_every_protocol_is_proved_on_the_wire(jars, tmp_path, no_jvm_left):
    suite = benchlab.compare(SERVERS, ["hello"], connections=[4], repeats=1, duration="1s", warmup="1s",
                             factors={"protocol": ["h2c", "h2", "https"]}, retakes=0, results_dir=tmp_path,
                             progress=False)
    runs = benchlab.load(tmp_path).runs  # read back from disk: every stored run whole, none damaged
    assert len(runs) == 18 and (runs["status"] == "ok").all(), runs[["server", "protocol", "status", "error"]]
    assert sorted(runs.groupby("protocol").size().items()) == [("h2", 6), ("h2c", 6), ("https", 6)]
    assert (runs["errors_total"] == 0).all() and (runs["requests"] > 0).all(), "every answer counted, all 2xx"
    for record in suite.records:
        protocol, wire = record.params["protocol"], record.metadata["protocol"]
        assert wire["protocol"] == protocol and wire["negotiated"] == NEGOTIATED[protocol], (record.id, wire)
        assert record.params["driver"] == ("wrk" if protocol == "https" else "h2load")
        if protocol != "h2c":  # over TLS: the throwaway certificate named, and the cipher the load used
            assert len(wire["certificate_sha256"]) == 64 and wire["tls_version"] == "TLSv1.3", wire
            assert wire["load_cipher"] == ("TLS_AES_128_GCM_SHA256" if protocol == "h2" else wire["cipher"])
        out = (tmp_path / record.id / f"{record.params['driver']}.out").read_text()
        if protocol != "https":  # h2load said what it negotiated, in every window
            assert f"Application protocol: {protocol}" in out
    limits = {r.params["server"]: r.metadata["protocol"]["stream_limit"] for r in suite.records
              if r.params["protocol"] == "h2c"}
    assert limits["spring-tomcat"] == 20, "Tomcat executes 20 streams a connection at once, of the 100 it allows"
    assert limits["spring-jetty"] == 128 and limits["go-nethttp"] == 250, limits
    # the protocol is a factor of the cell: each server's three protocols are three cells, never pooled
    assert suite.summary()[["protocol"]].drop_duplicates().shape[0] == 3
    said = str(header.measured(suite))  # the notebook's and the report's "what was measured"
    assert "h2c (negotiated h2c)" in said and "h2 (negotiated h2; TLSv1.3, TLS_AES_128_GCM_SHA256; a throwaway " \
        "certificate no load tool verified)" in said, said


def test_a_server_without_http2_is_refused_in_one_line(jars, tmp_path, no_jvm_left):
    jar = benchlab.Server.spring("tomcat").jar  # started by hand: no server.http2.enabled
    plain = benchlab.Server.from_command(["java", "-jar", jar, "--server.port={port}", "--server.address=127.0.0.1"],
                                         name="tomcat-http1-only", path="/hello")
    with pytest.raises(VerifyError) as refused:
        benchlab.run(plain, "/hello", protocol="h2c", duration="1s", warmup=0, results_dir=tmp_path)
    said = str(refused.value)
    assert len(said.splitlines()) == 1 and "asked h2c" in said and "speaks HTTP/1.1 only" in said, said
    assert not list(tmp_path.glob("*/run.json")), "a refused run stores nothing as if it were h2c"


def test_streams_above_the_servers_limit_are_flagged(jars, tmp_path, no_jvm_left):
    run = benchlab.run("spring-tomcat", "hello", protocol="h2c", connections=2, streams=40, duration="2s",
                       warmup="1s", retakes=0, results_dir=tmp_path)
    assert run.status == "ok" and run.metadata["protocol"]["stream_limit"] == 20
    found = dict(flags.run_flags(run.to_frame().iloc[0]))
    assert "streams_queued" in found and "40 streams" in found["streams_queued"], found
