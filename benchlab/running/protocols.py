"""The protocol a server is measured over, on both ends of the wire: its listener, its certificate, and a request
that proves what was negotiated.

Four protocols (:data:`benchlab.schema.PROTOCOLS`): ``http1`` (HTTP/1.1 in clear text, the default), ``h2c``
(HTTP/2 in clear text with prior knowledge: the client's first bytes are HTTP/2's preface, no HTTP/1.1 upgrade),
``h2`` (HTTP/2 over TLS, chosen by ALPN) and ``https`` (HTTP/1.1 over TLS, ALPN ``http/1.1``). A server is started
to serve the protocol asked (:class:`Listener`: Spring Boot's ``server.http2.enabled`` and ``server.ssl.*``,
nginx's ``listen ... http2``/``ssl``, go-nethttp's ``-h2c``/``-cert``); :func:`request` then asks it over that
protocol with a real client (the ``h2`` package for HTTP/2), so a server that answers only HTTP/1.1, or whose ALPN
falls back, fails its fork in one line before any load (:class:`~benchlab.errors.VerifyError`). What it said of
itself on the wire (the ALPN choice, the TLS version and cipher, its ``SETTINGS_MAX_CONCURRENT_STREAMS``) is the
fork's ``protocol`` metadata.

TLS uses a throwaway certificate for 127.0.0.1, an ECDSA P-256 key made once per Python process (one comparison)
in a private temporary folder, removed at exit, never stored with the results: the run records its SHA-256
fingerprint. The load tools are told not to verify it (h2load never does, wrk does not, vegeta gets
``-insecure``); benchlab's own probe does not either. Servers are left their own TLS 1.3 ciphers: restricting
Undertow's to one made its ALPN fall back to HTTP/1.1 (it checks the cipher against its HTTP/2 list), which the probe
caught. The client chooses instead where it can: h2load offers TLS 1.3's ``TLS_AES_128_GCM_SHA256`` alone, so
every server serves it (their own preferences differ: Jetty and Undertow chose AES-256 here, Tomcat and Reactor
Netty AES-128). wrk cannot choose, so over ``https`` with wrk each server's choice is recorded (the probe's cipher,
offered what OpenSSL offers by default, as wrk is).
"""

from __future__ import annotations

import atexit
import datetime
import functools
import http.client
import ipaddress
import shutil
import socket
import ssl
import tempfile
import urllib.parse
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import UsageError, VerifyError
from ..schema import PROTOCOLS, Wire

#: The one TLS 1.3 cipher h2load offers, so every server serves it (OpenSSL's name).
CIPHER = "TLS_AES_128_GCM_SHA256"
#: The protocols of HTTP/2, and those over TLS.
HTTP2: tuple[Wire, ...] = ("h2c", "h2")
TLS: tuple[Wire, ...] = ("h2", "https")
#: What a connection of each protocol negotiates, as h2load and ALPN name it; over TLS, what the client offers by ALPN
#: (h2c has no ALPN: prior knowledge).
NEGOTIATED = {"http1": "http/1.1", "https": "http/1.1", "h2c": "h2c", "h2": "h2"}
#: A stream's flow-control window at the protocol's default, 2^16 - 1 bytes (RFC 9113 6.9.2): h2load's own default
#: (2^30) switches flow control off in effect, so it is told these bits (-w, -W) unless the user asks otherwise.
WINDOW_BITS = 16


@dataclass(frozen=True)
class Listener:
    """How a server listens: the protocol and, over TLS, the certificate and key files it serves.

    >>> Listener("h2c").scheme, Listener("h2c").http2, Listener("https", cert="c.pem", key="k.pem").tls
    ('http', True, True)
    """

    protocol: Wire = "http1"
    cert: str | None = None
    key: str | None = None
    fingerprint: str | None = field(default=None, compare=False)

    @property
    def tls(self) -> bool:
        return self.protocol in TLS

    @property
    def http2(self) -> bool:
        return self.protocol in HTTP2

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def spring_arguments(self) -> list[str]:
        """Spring Boot's properties for it, as the application's arguments (none for HTTP/1.1)."""
        found = ["--server.http2.enabled=true"] if self.http2 else []
        if self.tls:
            found += [f"--server.ssl.certificate=file:{self.cert}", f"--server.ssl.certificate-private-key=file:"
                      f"{self.key}", "--server.ssl.enabled-protocols=TLSv1.3"]
        return found

    def within(self, folder: str) -> tuple[Listener, dict[str, bytes]]:
        """The listener as a server sees it whose files are copied into ``folder`` (a container's, whose engine may
        be another machine's, where no folder of this one could be mounted), and those files: over TLS the
        certificate and key; none in clear text.

        >>> Listener("h2c").within("/bench")
        (Listener(protocol='h2c', cert=None, key=None, fingerprint=None), {})
        """
        if not self.tls or self.cert is None or self.key is None:
            return self, {}
        files = {"tls-cert.pem": Path(self.cert).read_bytes(), "tls-key.pem": Path(self.key).read_bytes()}
        return replace(self, cert=f"{folder}/tls-cert.pem", key=f"{folder}/tls-key.pem"), files

    def record(self) -> dict:
        """What a run stores of it: the protocol, and over TLS the certificate's fingerprint."""
        return {"protocol": self.protocol, **({"certificate_sha256": self.fingerprint} if self.tls else {})}


#: HTTP/1.1 in clear text: how a server listens unless a run asks another protocol.
HTTP1 = Listener()


def check(protocol) -> Wire:
    """``protocol`` if it is one of :data:`PROTOCOLS`; a :class:`UsageError` naming them if not."""
    if protocol not in PROTOCOLS:
        raise UsageError(f"unknown protocol {protocol!r}: choose one of {', '.join(PROTOCOLS)} (http1: HTTP/1.1; h2c: "
                         "HTTP/2 in clear text; h2: HTTP/2 over TLS; https: HTTP/1.1 over TLS)")
    return protocol


def listener(protocol: Wire) -> Listener:
    """The listener for ``protocol``: over TLS with this process's throwaway certificate (:func:`certificate`)."""
    if protocol not in TLS:
        return Listener(protocol)
    cert, key, fingerprint = certificate()
    return Listener(protocol, cert=cert, key=key, fingerprint=fingerprint)


@functools.cache
def certificate() -> tuple[str, str, str]:
    """A self-signed certificate for 127.0.0.1 and its key, made once per process in a private temporary folder that
    is removed at exit: ``(cert path, key path, SHA-256 fingerprint)``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder = Path(tempfile.mkdtemp(prefix="benchlab-tls-"))
    atexit.register(shutil.rmtree, folder, True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(cert_path), str(key_path), cert.fingerprint(hashes.SHA256()).hex()


#: Streams a server runs at once on one connection, below what it advertises: Tomcat's ``Http2Wire`` executes at
#: most ``maxConcurrentStreamExecution`` (20 by default; Spring Boot has no property for it) of the 100 streams it
#: allows (``maxConcurrentStreams``); the others wait for one of the 20.
EXECUTION_LIMITS = {"tomcat": 20}


def stream_limit(server, answer: Answer) -> int | None:
    """The most streams ``server`` runs at once on a connection over HTTP/2: the least of what it advertised
    (SETTINGS_MAX_CONCURRENT_STREAMS) and its execution limit; None over HTTP/1.1 or when neither is known."""
    if answer.negotiated not in HTTP2:
        return None
    limits = [n for n in (answer.streams, EXECUTION_LIMITS.get(getattr(server, "flavour", None) or "")) if n]
    return min(limits) if limits else None


# --- one request over the protocol ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One answer and what the connection negotiated: ``negotiated`` is h2c, h2 or http/1.1; ``streams`` the
    server's SETTINGS_MAX_CONCURRENT_STREAMS (None: HTTP/1.1, or the server set no limit)."""

    status: int
    headers: dict
    body: bytes
    negotiated: str
    tls_version: str | None = None
    cipher: str | None = None
    streams: int | None = None

    def facts(self) -> dict:
        """What the fork records of the wire."""
        return {"negotiated": self.negotiated, "tls_version": self.tls_version, "cipher": self.cipher,
                "max_concurrent_streams": self.streams}


def request(url: str, path: str, protocol: Wire = "http1", *, method: str = "GET", body: bytes | None = None,
            headers: dict | None = None, timeout: float = 10.0, limit: int = 1 << 20) -> Answer:
    """Send one request to ``url``'s host and port over ``protocol`` and read the answer (at most ``limit`` bytes of
    body). A server that does not speak the protocol is a :class:`VerifyError` saying what it spoke; a connection
    that fails is an ``OSError``, as :mod:`http.client`'s are."""
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)
    if protocol in HTTP2:
        return _http2(host, port, path, protocol, method=method, body=body, headers=headers or {},
                      timeout=timeout, limit=limit)
    if protocol == "https":
        context = _client_context("https")
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read(limit + 1)
        wrapped = conn.sock if isinstance(conn.sock, ssl.SSLSocket) else None
        return Answer(response.status, dict(response.getheaders()), data, "http/1.1",
                      tls_version=wrapped.version() if wrapped else None,
                      cipher=(wrapped.cipher() or (None,))[0] if wrapped else None)
    finally:
        conn.close()


def _client_context(protocol: str) -> ssl.SSLContext:
    """A TLS client that offers the protocol's ALPN and does not verify the throwaway certificate."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols([NEGOTIATED[protocol]])
    return context


def _http2(address: str, port: int, path: str, protocol: str, *, method: str, body: bytes | None, headers: dict,
           timeout: float, limit: int) -> Answer:
    """One HTTP/2 request: prior knowledge in clear text (h2c) or ALPN ``h2`` over TLS."""
    import h2.config
    import h2.connection

    sock: socket.socket = socket.create_connection((address, port), timeout=timeout)
    try:
        tls_version = cipher = None
        if protocol == "h2":
            sock = _client_context("h2").wrap_socket(sock, server_hostname=address)
            chosen = sock.selected_alpn_protocol()
            if chosen != "h2":
                raise VerifyError(f"asked h2 of {address}:{port}, but its TLS ALPN chose {chosen or 'no protocol'}: "
                                  "the server does not offer HTTP/2 over TLS (is HTTP/2 enabled?)")
            tls_version, cipher = sock.version(), (sock.cipher() or (None,))[0]
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        stream = conn.get_next_available_stream_id()
        sent = [(":method", method), (":path", path), (":scheme", "https" if protocol == "h2" else "http"),
                (":authority", f"{address}:{port}"), *((k.lower(), v) for k, v in headers.items())]
        conn.send_headers(stream, sent, end_stream=body is None)
        if body is not None:
            conn.send_data(stream, body, end_stream=True)
        sock.sendall(conn.data_to_send())
        status, answer, data = _answer(conn, sock, limit, protocol, (address, port))
        streams = conn.remote_settings.max_concurrent_streams
        return Answer(status, answer, data, protocol, tls_version=tls_version, cipher=cipher,
                      streams=streams if streams < 2**31 - 1 else None)
    finally:
        sock.close()


def _answer(conn, sock: socket.socket, limit: int, protocol: str, peer: tuple[str, int]
            ) -> tuple[int, dict[str, str], bytes]:
    """The one stream's ``(status, headers, body)``, read until it ends (or ``limit`` bytes of body); a server that
    answers in anything but HTTP/2 is a :class:`VerifyError` saying what it said."""
    import h2.events
    import h2.exceptions

    asked = f"{protocol} of {peer[0]}:{peer[1]}"
    status, answer, data = 0, dict[str, str](), bytearray()
    while True:
        chunk = sock.recv(65536)
        if not chunk:  # closed on HTTP/2's preface: a server that speaks HTTP/1.1 only, or one still starting
            _speaks_http1(peer, protocol == "h2", asked)
            raise ConnectionError(f"{asked}: the connection closed without an answer")
        try:
            events = conn.receive_data(chunk)
        except h2.exceptions.ProtocolError:
            said = bytes(chunk[:40]).split(b"\r\n")[0].decode("latin-1")
            raise VerifyError(f"asked {asked}, but it answered {said!r}: it does not speak HTTP/2 with prior "
                              "knowledge there (is HTTP/2 enabled?)") from None
        sock.sendall(conn.data_to_send())
        for event in events:
            if isinstance(event, h2.events.ResponseReceived):
                answer = {_text(k): _text(v) for k, v in event.headers or ()}
                status = int(answer.pop(":status", "0"))
            elif isinstance(event, h2.events.DataReceived):
                data += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            ended = isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset, h2.events.ConnectionTerminated))
            if ended or len(data) > limit:
                return status, answer, bytes(data)


def _speaks_http1(peer: tuple[str, int], tls: bool, asked: str) -> None:
    """A :class:`VerifyError` if the server at ``peer`` that closed HTTP/2's preface answers HTTP/1.1 there; nothing
    if not (it may still be starting)."""
    address, port = peer
    try:
        answer = request(f"{'https' if tls else 'http'}://{address}:{port}", "/", "https" if tls else "http1",
                         timeout=2.0, limit=0)
    except (OSError, http.client.HTTPException):
        return
    raise VerifyError(f"asked {asked}, but it speaks HTTP/1.1 only there (it closed HTTP/2's preface and answered "
                      f"HTTP/1.1 {answer.status}): is HTTP/2 enabled?")


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value
