"""Fixtures for the web tests: one real store per session (:mod:`tests.web.shop`), and an
in-process client of the app over a fresh copy of the golden dataset per test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.web.shop import ShopStore, build
from tracegrade.web import UiConfig, create_app


@pytest.fixture(scope="session")
def shop(tmp_path_factory: pytest.TempPathFactory) -> ShopStore:
    return build(tmp_path_factory.mktemp("web-store"))


@pytest.fixture
def golden(shop: ShopStore, tmp_path: Path) -> Path:
    """A fresh copy of the golden dataset for this test to edit."""
    path = tmp_path / "golden.yaml"
    shutil.copy(shop.golden, path)
    return path


@pytest.fixture
def client(shop: ShopStore, golden: Path) -> Iterator[TestClient]:
    """The app over the shared store (read by these tests) and this test's dataset copies."""
    app = create_app(UiConfig(db=str(shop.db), datasets=(golden, shop.xss_dataset)))
    with TestClient(app, base_url="http://localhost") as test_client:
        yield test_client
    app.state.ui.close()
