"""Model settings: provider, server URL, model (discovered from the server), key, tool support.

Keys typed here go only to the OS keychain (through ``ModelsService.store_key``); the dialog
never writes them anywhere else, and clears the field once stored. Discovery and connection tests
run on the event loop, never blocking the window.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.bridge import Operation
from haiku_desk.services.models import (
    DEFAULT_BASE_URLS,
    HOSTED,
    PROVIDER_LABELS,
    ChatModelChoice,
    ConnectionReport,
    KeychainUnavailable,
    ModelsService,
)

NO_MODEL = ""
LOCAL_HINT = {
    "ollama": "Ollama runs models on this computer: install it, then `ollama pull qwen3`.",
    "openai-compatible": "LM Studio, llama.cpp (`llama-server --jinja`) or vLLM: the URL ends in /v1.",
    "openai": "Your key is stored in the OS keychain, never in a file.",
    "anthropic": "Your key is stored in the OS keychain, never in a file.",
    "google": "Your key is stored in the OS keychain, never in a file.",
    NO_MODEL: "Without a model, questions are answered with the best passages from your library.",
}


class ModelSettingsDialog(QDialog):
    def __init__(self, models: ModelsService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.models = models
        self.operation: Operation | None = None
        self.last_report: ConnectionReport | None = None
        self.setWindowTitle("Chat model")
        self.setAccessibleName("Model settings")
        self.setMinimumWidth(520)

        self.provider = QComboBox(self)
        self.provider.setAccessibleName("Provider")
        self.provider.addItem("No model (search only)", NO_MODEL)
        for key, label in PROVIDER_LABELS.items():
            self.provider.addItem(label, key)
        self.base_url = QLineEdit(self)
        self.base_url.setAccessibleName("Server URL")
        self.model_name = QComboBox(self)
        self.model_name.setEditable(True)
        self.model_name.setAccessibleName("Model")
        self.find_button = QPushButton("Find models", self)
        self.find_button.setAccessibleName("Find models on the server")
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_name, 1)
        model_row.addWidget(self.find_button)
        self.key = QLineEdit(self)
        self.key.setAccessibleName("API key")
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_status = QLabel(self)
        self.key_status.setAccessibleName("Key status")
        self.key_status.setWordWrap(True)
        self.no_tools = QCheckBox("This model cannot call tools: answer from passages", self)
        self.no_tools.setAccessibleName("Answer without tools")
        self.hint = QLabel(self)
        self.hint.setWordWrap(True)
        self.test_button = QPushButton("Test connection", self)
        self.test_button.setAccessibleName("Test connection")
        self.status = QLabel(self)
        self.status.setAccessibleName("Connection status")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        form = QFormLayout()
        form.addRow("Provider", self.provider)
        form.addRow("Server URL", self.base_url)
        form.addRow("Model", model_row)
        form.addRow("API key", self.key)
        form.addRow("", self.key_status)
        form.addRow("", self.no_tools)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self
        )
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.hint)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.status, 1)
        layout.addLayout(test_row)
        layout.addWidget(self.buttons)

        self.provider.currentIndexChanged.connect(self._provider_changed)
        self.find_button.clicked.connect(self.find_models)
        self.test_button.clicked.connect(self.test_connection)
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        self._load()

    # --- state ----------------------------------------------------------------------------

    @property
    def provider_key(self) -> str:
        return self.provider.currentData() or NO_MODEL

    def _load(self) -> None:
        config = self.models.model_config()
        index = self.provider.findData(config.provider or NO_MODEL)
        self.provider.setCurrentIndex(max(index, 0))
        self._provider_changed()
        if config.base_url:
            self.base_url.setText(config.base_url)
        if config.name:
            self.model_name.setEditText(config.name)
        self.no_tools.setChecked(config.supports_tools is False)

    def _provider_changed(self) -> None:
        provider = self.provider_key
        chosen = provider != NO_MODEL
        for widget in (
            self.base_url,
            self.model_name,
            self.find_button,
            self.test_button,
            self.no_tools,
        ):
            widget.setEnabled(chosen)
        self.key.setEnabled(chosen and provider != "ollama")
        if provider == "ollama":
            self.base_url.setText(self.models.config.providers.ollama.base_url)
        elif chosen:
            self.base_url.setText(DEFAULT_BASE_URLS[provider])
        else:
            self.base_url.clear()
        self.model_name.clear()
        self.hint.setText(LOCAL_HINT[provider])
        self.status.clear()
        self._show_key_status()

    def _show_key_status(self) -> None:
        provider = self.provider_key
        if provider in (NO_MODEL, "ollama"):
            self.key_status.setText("")
        elif not self.models.keychain_available():
            self.key_status.setText(
                "No OS keychain is available: keys cannot be stored (use the provider's "
                "environment variable instead)."
                if provider in HOSTED
                else "No OS keychain is available."
            )
        elif self.models.has_key(provider):
            self.key_status.setText("A key is stored in the OS keychain.")
        else:
            self.key_status.setText(
                "Enter a key to store it in the OS keychain."
                if provider in HOSTED
                else "A key is optional."
            )

    def choice(self) -> ChatModelChoice | None:
        provider = self.provider_key
        name = self.model_name.currentText().strip()
        if provider == NO_MODEL or not name:
            return None
        url = self.base_url.text().strip() or None
        if url == DEFAULT_BASE_URLS.get(provider) and provider != "openai-compatible":
            url = None  # the provider's default: follow it if it ever changes
        return ChatModelChoice(
            provider=provider,  # type: ignore[arg-type]
            name=name,
            base_url=url,
            supports_tools=False if self.no_tools.isChecked() else None,
        )

    # --- actions --------------------------------------------------------------------------

    def _run(self, title: str, work: Any, done: Any) -> Operation:
        if self.operation is not None and self.operation.running:
            self.operation.cancel()

        async def body(token: Any, report: Any) -> Any:
            return await work

        operation = Operation(title, body, self)
        operation.succeeded.connect(done)
        operation.failed.connect(lambda exc: self.status.setText(str(exc)))
        self.operation = operation.start()
        self.status.setText(f"{title}…")
        return operation

    def find_models(self) -> Operation | None:
        provider = self.provider_key
        if provider == NO_MODEL:
            return None
        report = self.models.test_connection(
            provider, self.base_url.text().strip() or None, None, self.key.text().strip() or None
        )
        return self._run("Finding models", report, self._show_models)

    def _show_models(self, report: ConnectionReport) -> None:
        self.last_report = report
        self.status.setText(report.message)
        if report.ok:
            typed = self.model_name.currentText()
            self.model_name.clear()
            self.model_name.addItems(report.models)
            if typed in report.models:
                self.model_name.setCurrentText(typed)

    def test_connection(self) -> Operation | None:
        provider = self.provider_key
        if provider == NO_MODEL:
            return None
        report = self.models.test_connection(
            provider,
            self.base_url.text().strip() or None,
            self.model_name.currentText().strip() or None,
            self.key.text().strip() or None,
        )
        return self._run("Testing the connection", report, self._show_test)

    def _show_test(self, report: ConnectionReport) -> None:
        self.last_report = report
        self.status.setText(report.message)
        if report.supports_tools is False:
            self.no_tools.setChecked(True)  # chosen automatically; the user may still change it

    def save(self) -> None:
        """Store a typed key in the keychain (only there), then remember the choice."""
        provider = self.provider_key
        typed_key = self.key.text().strip()
        if typed_key and provider != NO_MODEL:
            try:
                self.models.store_key(provider, typed_key)
            except KeychainUnavailable as exc:
                self.key_status.setText(str(exc))
                return  # keep the dialog open: the key was not stored
            self.key.clear()
        self.models.choose(self.choice())
        self.accept()
