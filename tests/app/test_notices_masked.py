"""What the app shows in its notification area carries no credential (issue 32): an error
from a library that is not ours (a connection error naming a URL with a password) is masked
by the same function as the CLI's messages and the log."""

from __future__ import annotations

from haiku.rag.logs import register_secret
from haiku_desk.services.notifications import Notifications


def test_a_failure_naming_a_url_with_a_password_is_shown_masked(qapp):
    key = "sk-test-0123456789abcdef0123"
    register_secret(key)
    notifications = Notifications()
    shown = []
    notifications.posted.connect(shown.append)
    notice = notifications.report_failure(
        "Asking the model",
        ConnectionError(f"cannot connect to http://alice:pw-9d8c7b6a@127.0.0.1:9/v1 with key {key}"),
    )
    assert shown == [notice]
    assert "pw-9d8c7b6a" not in notice.message and key not in notice.message
    assert "http://***@127.0.0.1:9/v1" in notice.message and "Asking the model" in notice.message
