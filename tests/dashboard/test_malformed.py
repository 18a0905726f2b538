"""Malformed requests, sent as raw bytes over a loopback socket: each gets a 4xx response (never a
dropped connection), and the server goes on answering. Plus the one-line errors of `nasx serve`
for an address it cannot bind (a busy port, an address of another machine) and serving on ::1."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from nasx.cli import main
from nasx.dashboard.server import ServeError, make_server

from ..toy_experiment import make_experiment


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    return make_experiment(tmp_path_factory.mktemp("malformed") / "exp", max_trials=3, seed=1)


def _serving(srv):
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return srv


@pytest.fixture
def local(experiment):
    srv = _serving(make_server([experiment.workdir], port=0))
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def with_token(experiment):
    # a server that needs a token (bound to every address); the test still talks over loopback
    srv = _serving(make_server([experiment.workdir], host="0.0.0.0", port=0, allow_remote=True))
    yield srv
    srv.shutdown()
    srv.server_close()


def raw(srv, data: bytes, family=socket.AF_INET, host="127.0.0.1") -> tuple[int, bytes]:
    """Send ``data`` as is and read the whole answer: (status, body). A dropped connection (no
    status line) fails the test."""
    with socket.create_connection((host, srv.server_address[1]), timeout=30) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1."), f"no HTTP answer to {data[:80]!r}: got {answer[:80]!r}"
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def get(path: bytes, port: int, *headers: bytes) -> bytes:
    lines = [b"GET " + path + b" HTTP/1.1", b"Host: 127.0.0.1:%d" % port, *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n"


NON_ASCII = "é".encode()  # UTF-8 bytes; http.server reads them as Latin-1 text


@pytest.mark.parametrize(
    "make",
    [
        lambda p: get(b"/?token=" + NON_ASCII, p),
        lambda p: get(b"/api/experiments?token=%C3%A9%FF", p),
        lambda p: get(b"/", p, b"Cookie: nasx_token=" + NON_ASCII),
        lambda p: get(b"/", p, b"Cookie: nasx_token=\xff\xfe; other=\x80"),
        lambda p: get(b"/", p, b"Cookie: nasx_token"),
    ],
    ids=["query-utf8", "query-percent", "cookie-utf8", "cookie-latin1", "cookie-no-value"],
)
def test_a_non_ascii_token_is_refused_not_dropped(with_token, make):
    status, body = raw(with_token, make(with_token.server_address[1]))
    assert status == 403 and b"access token" in body
    # and the right token still works afterwards
    ok = raw(with_token, get(b"/api/experiments?token=" + with_token.token.encode(), 0))
    assert ok[0] == 200


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: get(b"/api/exp/0/chart/trial_curve.svg?trial=" + "٣".encode(), p), 400),
        (lambda p: get(b"/api/exp/0/chart/trial_curve.svg?trial=\xb2", p), 400),
        (lambda p: get(b"/api/exp/0/chart/cells.svg?trial=%ff%fe", p), 400),
        (lambda p: get(b"/api/exp/" + "٣".encode(), p), 404),
        (lambda p: get(b"/api/exp/0/trial/\xb2", p), 404),
        (lambda p: get(b"/api/exp/0/rows?offset=" + NON_ASCII, p), 400),
        (lambda p: get(b"/api/exp/0/rows?sort=%00&limit=-5", p), 400),
        (lambda p: get(b"/\xff\xfe", p), 404),
        (lambda p: get(b"http://[x/", p), 400),
        (lambda p: get(b"/?" + b"&".join(b"a%d=1" % i for i in range(101)), p), 400),
        (lambda p: get(b"/", p).replace(b"127.0.0.1", NON_ASCII), 403),
        (lambda p: get(b"/", p).replace(b"Host: 127.0.0.1:%d\r\n" % p, b""), 403),
        (lambda p: b"\x00\xff\xfe garbage\r\n\r\n", 400),
        (lambda p: b"GET / HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n", 400),
        (lambda p: b"GET / HTTP/1.x\r\n\r\n", 400),
        (lambda p: get(b"/", p).replace(b"GET", b"FOO"), 405),
        (lambda p: get(b"/", p).replace(b"GET", b"OPTIONS"), 405),
        (lambda p: get(b"/", p).replace(b"GET", b"TRACE"), 405),
        (lambda p: get(b"/", p).replace(b"GET", "GÉT".encode()), 405),
        (lambda p: get(b"/" + b"a" * 70_000, p), 414),
        (lambda p: get(b"/", p, b"X-Long: " + b"a" * 70_000), 431),
        (lambda p: get(b"/", p, *[b"X-%d: 1" % i for i in range(200)]), 431),
    ],
    ids=[
        "arabic-digit-trial",
        "superscript-trial",
        "bad-percent-trial",
        "arabic-digit-exp",
        "superscript-trial-id",
        "non-ascii-offset",
        "bad-rows-params",
        "non-ascii-path",
        "bad-ipv6-url",
        "too-many-query-fields",
        "non-ascii-host",
        "no-host",
        "garbage-request-line",
        "http-9.9",
        "bad-version",
        "unknown-method",
        "options",
        "trace",
        "non-ascii-method",
        "long-request-line",
        "long-header",
        "many-headers",
    ],
)
def test_malformed_requests_get_a_4xx(local, make, expected):
    status, _ = raw(local, make(local.server_address[1]))
    assert status == expected
    assert raw(local, get(b"/api/experiments", local.server_address[1]))[0] == 200


def test_error_answers_are_json_with_the_security_headers(local):
    port = local.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(get(b"/api/exp/0/chart/trial_curve.svg?trial=" + NON_ASCII, port))
        answer = s.makefile("rb").read()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"Content-Security-Policy: default-src 'none'" in head
    assert "trial must be a trial id" in json.loads(body)["error"]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"\x00 garbage\r\n\r\n")
        assert b"X-Content-Type-Options: nosniff" in s.makefile("rb").read()


def _busy_port() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def test_a_busy_port_is_one_line(experiment, capsys):
    with _busy_port() as busy:
        port = busy.getsockname()[1]
        with pytest.raises(ServeError, match=f"127.0.0.1:{port}: the port is in use"):
            make_server([experiment.workdir], port=port)
        assert main(["serve", str(experiment.workdir), "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        f"nasx serve: error: cannot serve on 127.0.0.1:{port}: the port is in use"
    )
    assert "--port 0" in err


def test_an_address_of_another_machine_is_one_line(experiment, capsys):
    # 192.0.2.0/24 is reserved for documentation: never this machine's address
    args = [
        "serve",
        str(experiment.workdir),
        "--host",
        "192.0.2.7",
        "--allow-remote",
        "--port",
        "0",
    ]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'192.0.2.7' is not an address of this machine" in err
    assert main(["serve", str(experiment.workdir), "--port", "70000"]) == 1
    assert "a port is 0 to 65535" in capsys.readouterr().err


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_serving_on_ipv6_loopback(experiment):
    if not _ipv6_loopback():
        with pytest.raises(ServeError, match=r"\[::1\]"):
            make_server([experiment.workdir], host="::1", port=0)
        pytest.skip("this machine has no IPv6 loopback: checked the one-line error instead")
    srv = _serving(make_server([experiment.workdir], host="::1", port=0))
    try:
        assert srv.token is None  # ::1 is this machine: no token, Host checked
        port = srv.server_address[1]
        request = get(b"/api/experiments", port).replace(b"127.0.0.1", b"[::1]")
        assert raw(srv, request, socket.AF_INET6, "::1")[0] == 200
        evil = request.replace(b"[::1]:%d" % port, b"evil.example")
        assert raw(srv, evil, socket.AF_INET6, "::1")[0] == 403
    finally:
        srv.shutdown()
        srv.server_close()
