"""Every API, metrics and WebSocket call needs the bearer token; the page itself does not."""

from __future__ import annotations

import logging
import stat

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from ralphctl.server.auth import (
    InsecureBind,
    RedactTokens,
    TokenAuth,
    check_bind,
    is_loopback,
    load_or_create_token,
)
from ralphctl.server.locate import TOKEN_FILE, server_dir
from tests.server.conftest import TOKEN

PROTECTED = [
    ("GET", "/api/health"),
    ("GET", "/api/loops"),
    ("POST", "/api/loops"),
    ("GET", "/api/loops/abcd1234"),
    ("POST", "/api/loops/abcd1234/pause"),
    ("POST", "/api/loops/abcd1234/resume"),
    ("POST", "/api/loops/abcd1234/stop"),
    ("GET", "/api/loops/abcd1234/iterations"),
    ("GET", "/api/loops/abcd1234/checkpoints"),
    ("GET", "/api/loops/abcd1234/errors"),
    ("GET", "/api/loops/abcd1234/events"),
    ("GET", "/api/events"),
    ("GET", "/api/stats"),
    ("GET", "/api/metrics/cost-per-loop"),
    ("GET", "/api/metrics/iterations-to-completion"),
    ("GET", "/api/metrics/cost-by-hour"),
    ("GET", "/api/schema/events.json"),
    ("GET", "/metrics"),
]


@pytest.fixture
def anonymous(client: TestClient) -> TestClient:
    del client.headers["Authorization"]
    return client


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_a_call_without_a_token_is_401_saying_what_to_send(anonymous, method, path):
    response = anonymous.request(method, path)

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert "Authorization: Bearer" in response.json()["detail"]


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_a_call_with_a_wrong_token_is_401(anonymous, method, path):
    response = anonymous.request(method, path, headers={"Authorization": "Bearer nope"})

    assert response.status_code == 401
    assert response.json() == {"detail": "invalid token"}


def test_the_scheme_is_case_insensitive(anonymous):
    response = anonymous.get("/api/health", headers={"Authorization": f"bearer {TOKEN}"})

    assert response.status_code == 200


def test_http_calls_do_not_take_the_token_from_the_query(anonymous):
    assert anonymous.get(f"/api/health?token={TOKEN}").status_code == 401


def test_a_websocket_without_a_token_is_refused_at_the_handshake(anonymous):
    with pytest.raises(WebSocketDisconnect) as refused, anonymous.websocket_connect("/ws/events"):
        pass

    assert refused.value.code == 1008


def test_a_websocket_with_a_wrong_token_is_refused(anonymous):
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        anonymous.websocket_connect("/ws/events?token=nope"),
    ):
        pass

    assert refused.value.code == 1008


@pytest.mark.parametrize(
    ("query", "headers"),
    [(f"?token={TOKEN}", {}), ("", {"Authorization": f"Bearer {TOKEN}"})],
    ids=["query", "header"],
)
def test_a_websocket_takes_the_token_from_the_query_or_the_header(anonymous, query, headers):
    with anonymous.websocket_connect(f"/ws/events{query}", headers=headers) as socket:
        assert socket.receive_json()["event_type"] == "snapshot"


@pytest.mark.parametrize("path", ["/", "/static/js/main.js", "/static/style.css", "/openapi.json"])
def test_the_page_its_files_and_the_openapi_description_need_no_token(anonymous, path):
    assert anonymous.get(path).status_code == 200


def test_no_cors_headers_are_sent_even_when_asked(client):
    response = client.get("/api/loops", headers={"Origin": "https://evil.example"})

    assert not [h for h in response.headers if h.lower().startswith("access-control-")]


def test_the_page_may_run_only_its_own_scripts(anonymous):
    policy = anonymous.get("/").headers["Content-Security-Policy"]

    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy


def test_the_token_is_made_once_and_kept_in_a_private_file():
    directory = server_dir()

    token = load_or_create_token(directory)

    assert len(token) >= 40
    assert stat.S_IMODE((directory / TOKEN_FILE).stat().st_mode) == 0o600
    assert load_or_create_token(directory) == token


def test_a_token_file_readable_by_others_is_made_private():
    directory = server_dir()
    token = load_or_create_token(directory)
    (directory / TOKEN_FILE).chmod(0o644)

    assert load_or_create_token(directory) == token
    assert stat.S_IMODE((directory / TOKEN_FILE).stat().st_mode) == 0o600


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_hosts(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org", ""])
def test_other_hosts_are_not_loopback(host):
    assert not is_loopback(host)


def test_serving_beyond_loopback_with_an_empty_token_is_refused():
    with pytest.raises(InsecureBind, match=r"refusing to listen on 0\.0\.0\.0 without a token"):
        check_bind("0.0.0.0", " ")


def test_serving_beyond_loopback_with_a_token_is_allowed():
    check_bind("0.0.0.0", TOKEN)


def test_the_app_never_runs_with_an_empty_token():
    with pytest.raises(InsecureBind):
        TokenAuth("")


def test_tokens_in_logged_websocket_paths_are_blanked():
    record = logging.LogRecord(
        "uvicorn.error",
        logging.INFO,
        "",
        0,
        '%s - "WebSocket %s" [accepted]',
        ("127.0.0.1:5000", f"/ws/events?since=3&token={TOKEN}"),
        None,
    )

    RedactTokens().filter(record)

    assert TOKEN not in record.getMessage()
    assert "/ws/events?since=3&token=***" in record.getMessage()


@pytest.mark.parametrize(
    ("method", "path", "content"),
    [
        ("POST", "/api/loops", b"{not json"),
        ("POST", "/api/loops", b"\xff\xfe"),
        ("POST", "/api/loops", b'{"task": 3, "unknown": true}'),
        ("GET", f"/api/events?since={2**64}&limit=0", None),
        ("POST", "/api/loops/abcd1234/pause?now=maybe", None),
    ],
    ids=["malformed-json", "not-utf8", "invalid-body", "invalid-query", "invalid-flag"],
)
def test_without_a_token_even_a_malformed_request_is_401_and_nothing_more(
    anonymous, method, path, content
):
    response = anonymous.request(
        method, path, content=content, headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 401
    assert response.json() == {"detail": response.json()["detail"]}
    assert "Authorization: Bearer" in response.json()["detail"]


def test_without_a_token_an_unknown_path_is_401_not_404(anonymous):
    assert anonymous.get("/api/no-such-thing").status_code == 401


def test_a_websocket_without_a_token_is_refused_before_its_parameters_are_read(anonymous):
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        anonymous.websocket_connect("/ws/events?since=-1&loop_id=nope"),
    ):
        pass

    assert (refused.value.code, refused.value.reason) == (1008, "")
