"""The dashboard's login defences against round three of the hostile review (issue 40 items
10-12): throttling per address and per account (a guesser on many addresses cannot lock the
real user out), forwarded headers believed only from a trusted proxy's TCP connection, and
sessions that end with their account or password and are never evicted by another user's
logins."""

from __future__ import annotations

import subprocess
import sys
import threading

import httpx
import pytest
from starlette.testclient import TestClient

from tests.support.browser import ui_server
from tests.support.web_forms import csrf_token
from tracegrade.store.traces import Store
from tracegrade.web import UiConfig, create_app
from tracegrade.web.accounts import remove_account, set_password
from tracegrade.web.logins import LoginSessions, LoginThrottle, address_key

PASSWORD = "correct horse battery"


def _client(db: str, address: str = "192.0.2.10", **config: object) -> TestClient:
    app = create_app(UiConfig(db=db, **config))
    return TestClient(app, base_url="http://localhost", client=(address, 40000))


def _login(client: TestClient, headers: dict[str, str] | None = None, **fields: str):
    form = {"csrf_token": csrf_token(client.get("/login").text), "next": "/runs", **fields}
    return client.post("/login", data=form, headers=headers or {}, follow_redirects=False)


def test_a_guesser_on_many_addresses_does_not_lock_the_user_out_of_her_own() -> None:
    throttle = LoginThrottle()
    for n in range(50):
        throttle.failed(f"203.0.113.{n}", "name:ana", now=1000.0 + n * 0.01)
    assert throttle.retry_after_s("192.0.2.10", "name:ana", now=1001.0) == 0
    assert throttle.retry_after_s("192.0.2.10", "name:ben", now=1001.0) == 0
    # each guessing address has used its guess on this account: it waits the backoff
    assert throttle.retry_after_s("203.0.113.7", "name:ana", now=1001.0) > 60
    # one failure of the real user's own does not hold her back once she logged in before
    throttle.succeeded("192.0.2.10", "name:ana", now=1002.0)
    throttle.failed("192.0.2.10", "name:ana", now=1003.0)
    assert throttle.retry_after_s("192.0.2.10", "name:ana", now=1003.5) == 0


def test_one_address_backs_off_exponentially_and_forgets() -> None:
    throttle = LoginThrottle()
    waits = []
    for n in range(LoginThrottle.PER_ADDRESS + 4):
        throttle.failed("198.51.100.1", f"name:guess{n}", now=float(n))
        waits.append(throttle.retry_after_s("198.51.100.1", "name:x", now=float(n)))
    assert waits[: LoginThrottle.PER_ADDRESS - 1] == [0.0] * (LoginThrottle.PER_ADDRESS - 1)
    assert waits[LoginThrottle.PER_ADDRESS - 1 :] == [1.0, 2.0, 4.0, 8.0, 16.0]
    later = LoginThrottle.FORGET_S + 10
    assert throttle.retry_after_s("198.51.100.1", "name:x", now=later) == 0


def test_the_real_user_logs_in_while_her_account_is_guessed(store_location: str) -> None:
    set_password(store_location, "ana", PASSWORD)
    app = create_app(UiConfig(db=store_location))
    try:
        for n in range(50):
            with TestClient(app, base_url="http://localhost", client=(f"203.0.113.{n}", 1)) as c:
                assert _login(c, name="ana", password=f"guess-{n}").status_code == 401
        with TestClient(app, base_url="http://localhost", client=("192.0.2.10", 1)) as c:
            assert _login(c, name="ana", password=PASSWORD).status_code == 303
        with TestClient(app, base_url="http://localhost", client=("203.0.113.3", 1)) as c:
            assert _login(c, name="ana", password=PASSWORD).status_code == 429
    finally:
        app.state.ui.close()


def test_forwarded_for_is_ignored_unless_the_peer_is_a_trusted_proxy(tmp_path) -> None:
    db = str(tmp_path / "ui.db")
    with _client(db, address="127.0.0.1", token="t0ken-right") as client:
        statuses = [
            _login(client, {"x-forwarded-for": f"10.9.0.{n}"}, token="wrong").status_code
            for n in range(8)
        ]
    assert statuses[:5] == [401] * 5 and set(statuses[5:]) == {429}
    proxied = {"trusted_proxies": frozenset({"10.0.0.5"}), "token": "t0ken-right"}
    with _client(db, address="10.0.0.5", **proxied) as client:  # behind the proxy: per client
        for n in range(8):
            forwarded = {"x-forwarded-for": f"spoofed, 10.9.0.{n}"}
            assert _login(client, forwarded, token="wrong").status_code == 401


def test_the_user_header_is_believed_only_from_the_proxys_connection(tmp_path) -> None:
    config = {"user_header": "X-Forwarded-User", "trusted_proxies": frozenset({"10.0.0.5"})}
    claims = {"x-forwarded-user": "ben", "x-forwarded-for": "10.0.0.5"}
    with _client(str(tmp_path / "ui.db"), address="127.0.0.1", **config) as client:
        assert client.get("/runs.json", headers=claims).status_code == 401
    with _client(str(tmp_path / "ui.db"), address="10.0.0.5", **config) as client:
        assert client.get("/runs.json", headers=claims).status_code == 200


def test_the_real_server_ignores_forwarded_headers_from_an_untrusted_peer(tmp_path) -> None:
    """uvicorn itself rewrote the client address from X-Forwarded-For of any loopback peer."""
    db = str(tmp_path / "ui.db")
    Store(db).close()
    args = ["--db", db, "--user-header", "X-Forwarded-User", "--trusted-proxy", "10.0.0.5"]
    with ui_server([*args, "--token", "t0ken-right"]) as url, httpx.Client(base_url=url) as http:
        claims = {"x-forwarded-user": "ben", "x-forwarded-for": "10.0.0.5"}
        assert http.get("/runs.json", headers=claims).status_code == 401
        statuses = []
        for n in range(7):
            page = http.get("/login")
            form = {"csrf_token": csrf_token(page.text), "token": "wrong", "next": "/"}
            sent = http.post("/login", data=form, headers={"x-forwarded-for": f"10.9.0.{n}"})
            statuses.append(sent.status_code)
        assert statuses[:5] == [401] * 5 and set(statuses[5:]) == {429}


def test_a_session_ends_when_its_password_changes_or_account_goes(store_location: str) -> None:
    set_password(store_location, "ana", PASSWORD)
    set_password(store_location, "ben", PASSWORD)
    app = create_app(UiConfig(db=store_location))
    try:
        with (
            TestClient(app, base_url="http://localhost") as ana,
            TestClient(app, base_url="http://localhost") as ben,
        ):
            assert _login(ana, name="ana", password=PASSWORD).status_code == 303
            assert _login(ben, name="ben", password=PASSWORD).status_code == 303
            assert ana.get("/runs.json").status_code == 200
            set_password(store_location, "ana", "a new password")
            assert ana.get("/runs.json").status_code == 401
            assert ben.get("/runs.json").status_code == 200
            remove_account(store_location, "ben")
            assert ben.get("/runs.json").status_code == 401
            assert _login(ana, name="ana", password="a new password").status_code == 303
            assert ana.get("/runs.json").status_code == 200
    finally:
        app.state.ui.close()


def test_another_users_logins_never_evict_a_session() -> None:
    sessions = LoginSessions()
    ana = sessions.start("ana", "stamp-a", now=0.0)
    mallory = [sessions.start("mallory", "stamp-m", now=1.0 + n) for n in range(2000)]
    assert sessions.find(ana, now=3000.0) == ("ana", "stamp-a")
    live = [s for s in mallory if sessions.find(s, now=3000.0) is not None]
    assert live == mallory[-LoginSessions.PER_USER :]
    assert sessions.find(ana, now=LoginSessions.TTL_S + 1) is None


@pytest.mark.parametrize("stale", ["", "no-such-session"])
def test_unknown_sessions_open_nothing(tmp_path, stale: str) -> None:
    set_password(str(tmp_path / "ui.db"), "ana", PASSWORD)
    with _client(str(tmp_path / "ui.db")) as client:
        client.cookies.set("tg_session", stale)
        assert client.get("/runs.json").status_code == 401


def test_an_ipv6_guesser_rotating_through_its_64_is_one_address(tmp_path) -> None:
    """One host holds a whole /64: before, each of its addresses got its own count, so
    rotating through them gave a guess per address without end."""
    db = str(tmp_path / "ui.db")
    set_password(db, "ana", PASSWORD)
    app = create_app(UiConfig(db=db))
    try:
        statuses = []
        for n in range(LoginThrottle.PER_ADDRESS + 5):
            address = f"2001:db8:0:1::{n + 1:x}"
            with TestClient(app, base_url="http://localhost", client=(address, 1)) as c:
                statuses.append(_login(c, name="ana", password=f"guess-{n}").status_code)
        assert statuses[: LoginThrottle.PER_ADDRESS] == [401] * LoginThrottle.PER_ADDRESS
        assert set(statuses[LoginThrottle.PER_ADDRESS :]) == {429}
        with TestClient(app, base_url="http://localhost", client=("2001:db8:0:2::1", 1)) as c:
            assert _login(c, name="ana", password=PASSWORD).status_code == 303  # another /64
    finally:
        app.state.ui.close()
    assert address_key("2001:db8::1") == address_key("2001:db8::ffff:1") == "2001:db8::/64"
    assert address_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert address_key("192.0.2.7") == "192.0.2.7" and address_key("testclient") == "testclient"


def test_a_proxys_own_forwarded_line_wins_over_one_the_client_sent(tmp_path) -> None:
    """A proxy that appends its own X-Forwarded-For line (HAProxy's forwardfor) after the
    client's: before, the first line (the client's say) was read, and rotating it defeated
    the throttle behind the proxy."""
    proxied = {"trusted_proxies": frozenset({"10.0.0.5"}), "token": "t0ken-right"}
    with _client(str(tmp_path / "ui.db"), address="10.0.0.5", **proxied) as client:
        statuses = []
        for n in range(LoginThrottle.PER_ADDRESS + 3):
            lines = [("x-forwarded-for", f"203.0.113.{n}"), ("x-forwarded-for", "198.51.100.9")]
            form = {"csrf_token": csrf_token(client.get("/login").text), "token": "wrong"}
            answer = client.post("/login", data=form, headers=lines, follow_redirects=False)
            statuses.append(answer.status_code)
        assert statuses[: LoginThrottle.PER_ADDRESS] == [401] * LoginThrottle.PER_ADDRESS
        assert set(statuses[LoginThrottle.PER_ADDRESS :]) == {429}


def test_a_password_check_holds_no_other_request(tmp_path, monkeypatch) -> None:
    """Argon2id takes a few hundred milliseconds per check: on the event loop each guess held
    every other request, pages and stylesheet included, for as long. Here a check is held
    until a page has been served: before, the page waited for the check (10 s, then after it)."""
    from argon2 import PasswordHasher

    from tracegrade.web import accounts

    entered, release, order = threading.Event(), threading.Event(), []

    class HeldHasher(PasswordHasher):
        def verify(self, hash: str | bytes, password: str | bytes) -> bool:  # noqa: A002
            entered.set()
            release.wait(10)
            order.append("check")
            return super().verify(hash, password)

    db = str(tmp_path / "ui.db")
    set_password(db, "ana", PASSWORD)
    monkeypatch.setattr(accounts, "_HASHER", HeldHasher())
    with _client(db) as client:
        form = {"csrf_token": csrf_token(client.get("/login").text), "next": "/runs"}
        form |= {"name": "ana", "password": PASSWORD}
        answers: list[int] = []
        login = threading.Thread(
            target=lambda: answers.append(
                client.post("/login", data=form, follow_redirects=False).status_code
            )
        )
        login.start()
        assert entered.wait(10)
        assert client.get("/static/style.css").status_code == 200
        order.append("page")
        release.set()
        login.join(20)
    assert order == ["page", "check"] and answers == [303]


def _users(*args: str, password: str | None = None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tracegrade", "users", *args],
        input=None if password is None else password + "\n",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_users_command_ends_a_running_servers_sessions(store_location: str) -> None:
    """The real thing: `tracegrade ui` serving, `tracegrade users` run beside it (another
    process, the same store), the browser's session cookie ended by each change. Removing the
    last account leaves a server nobody can log in to, not an open one (before, it served
    everyone as its local user from then on, off loopback too)."""
    _users("add", "ana", "--db", store_location, "--password-stdin", password=PASSWORD)
    with ui_server(["--db", store_location]) as url, httpx.Client(base_url=url) as http:

        def log_in(password: str) -> int:
            form = {"csrf_token": csrf_token(http.get("/login").text), "next": "/runs"}
            form |= {"name": "ana", "password": password}
            return http.post("/login", data=form).status_code

        assert log_in(PASSWORD) == 303 and http.get("/runs.json").status_code == 200
        new = "another horse battery"
        _users("add", "ana", "--db", store_location, "--password-stdin", password=new)
        assert http.get("/runs.json").status_code == 401
        assert log_in(new) == 303 and http.get("/runs.json").status_code == 200
        _users("remove", "ana", "--db", store_location)
        assert http.get("/runs.json").status_code == 401
