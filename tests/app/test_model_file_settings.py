"""The settings dialog's "Model file on this computer" provider: Find lists the GGUF files of an
LM Studio-style folder (made in the test), Test loads one in the built-in runtime and probes
tool calling, Save chooses it; the chat then answers from passages (the probe said no tools)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf_factory import tiny_llama
from qt_helpers import run_until

from haiku.rag.local_models import Roots, provider
from haiku.rag.local_models.runtime import runtime_available
from haiku_desk.services.models import ModelsService
from haiku_desk.services.notifications import Notifications
from haiku_desk.views.settings_dialog import ModelSettingsDialog


@pytest.fixture
def model_path(tmp_path: Path):
    path = tiny_llama(tmp_path / "lms" / "someone" / "Tiny-GGUF" / "tiny.gguf", name="Tiny Chat", context=8192)
    yield path
    provider.unload()
    provider._verdicts.clear()


@pytest.mark.skipif(not runtime_available(), reason="xllamacpp is not installed")
def test_a_model_file_is_found_tested_and_chosen(qloop, qtbot, config, model_path: Path, tmp_path: Path):
    models = ModelsService(config, Notifications())
    models.model_file_roots = Roots(lm_studio=(tmp_path / "lms",))
    dialog = ModelSettingsDialog(models)
    qtbot.addWidget(dialog)
    dialog.provider.setCurrentIndex(dialog.provider.findData("model-file"))
    assert not dialog.key.isEnabled() and not dialog.base_url.isEnabled()  # no server, no key

    operation = dialog.find_models()
    run_until(qloop, lambda: not operation.running)
    # listed as a person reads it (name, size, context, where from), the path kept as its value
    assert dialog.model_name.count() == 1
    shown = dialog.model_name.itemText(0)
    assert str(tmp_path) not in shown and "tiny.gguf" in shown and "context" in shown, shown
    assert shown.endswith("(lm-studio)")
    assert dialog.model_name.itemData(0) == str(model_path)
    assert dialog.status.text() == "1 model file found on this computer"

    dialog.model_name.setCurrentIndex(0)
    assert dialog.chosen_model_name() == str(model_path)
    operation = dialog.test_connection()
    run_until(qloop, lambda: not operation.running)
    status = dialog.status.text()
    assert status.startswith("Loaded tiny.gguf · ") and "free" in status and "no-tool mode" in status
    assert dialog.no_tools.isChecked()  # the probe found no tool call

    dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    choice = models.choice
    assert choice is not None and (choice.provider, choice.name) == ("model-file", str(model_path))
    assert choice.supports_tools is False and not models.supports_tools()
    # the chat's header names the model as its file does, not by its path
    assert models.describe() == "Tiny Chat (Model file on this computer)"
    assert models.probe_cache.exists()  # the verdict outlives the session


def test_an_unprobed_model_file_answers_from_passages(qloop, config, tmp_path: Path):
    from haiku_desk.services.model_choices import ChatModelChoice

    path = tiny_llama(tmp_path / "t.gguf")
    models = ModelsService(config, Notifications())
    models.choose(ChatModelChoice(provider="model-file", name=str(path)))
    assert not models.supports_tools()  # until its probe says it can call tools
