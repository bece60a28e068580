"""Who uses the dashboard: named accounts (Argon2id hashes in the store), a trusted proxy's user
header, and the single token for automation; labels made on the Review page carry the name."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from tests.support.web_forms import csrf_token
from tracegrade.store import users
from tracegrade.store.traces import Store
from tracegrade.web import UiConfig, create_app
from tracegrade.web.accounts import set_password


def _client(db: Path, **config: object) -> TestClient:
    return TestClient(create_app(UiConfig(db=str(db), **config)), base_url="http://localhost")


def _login(client: TestClient, **fields: str):
    form = {"csrf_token": csrf_token(client.get("/login").text), "next": "/review", **fields}
    return client.post("/login", data=form, follow_redirects=False)


def test_a_named_account_logs_in_and_only_its_hash_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "ui.db"
    assert set_password(str(db), "ana", "correct horse")
    with Store(db) as store:
        stored = users.password_hash(store.db, "ana")
    assert stored.startswith("$argon2id$") and "correct horse" not in stored
    with _client(db) as client:
        assert (
            client.get(
                "/review", headers={"accept": "text/html"}, follow_redirects=False
            ).status_code
            == 303
        )
        assert _login(client, name="ana", password="wrong horse").status_code == 401
        assert _login(client, name="nobody", password="correct horse").status_code == 401
        assert _login(client, name="ana", password="correct horse").status_code == 303
        page = client.get("/review")
        assert page.status_code == 200 and '<span class="user" id="user">ana</span>' in page.text


def test_the_token_keeps_working_for_automation_beside_accounts(tmp_path: Path) -> None:
    db = tmp_path / "ui.db"
    set_password(str(db), "ana", "correct horse")
    with _client(db, token="automation") as client:
        assert client.get("/review.json").status_code == 401
        answer = client.get("/review.json", headers={"authorization": "Bearer automation"})
        assert answer.status_code == 200 and answer.json()["queues"] == []
        assert _login(client, token="automation").status_code == 303


def test_a_trusted_proxy_names_the_user_and_an_untrusted_one_does_not(tmp_path: Path) -> None:
    db = tmp_path / "ui.db"
    trusted = _client(db, user_header="X-Forwarded-User", trusted_proxies=frozenset({"testclient"}))
    with trusted as client:
        page = client.get("/review", headers={"x-forwarded-user": "ben"})
        assert page.status_code == 200 and 'id="user">ben<' in page.text
        assert client.get("/review.json").status_code == 401
    untrusted = _client(db, user_header="X-Forwarded-User", trusted_proxies=frozenset({"10.0.0.1"}))
    with untrusted as client:
        assert client.get("/review.json", headers={"x-forwarded-user": "ben"}).status_code == 401


def test_an_open_server_labels_as_its_local_user(tmp_path: Path) -> None:
    with _client(tmp_path / "ui.db", local_user="dev") as client:
        assert 'id="user">dev<' in client.get("/review").text
        empty = client.get("/agreement.json").json()
        assert empty["report"] is None and "no stored conversation" in empty["error"]
        form = {"csrf_token": csrf_token(client.get("/review").text), "name": ""}
        refused = client.post("/review/queues", data=form)
        assert refused.status_code == 400 and "give the queue a name" in refused.text
