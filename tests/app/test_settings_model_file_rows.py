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


def test_a_saved_model_file_is_listed_and_shown_by_its_summary_when_settings_opens(
    qloop, qtbot, config, tmp_path
) -> None:
    """A tester's defect: after a download, Settings opened with an empty model-file list (until
    Find model files) and the saved file shown as a clipped path. Opening Settings lists the
    files (found off the GUI thread; the next opening starts from that list) and shows the
    chosen one as its summary."""
    from gguf_factory import tiny_llama
    from qt_helpers import run_until

    from haiku.rag.local_models import Roots
    from haiku_desk.services.model_choices import ChatModelChoice

    path = tiny_llama(tmp_path / "lms" / "someone" / "Tiny-GGUF" / "tiny.gguf", name="Tiny Chat", context=8192)
    models = ModelsService(config, Notifications())
    models.model_file_roots = Roots(lm_studio=(tmp_path / "lms",))
    models.choose(ChatModelChoice(provider="model-file", name=str(path)))

    dialog = ModelSettingsDialog(models)
    qtbot.addWidget(dialog)
    dialog.show()
    operation = dialog.operation
    assert operation is not None  # nothing pressed: the files are being found
    run_until(qloop, lambda: not operation.running)
    assert dialog.model_name.count() == 1 and dialog.model_name.itemData(0) == str(path)
    shown_text = dialog.model_name.currentText()
    assert "tiny.gguf" in shown_text and "context" in shown_text and str(tmp_path) not in shown_text, shown_text
    assert dialog.chosen_model_name() == str(path)
    dialog.layout().activate()  # the box is as wide as the summary: not clipped ("2k cc")
    line = dialog.model_name.lineEdit()
    assert line is not None and line.width() >= line.fontMetrics().horizontalAdvance(shown_text) + 8, shown_text  # (its margins)
    # the dialog widened for it: nothing overlaps the box (the row's label, Find model files)
    box, find = dialog.model_name, dialog.find_button
    assert box.mapTo(dialog, box.rect().topRight()).x() < find.mapTo(dialog, find.rect().topLeft()).x()
    label = dialog.model_label
    assert label.width() >= label.fontMetrics().horizontalAdvance(label.text())
    assert dialog.width() >= dialog.minimumSizeHint().width()
    dialog.reject()

    again = ModelSettingsDialog(models)  # the last list at once, before the new one is found
    qtbot.addWidget(again)
    again.show()
    assert again.model_name.count() == 1 and again.chosen_model_name() == str(path)
    assert str(tmp_path) not in again.model_name.currentText()
    assert again.operation is not None
    run_until(qloop, lambda: not again.operation.running)
    assert again.chosen_model_name() == str(path) and str(tmp_path) not in again.model_name.currentText()
