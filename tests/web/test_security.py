"""Security of ``tracegrade ui``: the token (login form, HttpOnly cookie, bearer header),
CSRF on state-changing requests, escaping of untrusted span, dataset and judge content,
loopback by default, and no file outside the configured datasets."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from markupsafe import escape
from starlette.testclient import TestClient

from tests.support.web_forms import csrf_token
from tests.web.shop import PAYLOADS, XSS_INPUT, ShopStore
from tracegrade.cli import cli
from tracegrade.web import UiConfig, create_app
from tracegrade.web.logins import LoginThrottle
from tracegrade.web.security import allowed_hosts, is_loopback, safe_next

TOKEN = "s3cret-token"


@pytest.fixture
def guarded(shop: ShopStore, golden: Path):
    app = create_app(UiConfig(db=str(shop.db), token=TOKEN, datasets=(golden,)))
    with TestClient(app, base_url="http://localhost", follow_redirects=False) as client:
        yield client
    app.state.ui.close()


def _login(client: TestClient, token: str = TOKEN, target: str = "/runs"):
    form = client.get(f"/login?next={target}")
    return client.post(
        "/login", data={"csrf_token": csrf_token(form.text), "token": token, "next": target}
    )


def test_without_the_token_pages_redirect_to_login_and_json_is_refused(guarded) -> None:
    page = guarded.get("/runs", headers={"accept": "text/html"})
    assert page.status_code == 303 and page.headers["location"] == "/login?next=%2Fruns"
    api = guarded.get("/runs.json")
    assert api.status_code == 401 and "token" in api.json()["error"]
    assert guarded.get("/traces", headers={"authorization": "Bearer wrong"}).status_code == 401


def test_login_sets_an_httponly_session_cookie_that_opens_every_page(guarded) -> None:
    response = _login(guarded)
    assert response.status_code == 303 and response.headers["location"] == "/runs"
    cookie = response.headers["set-cookie"]
    assert "tg_session=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert TOKEN not in cookie
    assert guarded.get("/runs").status_code == 200


def test_a_wrong_token_is_refused_at_login(guarded) -> None:
    response = _login(guarded, token="guess")
    assert response.status_code == 401 and "wrong token" in response.text
    assert guarded.get("/runs.json").status_code == 401


def test_the_bearer_header_opens_the_json_twins(guarded) -> None:
    response = guarded.get("/runs.json", headers={"authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200 and response.json()["runs"]


def test_login_never_redirects_off_site() -> None:
    assert safe_next("//evil.example/x") == "/" and safe_next("https://evil.example") == "/"
    assert safe_next("/runs?dataset=a") == "/runs?dataset=a"


def test_a_forged_post_without_the_csrf_token_is_refused(client, golden: Path) -> None:
    before = golden.read_text()
    page = client.get("/datasets/file:golden/cases/0")
    form = {"version": _version(page.text), "id": "x", "input": "changed"}
    refused = client.post("/datasets/file:golden/cases/0", data=form)
    assert refused.status_code == 403 and "CSRF" in refused.text
    wrong = client.post("/datasets/file:golden/cases/0", data={**form, "csrf_token": "0" * 64})
    assert wrong.status_code == 403
    assert golden.read_text() == before


def test_a_post_from_another_origin_is_refused_even_with_the_token(client, golden: Path) -> None:
    page = client.get("/datasets/file:golden")
    response = client.post(
        "/datasets/file:golden/cases/0/delete",
        data={"csrf_token": csrf_token(page.text), "version": _version(page.text)},
        headers={"origin": "http://evil.example"},
    )
    assert response.status_code == 403


def test_login_itself_needs_the_csrf_token(guarded) -> None:
    response = guarded.post("/login", data={"token": TOKEN, "next": "/"})
    assert response.status_code == 403


def _version(page: str) -> str:
    import re

    match = re.search(r'name="version" value="([0-9a-f]+)"', page)
    assert match
    return match.group(1)


@pytest.mark.parametrize("page", ["trace", "case", "editor"])
def test_untrusted_content_is_escaped_in_the_html(client, shop: ShopStore, page: str) -> None:
    if page == "trace":
        text = client.get(f"/traces/{shop.xss_trace}").text
    elif page == "case":
        text = client.get(f"/runs/{shop.xss_run}/cases/0").text
    else:
        text = client.get("/datasets/file:hostile/cases/0").text
    assert "<script>window" not in text and 'onerror="window' not in text
    assert "<svg onload" not in text and 'href="javascript:' not in text
    assert str(escape(XSS_INPUT)) in text
    if page != "editor":
        assert sum(str(escape(p)) in text for p in PAYLOADS) >= 3


def test_a_non_loopback_host_needs_a_token(shop: ShopStore) -> None:
    result = CliRunner().invoke(cli, ["ui", "--db", str(shop.db), "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--token" in result.output
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("0.0.0.0")


def test_no_file_outside_the_configured_datasets_is_reachable(client) -> None:
    for key in ("file:passwd", "..%2F..%2Fetc%2Fpasswd", "file:..%2Fgolden"):
        assert client.get(f"/datasets/{key}").status_code == 404
    assert client.get("/static/../app.py").status_code == 404


def test_a_rebound_host_name_is_refused_before_anything_is_read(
    shop: ShopStore, golden: Path
) -> None:
    """DNS rebinding: evil.example resolves to 127.0.0.1, the page then reads and posts with
    Host and Origin both evil.example."""
    app = create_app(UiConfig(db=str(shop.db), datasets=(golden,)))
    before = golden.read_text()
    with TestClient(app, base_url="http://evil.example:8765") as client:
        read = client.get(f"/traces/{shop.xss_trace}.json")
        assert read.status_code == 400 and "Host" in read.text
        page = client.get("/datasets/file:golden")
        assert page.status_code == 400
        deleted = client.post(
            "/datasets/file:golden/cases/0/delete",
            data={"csrf_token": "0" * 64, "version": "0"},
            headers={"origin": "http://evil.example:8765"},
        )
        assert deleted.status_code == 400
    assert golden.read_text() == before
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        assert client.get("/runs.json").status_code == 200
    with TestClient(app, base_url="http://[::1]:8765") as client:
        assert client.get("/runs.json").status_code == 200
    app.state.ui.close()


def test_allowed_hosts_are_the_bound_names() -> None:
    assert allowed_hosts("127.0.0.1") == {"localhost", "127.0.0.1", "::1"}
    assert allowed_hosts("0.0.0.0") is None
    assert allowed_hosts("0.0.0.0", ["Grader.internal"]) == {"grader.internal"}
    assert "tg.example" in (allowed_hosts("[::1]", ["tg.example"]) or ())


def test_logout_ends_the_session_even_for_a_copied_cookie(guarded) -> None:
    _login(guarded)
    session = guarded.cookies.get("tg_session")
    assert session and guarded.get("/runs.json").status_code == 200
    page = guarded.get("/runs")
    assert guarded.post("/logout", data={"csrf_token": csrf_token(page.text)}).status_code == 303
    guarded.cookies.set("tg_session", session)  # the cookie kept (copied, or a stale tab)
    assert guarded.get("/runs.json").status_code == 401


def test_wrong_tokens_are_throttled(guarded) -> None:
    statuses = [_login(guarded, token=f"guess{n}").status_code for n in range(20)]
    assert statuses[:5] == [401] * 5
    assert set(statuses[5:]) == {429}
    refused = _login(guarded)  # even the right token waits: the guesser cannot tell
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0


def test_the_throttle_lets_a_client_try_again_after_its_backoff() -> None:
    throttle = LoginThrottle()
    for n in range(LoginThrottle.PER_ADDRESS):
        throttle.failed("10.0.0.1", "token", now=100.0 + n)
    assert throttle.retry_after_s("10.0.0.1", "token", now=104.5) > 0
    assert throttle.retry_after_s("10.0.0.2", "token", now=104.5) == 0
    assert throttle.retry_after_s("10.0.0.1", "token", now=104.0 + LoginThrottle.BASE_S) == 0


def test_a_blank_token_is_refused(shop: ShopStore) -> None:
    result = CliRunner().invoke(cli, ["ui", "--db", str(shop.db), "--token", " "])
    assert result.exit_code == 2 and "blank" in result.output
    with pytest.raises(ValueError, match="blank"):
        create_app(UiConfig(db=str(shop.db), token="  "))
