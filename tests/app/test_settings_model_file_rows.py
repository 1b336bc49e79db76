"""A tester's defect: Settings showed "Server URL" and "API key" for the model-file provider
(greyed out, but there). A model file has neither: its rows are hidden, the model row becomes
the model file's choice with the catalog's entry beside it, and another provider shows them
again."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel

from haiku_desk.services.models import ModelsService
from haiku_desk.services.notifications import Notifications
from haiku_desk.views.settings_dialog import ModelSettingsDialog


def label_of(dialog: ModelSettingsDialog, field) -> QLabel:
    label = dialog.form.labelForField(field)
    assert isinstance(label, QLabel)
    return label


def shown(dialog: ModelSettingsDialog, widget) -> bool:
    return widget.isVisibleTo(dialog)


def test_a_model_file_has_no_server_url_or_key_rows_but_its_file_choice(qtbot, config) -> None:
    dialog = ModelSettingsDialog(ModelsService(config, Notifications()))
    qtbot.addWidget(dialog)
    dialog.show()
    server_rows = (dialog.base_url, dialog.key, dialog.key_status)

    dialog.provider.setCurrentIndex(dialog.provider.findData("openai-compatible"))
    assert all(shown(dialog, w) for w in server_rows)
    assert shown(dialog, label_of(dialog, dialog.base_url)) and shown(dialog, label_of(dialog, dialog.key))
    assert dialog.model_label.text() == "Model" and not shown(dialog, dialog.catalog_button)

    dialog.provider.setCurrentIndex(dialog.provider.findData("model-file"))
    assert not any(shown(dialog, w) for w in server_rows)
    assert not shown(dialog, label_of(dialog, dialog.base_url))
    assert not shown(dialog, label_of(dialog, dialog.key))
    assert dialog.model_label.text() == "Model file" and dialog.model_name.accessibleName() == "Model file"
    assert shown(dialog, dialog.model_name) and dialog.find_button.text() == "Find model files"
    assert shown(dialog, dialog.catalog_button)
    assert dialog.catalog_button.text() == "Download a recommended model…"

    dialog.provider.setCurrentIndex(dialog.provider.findData("openai"))  # a hosted one: key again
    assert all(shown(dialog, w) for w in server_rows) and not shown(dialog, dialog.catalog_button)
    assert dialog.model_label.text() == "Model" and dialog.find_button.text() == "Find models"


def test_a_saved_model_file_choice_opens_without_the_server_rows(qtbot, config, tmp_path) -> None:
    from haiku_desk.services.model_choices import ChatModelChoice

    models = ModelsService(config, Notifications())
    models.choose(ChatModelChoice(provider="model-file", name=str(tmp_path / "m.gguf")))
    dialog = ModelSettingsDialog(models)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.provider_key == "model-file"
    assert not shown(dialog, dialog.base_url) and not shown(dialog, dialog.key)
    assert dialog.model_name.currentText() == str(tmp_path / "m.gguf")
