"""Settings: the chat model (provider, server URL, model discovered from the server, key, tool
support) and, on the Search tab, the embedder and the reranker.

A model file (the built-in llama.cpp) has no server and no key: for it those rows are hidden,
the model row becomes the model file's choice (the files found on this computer), and
"Download a recommended model…" opens the catalog (``views/model_catalog_dialog``); a finished
download is listed with the others.

Changing the embedder re-embeds the library (``ModelsService.rebuild_vectors``): the tab shows
its progress and a Cancel button; the library stays searchable meanwhile and a cancel keeps
the old vectors. The reranker is off or a /rerank endpoint, saved with the dialog.

Keys typed here go only to the OS keychain (through ``ModelsService.store_key``); the dialog
never writes them anywhere else, and clears the field once stored. Discovery and connection tests
run on the event loop, never blocking the window.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, cast

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
    QProgressBar,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.bridge import Operation
from haiku_desk.services.models import (
    DEFAULT_BASE_URLS,
    EMBEDDER_LABELS,
    HOSTED,
    PROVIDER_LABELS,
    SERVERLESS_EMBEDDERS,
    ChatModelChoice,
    ConnectionReport,
    EmbedderChoice,
    EmbedderProvider,
    KeychainUnavailable,
    ModelsService,
    RerankChoice,
)

NO_MODEL = ""
LOCAL_HINT = {
    "ollama": "Ollama runs models on this computer: install it, then `ollama pull qwen3`.",
    "openai-compatible": "LM Studio, llama.cpp (`llama-server --jinja`) or vLLM: the URL ends in /v1.",
    "openai": "Your key is stored in the OS keychain, never in a file.",
    "anthropic": "Your key is stored in the OS keychain, never in a file.",
    "google": "Your key is stored in the OS keychain, never in a file.",
    "model-file": "A GGUF file from Ollama, LM Studio, GPT4All or your disk, run inside "
    "haiku-desk: no server. Test loads it and checks whether it can call tools.",
    NO_MODEL: "Without a model, questions are answered with the best passages from your library.",
}


# the widest model-file summary the Model file box widens for (longer ones scroll), and what
# the box adds around its text (frame, margins, arrow)
MODEL_FILE_WIDTH = 560
COMBO_CHROME = 64


class ModelSettingsDialog(QDialog):
    def __init__(self, models: ModelsService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.models = models
        self.operation: Operation | None = None
        self.last_report: ConnectionReport | None = None
        self.setWindowTitle("Settings")
        self.setAccessibleName("Model settings")
        self.setMinimumWidth(520)
        # the Search tab's wrapped hints and the rebuild's progress row need this much height
        self.setMinimumHeight(500)

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
        self.catalog_button = QPushButton("Download a recommended model…", self)
        self.catalog_button.setAccessibleName("Download a recommended model")
        self.catalog_dialog: QDialog | None = None
        self._select_after_find: str | None = None  # a model file to choose once listed
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

        self.model_label = QLabel("Model", self)
        catalog_row = QHBoxLayout()
        catalog_row.addWidget(self.catalog_button)
        catalog_row.addStretch(1)
        form = QFormLayout()
        form.addRow("Provider", self.provider)
        form.addRow("Server URL", self.base_url)
        form.addRow(self.model_label, model_row)
        form.addRow("", catalog_row)
        form.addRow("API key", self.key)
        form.addRow("", self.key_status)
        form.addRow("", self.no_tools)
        self.form = form
        self._catalog_row = catalog_row
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self
        )
        chat_tab = QWidget(self)
        chat_layout = QVBoxLayout(chat_tab)
        chat_layout.addLayout(form)
        chat_layout.addWidget(self.hint)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.status, 1)
        chat_layout.addLayout(test_row)
        chat_layout.addStretch(1)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(chat_tab, "Chat model")
        self.search_tab = SearchSettings(models, self)
        self.tabs.addTab(self.search_tab, "Search")
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(self.buttons)

        # each provider's fields as last shown in this dialog: switching away and back (to
        # search only, to try another server) finds them again
        self._edited: dict[str, ChatModelChoice] = {}
        self._shown_provider: str | None = None
        self.provider.currentIndexChanged.connect(self._provider_changed)
        self.find_button.clicked.connect(self.find_models)
        self.catalog_button.clicked.connect(self.open_catalog)
        models.downloads.finished.connect(self._model_downloaded)
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
        self.provider.blockSignals(True)
        self.provider.setCurrentIndex(max(index, 0))
        self.provider.blockSignals(False)
        self._provider_changed()
        if config.base_url:
            self.base_url.setText(config.base_url)
        if config.name and self.chosen_model_name() != config.name:  # not over a listed file's summary
            self.model_name.setEditText(config.name)
        self.no_tools.setChecked(config.supports_tools is False)

    def _fields(self, provider: str) -> ChatModelChoice | None:
        """What the form holds for ``provider`` (None without a model name)."""
        name = self.chosen_model_name()
        if provider == NO_MODEL or not name:
            return None
        url = self.base_url.text().strip() or None
        if url == self._default_url(provider) and provider != "openai-compatible":
            url = None  # the provider's default: follow it if it ever changes
        return ChatModelChoice(
            provider=provider,  # type: ignore[arg-type]
            name=name,
            base_url=url,
            supports_tools=False if self.no_tools.isChecked() else None,
        )

    def _default_url(self, provider: str) -> str:
        if provider == "ollama":
            return self.models.config.providers.ollama.base_url
        return DEFAULT_BASE_URLS.get(provider, "")

    def _provider_changed(self) -> None:
        previous = self._shown_provider
        if previous is not None and previous != NO_MODEL:
            edited = self._fields(previous)
            if edited is not None:
                self._edited[previous] = edited
        provider = self.provider_key
        self._shown_provider = provider
        chosen = provider != NO_MODEL
        for widget in (
            self.base_url,
            self.model_name,
            self.find_button,
            self.test_button,
            self.no_tools,
        ):
            widget.setEnabled(chosen)
        self.key.setEnabled(chosen and provider not in ("ollama", "model-file"))
        self.base_url.setEnabled(chosen and provider != "model-file")  # no server
        # a model file has no server and no key: its rows give way to the file's choice
        file = provider == "model-file"
        for row in (self.base_url, self.key, self.key_status):
            self.form.setRowVisible(row, not file)
        self.form.setRowVisible(self._catalog_row, file)
        self.model_label.setText("Model file" if file else "Model")
        self.model_name.setAccessibleName("Model file" if file else "Model")
        self.find_button.setText("Find model files" if file else "Find models")
        self.find_button.setAccessibleName("Find model files on this computer" if file else "Find models on the server")
        # this provider's own URL and model: as edited in this dialog, else as last chosen
        kept = self._edited.get(provider) or self.models.remembered(provider)
        if chosen:
            self.base_url.setText((kept.base_url if kept else None) or self._default_url(provider))
        else:
            self.base_url.clear()
        self.model_name.clear()
        self.model_name.setMinimumWidth(0)  # a model file's summary widened it (see _show_models)
        self.model_name.setEditText(kept.name if kept is not None else "")  # clear() keeps it
        self.no_tools.setChecked(kept is not None and kept.supports_tools is False)
        self.hint.setText(LOCAL_HINT[provider])
        self.status.clear()
        self._show_key_status()
        if file:  # the model files listed at once: the last ones found, then a fresh look
            self._list_model_files()

    def _list_model_files(self) -> None:
        """Fill the model-file list without a click: from the last discovery (if any), then
        from a new one off the GUI thread (GGUF headers only), the chosen file kept chosen and
        shown by its summary."""
        last = self.models.last_model_files
        if last is not None:
            self._show_models(last)
        if not (self.operation is not None and self.operation.running):
            self.find_models()

    def _show_key_status(self) -> None:
        provider = self.provider_key
        if provider in (NO_MODEL, "ollama", "model-file"):
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
        return self._fields(self.provider_key)

    # --- actions --------------------------------------------------------------------------

    def _run(self, title: str, work: Any, done: Any) -> Operation:
        if self.operation is not None and self.operation.running:
            self.operation.cancel()

        async def body(token: Any, report: Any) -> Any:
            # a callable makes its coroutine only when run (one cancelled first is never made)
            return await (work() if callable(work) else work)

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
        url, key = self.base_url.text().strip() or None, self.key.text().strip() or None
        report = lambda: self.models.test_connection(provider, url, None, key)  # noqa: E731
        return self._run("Finding models", report, lambda found: self._found(provider, found))

    def _found(self, provider: str, report: ConnectionReport) -> None:
        if provider == "model-file" and report.ok:
            self.models.last_model_files = report  # the next Settings starts from this list
        if provider == self.provider_key:  # not another provider's, chosen meanwhile
            self._show_models(report)

    def _show_models(self, report: ConnectionReport) -> None:
        self.last_report = report
        self.status.setText(report.message)
        if report.ok:
            typed = self.chosen_model_name()
            self.model_name.clear()
            labels = report.labels if len(report.labels) == len(report.models) else report.models
            for label, name in zip(labels, report.models, strict=True):
                self.model_name.addItem(label, name)  # shown as read, kept as named
                self.model_name.setItemData(self.model_name.count() - 1, name, Qt.ItemDataRole.ToolTipRole)
            view = self.model_name.view()  # the list as wide as its longest description
            view.setMinimumWidth(view.sizeHintForColumn(0) + 2 * view.frameWidth() + 8)
            if self.provider_key == "model-file" and labels:  # the box shows a summary whole
                metrics = self.model_name.fontMetrics()
                widest = max(metrics.horizontalAdvance(label) for label in labels)
                self.model_name.setMinimumWidth(min(widest + COMBO_CHROME, MODEL_FILE_WIDTH))
                self._fit_width()
            wanted, self._select_after_find = self._select_after_find, None
            if wanted in report.models:
                self.model_name.setCurrentIndex(report.models.index(wanted))
            elif typed in report.models:
                self.model_name.setCurrentIndex(report.models.index(typed))
            line = self.model_name.lineEdit()
            if line is not None:
                line.setCursorPosition(0)  # a long description shows its start (the name)

    def _fit_width(self) -> None:
        """Widen the dialog to its rows' least width (its own minimum width is set, so the
        layout does not do this by itself): no row's widgets overlap."""
        widget: QWidget | None = self.model_name.parentWidget()
        while widget is not None:  # the box's layouts, inner to outer, measured afresh
            widget.updateGeometry()  # (its size hints, cached in the outer layout's item)
            inner = widget.layout()
            if inner is not None:
                inner.invalidate()
                inner.activate()
            widget = None if widget is self else widget.parentWidget()
        needed = self.minimumSizeHint().width()
        if self.width() < needed:
            self.resize(needed, self.height())

    def open_catalog(self) -> QDialog:
        """The catalog of recommended model files and their downloads (a dialog of its own)."""
        from haiku_desk.views.model_catalog_dialog import ModelCatalogDialog

        dialog = ModelCatalogDialog(self.models.downloads, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.model_chosen.connect(self._model_chosen)
        dialog.open()
        self.catalog_dialog = dialog
        return dialog

    def _model_downloaded(self, file_name: str, path: str) -> None:
        """A catalog download finished: a chat file is among the model files listed again, an
        embedding file among the Search tab's embedders (not chosen until asked)."""
        if self.models.downloads.row(file_name).kind != "chat":
            self.search_tab.offer_model_file(path, choose=False)
        elif self.provider_key == "model-file" and not (self.operation is not None and self.operation.running):
            self.find_models()  # (never in the middle of a Test, which may be loading a model)

    def _model_chosen(self, path: str, kind: str) -> None:
        """"Use this model" in the catalog: a chat file becomes this dialog's model (saved
        with Save); an embedding file is offered on the Search tab."""
        if kind != "chat":
            self.search_tab.offer_model_file(path)
            self.tabs.setCurrentWidget(self.search_tab)
            return
        index = self.provider.findData("model-file")
        if self.provider.currentIndex() != index:
            self.provider.setCurrentIndex(index)
        self.model_name.setEditText(path)
        self._select_after_find = path
        self.find_models()

    def chosen_model_name(self) -> str:
        """The model the form names: a listed item's name (a model file's path, under its
        description), or what was typed."""
        text = self.model_name.currentText().strip()
        index = self.model_name.currentIndex()
        if index >= 0 and self.model_name.itemText(index) == self.model_name.currentText():
            data = self.model_name.itemData(index)
            if isinstance(data, str) and data:
                return data
        return text

    def test_connection(self) -> Operation | None:
        provider = self.provider_key
        if provider == NO_MODEL:
            return None
        report = self.models.test_connection(
            provider,
            self.base_url.text().strip() or None,
            self.chosen_model_name() or None,
            self.key.text().strip() or None,
        )
        return self._run("Testing the connection", report, self._show_test)

    def _show_test(self, report: ConnectionReport) -> None:
        self.last_report = report
        self.status.setText(report.message)
        if report.supports_tools is False:
            self.no_tools.setChecked(True)  # chosen automatically; the user may still change it

    def save(self) -> None:
        """Store a typed key in the keychain (only there), then remember the choices."""
        try:
            self.search_tab.save()
        except ValueError as exc:
            self.tabs.setCurrentWidget(self.search_tab)
            self.search_tab.rerank_status.setText(str(exc))
            return
        provider = self.provider_key
        typed_key = self.key.text().strip()
        if typed_key and provider != NO_MODEL:
            try:
                self.models.store_key(provider, typed_key)
            except KeychainUnavailable as exc:
                self.key_status.setText(str(exc))
                return  # keep the dialog open: the key was not stored
            self.key.clear()
        choice = self.choice()
        others = [c for p, c in self._edited.items() if choice is None or p != choice.provider]
        self.models.choose(choice, also=others)
        self.accept()


RERANK_HINT = (
    "A reranker reorders the best passages of every search with a cross-encoder served at a "
    "/rerank endpoint (llama.cpp `llama-server --reranking`, vLLM, an OpenAI-compatible server). "
    "No reranker runs offline here, so it is off by default."
)
EMBEDDER_HINT = (
    "Changing the embedder re-embeds every passage of this library. Searches keep working "
    "meanwhile, and Cancel keeps the current vectors."
)


class SearchSettings(QWidget):
    """The Search tab: this library's embedder (with its rebuild) and the reranker."""

    def __init__(self, models: ModelsService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.models = models
        self.setAccessibleName("Search settings")

        self.embedder = QComboBox(self)
        self.embedder.setAccessibleName("Embedder")
        for provider, model, dim in models.installed_embedders():
            # item data "provider/model" for installed models, "provider" for servers
            self.embedder.addItem(f"{model} ({EMBEDDER_LABELS[provider].lower()}, {dim}-d)", f"{provider}/{model}")
        for description, path in models.embedding_model_files():
            # GGUF embedding models on this computer, run by the built-in llama.cpp
            self.embedder.addItem(f"{description} ({EMBEDDER_LABELS['model-file'].lower()})", f"model-file/{path}")
        for provider in ("ollama", "openai-compatible"):
            self.embedder.addItem(EMBEDDER_LABELS[provider], provider)
        self.embedder_url = QLineEdit(self)
        self.embedder_url.setAccessibleName("Embedding server URL")
        self.embedder_model = QLineEdit(self)
        self.embedder_model.setAccessibleName("Embedding model")
        self.embedder_model.setPlaceholderText("e.g. nomic-embed-text, bge-m3, qwen3-embedding")
        self.rebuild_button = QPushButton("Rebuild vectors with this embedder", self)
        self.rebuild_button.setAccessibleName("Rebuild vectors")
        self.cancel_rebuild = QPushButton("Cancel rebuild", self)
        self.cancel_rebuild.setAccessibleName("Cancel rebuild")
        self.progress = QProgressBar(self)
        self.progress.setAccessibleName("Rebuild progress")
        # keeps its room while hidden: showing it must not squeeze the reranker's rows
        policy = self.progress.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.progress.setSizePolicy(policy)
        self.rebuild_status = QLabel(EMBEDDER_HINT, self)
        self.rebuild_status.setAccessibleName("Rebuild status")
        self.rebuild_status.setWordWrap(True)

        self.reranker = QComboBox(self)
        self.reranker.setAccessibleName("Reranker")
        self.reranker.addItem("Off", "none")
        self.reranker.addItem("Rerank endpoint (/rerank)", "http")
        self.rerank_url = QLineEdit(self)
        self.rerank_url.setAccessibleName("Rerank server URL")
        self.rerank_url.setPlaceholderText("http://localhost:8080/v1")
        self.rerank_model = QLineEdit(self)
        self.rerank_model.setAccessibleName("Rerank model")
        self.rerank_model.setPlaceholderText("optional, e.g. bge-reranker-v2-m3")
        self.rerank_status = QLabel(RERANK_HINT, self)
        self.rerank_status.setAccessibleName("Rerank status")
        self.rerank_status.setWordWrap(True)

        form = QFormLayout(self)
        form.addRow("Embedder", self.embedder)
        form.addRow("Server URL", self.embedder_url)
        form.addRow("Model", self.embedder_model)
        rebuild_row = QHBoxLayout()
        rebuild_row.addWidget(self.rebuild_button)
        rebuild_row.addWidget(self.cancel_rebuild)
        form.addRow("", rebuild_row)
        form.addRow("", self.progress)
        form.addRow("", self.rebuild_status)
        form.addRow("Reranker", self.reranker)
        form.addRow("Server URL", self.rerank_url)
        form.addRow("Model", self.rerank_model)
        form.addRow("", self.rerank_status)

        self.embedder.currentIndexChanged.connect(self._embedder_changed)
        self.reranker.currentIndexChanged.connect(self._reranker_changed)
        self.rebuild_button.clicked.connect(self.rebuild)
        self.cancel_rebuild.clicked.connect(self.cancel)
        self._load()

    def _load(self) -> None:
        current = self.models.embedder_choice()
        if current.provider == "model-file" and self.embedder.findData(f"model-file/{current.model}") < 0:
            # the library's file, not among those found (picked elsewhere, or moved)
            label = f"{current.model} ({EMBEDDER_LABELS['model-file'].lower()})"
            self.embedder.insertItem(0, label, f"model-file/{current.model}")
        for i in range(self.embedder.count()):
            provider, _, model = self.embedder.itemData(i).partition("/")
            if provider == current.provider and (not model or model == (current.model or model)):
                self.embedder.setCurrentIndex(i)
                break
        self._embedder_changed()
        if current.provider not in SERVERLESS_EMBEDDERS:
            self.embedder_url.setText(current.base_url or "")
            self.embedder_model.setText(current.model or "")
        rerank = self.models.rerank_choice()
        self.reranker.setCurrentIndex(max(self.reranker.findData(rerank.provider), 0))
        self.rerank_url.setText(rerank.base_url or "")
        self.rerank_model.setText(rerank.model or "")
        self._reranker_changed()
        operation = self.models.rebuild_operation
        if operation is not None and operation.running:
            self._follow(operation)  # a rebuild started before the dialog was opened
        else:
            self._show_idle()

    def _selected_embedder(self) -> tuple[str, str | None]:
        provider, _, model = (self.embedder.currentData() or "local").partition("/")
        return provider, model or None

    def _embedder_changed(self) -> None:
        provider, _ = self._selected_embedder()
        remote = provider not in SERVERLESS_EMBEDDERS
        self.embedder_url.setEnabled(remote)
        self.embedder_model.setEnabled(remote)
        if remote and not self.embedder_url.text():
            self.embedder_url.setText(DEFAULT_BASE_URLS["ollama" if provider == "ollama" else "openai-compatible"])
        if not remote:
            self.embedder_url.clear()
            self.embedder_model.clear()

    def offer_model_file(self, path: str, *, choose: bool = True) -> None:
        """List an embedding model file just downloaded (first, if it was not listed yet) and,
        with ``choose``, select it."""
        data = f"model-file/{path}"
        if self.embedder.findData(data) < 0:
            name = PurePath(path).name
            self.embedder.insertItem(0, f"{name} ({EMBEDDER_LABELS['model-file'].lower()})", data)
        if choose:
            self.embedder.setCurrentIndex(self.embedder.findData(data))

    def _reranker_changed(self) -> None:
        on = self.reranker.currentData() == "http"
        self.rerank_url.setEnabled(on)
        self.rerank_model.setEnabled(on)

    def embedder_choice(self) -> EmbedderChoice:
        provider, model = self._selected_embedder()
        if provider in SERVERLESS_EMBEDDERS:  # the model is the item's: MiniLM, a file's path
            return EmbedderChoice(provider=cast(EmbedderProvider, provider), model=model)
        return EmbedderChoice(
            provider=cast(EmbedderProvider, provider),  # one of the combo box's (checked again by pydantic)
            model=self.embedder_model.text().strip() or None,
            base_url=self.embedder_url.text().strip() or None,
        )

    def rerank_choice(self) -> RerankChoice:
        if self.reranker.currentData() != "http":
            return RerankChoice()
        return RerankChoice(
            provider="http",
            base_url=self.rerank_url.text().strip() or None,
            model=self.rerank_model.text().strip() or None,
        )

    def save(self) -> None:
        """Remember the reranker (raises ValueError with the reason when it is incomplete)."""
        if self.rerank_choice() != self.models.rerank_choice():
            self.models.choose_reranker(self.rerank_choice())

    # --- the rebuild ----------------------------------------------------------------------

    def rebuild(self) -> Operation | None:
        try:
            operation = self.models.rebuild_vectors(self.embedder_choice())
        except (ValueError, RuntimeError) as exc:
            self.rebuild_status.setText(str(exc))
            return None
        self._follow(operation)
        return operation

    def cancel(self) -> None:
        operation = self.models.rebuild_operation
        if operation is not None and operation.running:
            self.rebuild_status.setText("Cancelling… the current vectors are kept.")
            operation.cancel()

    def _follow(self, operation: Operation) -> None:
        self.rebuild_button.setEnabled(False)
        self.cancel_rebuild.setEnabled(True)
        self.progress.setVisible(True)
        self.progress.setRange(0, 0)  # busy until the first report says how many passages
        self.rebuild_status.setText("Rebuilding: searches use the current vectors until it is done.")
        self._fit()
        # bound methods: Qt drops the connections when the dialog closes before the rebuild ends
        operation.progressed.connect(self._show_progress)
        operation.succeeded.connect(self._show_done)
        operation.cancelled.connect(self._show_cancelled)
        operation.failed.connect(self._show_failed)

    def _fit(self) -> None:
        # word-wrapped labels whose text changed need the window to grow, or the form's last
        # rows are clipped (Qt's form layout does not redo height-for-width by itself)
        window = self.window()
        if window is not self and window.isVisible():
            window.adjustSize()

    def _show_progress(self, progress: Any) -> None:
        if progress.total:
            self.progress.setRange(0, progress.total)
            self.progress.setValue(progress.done)
            self.rebuild_status.setText(
                f"Re-embedding passage {progress.done:,} of {progress.total:,}; searches use the "
                "current vectors until it is done."
            )

    def _show_cancelled(self) -> None:
        self._show_idle("Cancelled: the library keeps its current vectors.")

    def _show_failed(self, exc: object) -> None:
        self._show_idle(f"The rebuild failed, the current vectors are kept: {exc}")

    def _show_done(self, count: object) -> None:
        choice = self.models.embedder_choice()
        name = choice.model or EMBEDDER_LABELS[choice.provider]
        self._show_idle(f"Done: {count:,} passages re-embedded with {name}.")

    def _show_idle(self, message: str | None = None) -> None:
        self.rebuild_button.setEnabled(True)
        self.cancel_rebuild.setEnabled(False)
        self.progress.setVisible(False)
        self.rebuild_status.setText(message or EMBEDDER_HINT)
        self._fit()
