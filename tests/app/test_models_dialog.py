"""The model settings dialog against a local Ollama-style server on 127.0.0.1."""

from __future__ import annotations

import json

import keyring
from keyring.backends import fail
from qt_helpers import run_until

from app.test_models_service import SECRET, MemoryKeyring, StubModelServer
from haiku.rag.models import KEYRING_SERVICE
from haiku_desk.services.models import ModelsService
from haiku_desk.services.notifications import Notifications
from haiku_desk.views.settings_dialog import ModelSettingsDialog


def make_dialog(qtbot, config) -> ModelSettingsDialog:
    models = ModelsService(config, Notifications())
    dialog = ModelSettingsDialog(models)
    qtbot.addWidget(dialog)
    return dialog


def test_ollama_models_are_found_tested_and_chosen(qloop, qtbot, config):
    with StubModelServer(["qwen3:8b", "gemma:2b"], tool_models={"qwen3:8b"}) as server:
        dialog = make_dialog(qtbot, config)
        assert dialog.provider_key == ""  # nothing configured: search only
        dialog.provider.setCurrentIndex(dialog.provider.findData("ollama"))
        assert not dialog.key.isEnabled()  # Ollama needs no key
        dialog.base_url.setText(server.url)

        operation = dialog.find_models()
        run_until(qloop, lambda: not operation.running)
        items = [dialog.model_name.itemText(i) for i in range(dialog.model_name.count())]
        assert items == ["qwen3:8b", "gemma:2b"]
        assert dialog.status.text() == "Connected: 2 models available"

        dialog.model_name.setCurrentText("gemma:2b")
        operation = dialog.test_connection()
        run_until(qloop, lambda: not operation.running)
        assert dialog.no_tools.isChecked()  # the server says gemma cannot call tools
        assert "no-tool mode" in dialog.status.text()

        dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
        assert dialog.result() == dialog.DialogCode.Accepted
        choice = dialog.models.choice
        assert (choice.provider, choice.name, choice.base_url) == ("ollama", "gemma:2b", server.url)
        assert choice.supports_tools is False and not dialog.models.supports_tools()


def test_an_unreachable_server_is_reported_in_the_dialog(qloop, qtbot, config):
    dialog = make_dialog(qtbot, config)
    dialog.provider.setCurrentIndex(dialog.provider.findData("ollama"))
    dialog.base_url.setText("http://127.0.0.1:9")
    operation = dialog.test_connection()
    run_until(qloop, lambda: not operation.running)
    assert "cannot reach http://127.0.0.1:9" in dialog.status.text()


def test_a_key_goes_to_the_keychain_only(qloop, qtbot, config):
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        dialog = make_dialog(qtbot, config)
        dialog.provider.setCurrentIndex(dialog.provider.findData("openai"))
        assert "Enter a key" in dialog.key_status.text()
        dialog.model_name.setEditText("gpt-5-mini")
        dialog.key.setText(SECRET)
        dialog.save()
        assert backend.items[(KEYRING_SERVICE, "openai")] == SECRET
        assert dialog.key.text() == ""
        saved = dialog.models.settings_path.read_text()
        assert json.loads(saved)["model"]["name"] == "gpt-5-mini" and SECRET not in saved
    finally:
        keyring.set_keyring(previous)


def test_without_a_keychain_the_dialog_says_so_and_keeps_the_key_unsaved(qloop, qtbot, config):
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        dialog = make_dialog(qtbot, config)
        dialog.provider.setCurrentIndex(dialog.provider.findData("anthropic"))
        assert "No OS keychain" in dialog.key_status.text()
        dialog.model_name.setEditText("claude-sonnet-4-5")
        dialog.key.setText(SECRET)
        dialog.save()
        assert "No OS keychain is available" in dialog.key_status.text()
        assert dialog.result() != dialog.DialogCode.Accepted
        assert dialog.models.choice is None and not dialog.models.settings_path.exists()
    finally:
        keyring.set_keyring(previous)
