"""The readiness probe and GET /info ask the server itself: no proxy, no redirect followed, a size limit, and an
odd /info is a note, not a failure; IPv6 loopback is loopback (unit tests: tiny servers in threads)."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from benchlab.errors import ServerError, UsageError
from benchlab.running import metadata, servers, verify
from benchlab.running.backends import base


class _Server:
    """An http.server in a thread answering every GET with ``answer(handler)``; counts its requests."""

    def __init__(self, answer, host="127.0.0.1"):
        self.hits = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                owner.hits += 1
                status, headers, body = answer(self)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        # shutdown() waits for the loop's next poll: 0.5 s by default, paid at every test's end
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    started = []

    def make(answer, **kw):
        started.append(_Server(answer, **kw))
        return started[-1]

    yield make
    for server in started:
        server.close()


def test_a_proxy_in_the_environment_is_not_asked(serve, monkeypatch):
    proxy = serve(lambda h: (502, {}, b"bad gateway"))
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy"):
        monkeypatch.setenv(name, proxy.url)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    nothing = f"http://127.0.0.1:{base.free_port()}/"  # no one listens: not ready, whatever a proxy says
    with pytest.raises(ServerError, match="did not answer within"):
        base.wait_ready(nothing, timeout=0.3, alive=lambda: True)
    assert proxy.hits == 0


def test_a_redirect_is_an_answer_and_is_not_followed(serve):
    elsewhere = serve(lambda h: (200, {}, b"{}"))
    redirecting = serve(lambda h: (302, {"Location": elsewhere.url + "/info"}, b""))
    assert base.wait_ready(redirecting.url + "/info", timeout=5, alive=lambda: True) >= 0
    spring = servers.get("spring-jetty")
    info = verify._server_info(redirecting.url, spring)
    assert info == {"note": "GET /info answered status 302, not a JSON object: nothing read from it"}
    assert elsewhere.hits == 0


def test_an_info_larger_than_the_limit_is_not_read(serve, monkeypatch):
    monkeypatch.setattr(base, "PROBE_LIMIT", 1000)
    big = serve(lambda h: (200, {}, json.dumps({"x": "y" * 5000}).encode()))
    with pytest.raises(base.TooLarge):
        base.http_get(big.url, "/info", timeout=5, limit=1000)
    info = verify._server_info(big.url, servers.get("spring-jetty"))
    assert info["server_version"] is None and "more than" in info["note"]
    assert base.wait_ready(big.url, timeout=5, alive=lambda: True) >= 0, "a long answer is still an answer"


@pytest.mark.parametrize("body, kind", [(b"[1, 2]", "list"), (b'"tomcat"', "str"), (b"null", "NoneType")])
def test_an_info_that_is_not_an_object_is_a_note_not_an_error(serve, body, kind):
    odd = serve(lambda h: (200, {"Content-Type": "application/json"}, body))
    info = verify._server_info(odd.url, servers.get("spring-tomcat"))
    assert info == {"note": f"GET /info answered a JSON {kind}, not a JSON object: nothing read from it"}
    assert metadata.collect_accept_queue(info) == {}
    assert metadata.collect_accept_queue([1, 2]) == {}
    assert metadata.collect_accept_queue({"server": "tomcat", "accept_queue": "lots"})["source"] == "default"


def test_ipv6_loopback_is_loopback():
    server = servers.Server.from_url("http://[::1]:9/hello")
    assert (server.url, server.name, server.port, server.path) == ("http://[::1]:9", "[::1]:9", 9, "/hello")
    servers.check_loopback(server.url)
    servers.check_loopback("http://[::1]:8080/x")
    with pytest.raises(UsageError, match="refusing to send load to ::2:"):
        servers.check_loopback("http://[::2]:8080/x")


def test_the_probe_reaches_an_ipv6_server(serve):
    try:
        server = serve(lambda h: (200, {}, b"ok"), host="::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    url = servers.Server.from_url(server.url + "/x").url
    assert base.http_get(url + "/x", timeout=5) == (200, b"ok")
