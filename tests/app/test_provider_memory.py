"""Every provider remembers its own URL and model (issue 34): switching to search only and
back, or to another provider and back, never resets them; older settings files are migrated."""

from __future__ import annotations

import json

from haiku_desk.services.models import SETTINGS_VERSION, ChatModelChoice, ModelsService
from haiku_desk.services.notifications import Notifications
from haiku_desk.views.settings_dialog import NO_MODEL, ModelSettingsDialog

LM_STUDIO = "http://192.168.1.20:1234/v1"


def open_dialog(qtbot, models: ModelsService) -> ModelSettingsDialog:
    dialog = ModelSettingsDialog(models)
    qtbot.addWidget(dialog)
    return dialog


def pick(dialog: ModelSettingsDialog, provider: str) -> None:
    dialog.provider.setCurrentIndex(dialog.provider.findData(provider))


def test_switching_to_search_only_and_back_keeps_each_provider_s_url_and_model(qtbot, config):
    models = ModelsService(config, Notifications())
    models.choose(ChatModelChoice(provider="openai-compatible", name="qwen3-8b", base_url=LM_STUDIO))

    dialog = open_dialog(qtbot, models)
    pick(dialog, "ollama")  # look at another provider, type its model
    dialog.model_name.setEditText("gemma3:4b")
    pick(dialog, "openai-compatible")  # back: as it was
    assert (dialog.base_url.text(), dialog.model_name.currentText()) == (LM_STUDIO, "qwen3-8b")
    pick(dialog, NO_MODEL)
    assert dialog.model_name.currentText() == "" and dialog.base_url.text() == ""
    pick(dialog, "anthropic")  # a provider never chosen: its defaults, not another's model
    assert dialog.model_name.currentText() == "" and dialog.base_url.text() == "https://api.anthropic.com"
    pick(dialog, NO_MODEL)
    dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    assert models.choice is None and not models.is_configured()  # search only now

    again = open_dialog(qtbot, ModelsService(config, Notifications()))  # a later session
    assert again.provider_key == NO_MODEL
    pick(again, "openai-compatible")
    assert (again.base_url.text(), again.model_name.currentText()) == (LM_STUDIO, "qwen3-8b")
    pick(again, "ollama")  # the model typed for Ollama in the first dialog, kept on Save
    assert again.model_name.currentText() == "gemma3:4b"
    assert again.base_url.text() == config.providers.ollama.base_url
    pick(again, "openai-compatible")
    again.buttons.button(again.buttons.StandardButton.Save).click()
    choice = again.models.choice
    assert (choice.provider, choice.name, choice.base_url) == ("openai-compatible", "qwen3-8b", LM_STUDIO)


def test_a_version_1_settings_file_is_migrated_keeping_everything(config):
    models = ModelsService(config, Notifications())
    models.settings_path.parent.mkdir(parents=True, exist_ok=True)
    old = {
        "version": 1,
        "model": {"provider": "openai-compatible", "name": "stub-model", "base_url": LM_STUDIO},
        "rerank": {"provider": "http", "base_url": "http://127.0.0.1:8080/v1", "model": None},
        "embedders": {"/data/library.lancedb": {"provider": "ollama", "model": "bge-m3", "base_url": None}},
    }
    models.settings_path.write_text(json.dumps(old))

    notifications = Notifications()
    migrated = ModelsService(config, notifications)
    assert notifications.history == []  # read, not refused
    assert migrated.choice is not None and migrated.choice.base_url == LM_STUDIO
    kept = migrated.remembered("openai-compatible")
    assert kept is not None and (kept.name, kept.base_url) == ("stub-model", LM_STUDIO)
    assert migrated.rerank_choice().base_url == "http://127.0.0.1:8080/v1"
    assert migrated.settings.embedders["/data/library.lancedb"].model == "bge-m3"
    on_disk = json.loads(models.settings_path.read_text())  # written back as the current version
    assert on_disk["version"] == SETTINGS_VERSION == 2
    assert on_disk["providers"]["openai-compatible"]["name"] == "stub-model"
    assert on_disk["model"]["base_url"] == LM_STUDIO and on_disk["rerank"] == old["rerank"]

    migrated.choose(None)  # search only: the provider's URL and model stay remembered
    assert ModelsService(config, Notifications()).remembered("openai-compatible").base_url == LM_STUDIO
