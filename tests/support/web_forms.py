"""Dashboard forms read as a browser submits them: the CSRF token and a form's fields."""

from __future__ import annotations

import html
import re
from typing import Any

from starlette.testclient import TestClient


def csrf_token(page: str) -> str:
    """The CSRF token of the first form in a page."""
    match = re.search(r'name="csrf_token" value="([0-9a-f]+)"', page)
    assert match, "no CSRF token in the page"
    return match.group(1)


def form_fields(client: TestClient, url: str) -> dict[str, Any]:
    """The form's fields as the browser would submit them (hidden ones included; a checkbox
    when checked; the expected tool rows, ``expected_tool``, as a list)."""
    page = client.get(url).text
    fields: dict[str, Any] = {"expected_tool": []}
    for tag in re.findall(r"<input[^>]*>", page):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name is None or ('type="checkbox"' in tag and "checked" not in tag):
            continue
        text = html.unescape(value.group(1)) if value else "on"
        if name.group(1) == "expected_tool":
            fields["expected_tool"].append(text)
        else:
            fields[name.group(1)] = text
    for name, text in re.findall(r'<textarea name="([^"]+)"[^>]*>(.*?)</textarea>', page, re.S):
        fields[name] = html.unescape(text)
    for name, body in re.findall(r'<select name="([^"]+)"[^>]*>(.*?)</select>', page, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected', body)
        fields[name] = html.unescape(chosen.group(1)) if chosen else ""
    fields["csrf_token"] = csrf_token(page)
    return fields
