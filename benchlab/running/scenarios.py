"""The scenarios every built-in server serves alike: each request, its body, and what a right answer is.

The Spring servers answer them from ``servers/common`` (``Responses.java``), nginx from the configuration
benchlab writes (:mod:`benchlab.running.natives`) and the Go server from ``servers/go/main.go``, all with the
bodies below, so an answer differs between servers only in its headers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError


@dataclass(frozen=True)
class Scenario:
    """One request and what a correct answer to it looks like."""

    name: str
    path: str
    method: str = "GET"
    body: bytes | None = None
    content_type: str | None = None
    expect_status: int = 200
    expect_body: bytes | None = None
    expect_contains: bytes | None = None

    def check(self, status: int, body: bytes) -> str | None:
        """None when the answer is right, else what is wrong with it."""
        if status != self.expect_status:
            return f"status {status}, expected {self.expect_status}"
        if self.expect_body is not None and body != self.expect_body:
            return f"body differs from the expected {len(self.expect_body)} bytes"
        if self.expect_contains is not None and self.expect_contains not in body:
            return f"body lacks {self.expect_contains!r}"
        return None


HELLO_BODY = b"Hello from benchlab: one fixed body, served alike by all three servers"
ECHO_BODY = b'{"id":1,"name":"benchlab","payload":"' + b"x" * 64 + b'"}'
#: The user object /json answers with, as Jackson writes Responses.user(): nginx sends these bytes, the Go
#: server encodes the same object on each request, as Spring does.
JSON_BODY = (b'{"id":1,"uid":"5f2b6c1e-8d3a-4e7b-9c21-0a6d4f3b2e19","name":"benchlab","age":20,'
             b'"school":"Spring Boot University"}')
#: What /sleep waits when no ms is given.
SLEEP_MS = 10

#: The endpoints of the built-in servers (servers/app/.../BenchController.java and, alike, the reactive
#: servers/webflux/.../ReactiveController.java, whose sleep waits on a timer, not on a blocked thread).
SCENARIOS: dict[str, Scenario] = {
    "hello": Scenario("hello", "/hello", expect_body=HELLO_BODY),
    "json": Scenario("json", "/json", expect_contains=b'"school"'),
    "reflect": Scenario("reflect", "/reflect", expect_contains=b"User{id=1"),
    "sleep": Scenario("sleep", f"/sleep?ms={SLEEP_MS}", expect_contains=f"slept {SLEEP_MS} ms".encode()),
    "echo": Scenario("echo", "/echo", method="POST", body=ECHO_BODY,
                     content_type="application/octet-stream", expect_body=ECHO_BODY),
}


def scenario(name: str | Scenario) -> Scenario:
    """The scenario called ``name``; ``sleep:50`` is the sleep endpoint with 50 ms.

    >>> scenario("sleep:50").path
    '/sleep?ms=50'
    """
    if isinstance(name, Scenario):
        return name
    if isinstance(name, str) and name.startswith("sleep:"):
        ms = name.split(":", 1)[1]
        if not ms.isdigit():
            raise UsageError(f"bad scenario {name!r}: write sleep:<milliseconds>, such as sleep:50")
        return Scenario(name, f"/sleep?ms={ms}", expect_contains=f"slept {ms} ms".encode())
    if name not in SCENARIOS:
        raise UsageError(f"unknown scenario {name!r}: choose one of {', '.join(SCENARIOS)} (or sleep:<ms>)")
    return SCENARIOS[name]
