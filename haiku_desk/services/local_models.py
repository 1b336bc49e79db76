"""Models on this computer: GGUF files found on disk, and the built-in runtime's one loaded
model (haiku.rag.local_models). No widgets: views read ``models`` and the signals.

- ``scan()`` (an ``Operation``): Ollama's store, LM Studio's and GPT4All's folders, the Hugging
  Face cache and the folders the person added, each file described from its header;
- ``fit(model)``: "needs ~2.1 GB, 9.0 GB free" before a load;
- ``load(model)`` (an ``Operation``): starts the child process, loads the model and probes tool
  calling once (the result says which answer path the model gets); ``unload()`` stops it;
- ``model_config(loaded)``: the ``qa.model`` settings that answer with it (provider
  ``model-file``); ``shutdown()`` on quit leaves no process behind.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from haiku.rag.config import ModelConfig
from haiku.rag.local_models import Fit, LocalModel, Roots, discover, plan
from haiku.rag.operations import Progress, Stage
from haiku_desk.bridge import Operation


@dataclass(frozen=True)
class LoadedModel:
    path: Path
    label: str
    context: int
    threads: int
    fit_message: str
    supports_tools: bool

    @property
    def answer_path(self) -> str:
        """What the chat shows: which path answers with this model."""
        if self.supports_tools:
            return "searches the library itself (tools)"
        return "answers from passages the app retrieves (this model cannot call tools)"


class LocalModelsService(QObject):
    models_changed = Signal(list)  # list[LocalModel]
    loaded = Signal(object)  # LoadedModel
    unloaded = Signal()

    def __init__(
        self,
        roots: Roots | None = None,
        *,
        probe_cache: Path | None = None,
        idle_seconds: float | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.roots = roots if roots is not None else Roots.default()
        self.probe_cache = probe_cache
        self.idle_seconds = idle_seconds
        self.models: list[LocalModel] = []
        self.current: LoadedModel | None = None

    # --- discovery ---------------------------------------------------------------------------

    def add_folder(self, path: str | Path) -> Operation:
        """Look in ``path`` (a file or a folder) too, then scan again."""
        self.roots = self.roots.with_folders(path)
        return self.scan()

    def scan(self) -> Operation:
        roots = self.roots

        async def body(token: Any, report: Any) -> list[LocalModel]:
            report(Progress(Stage.READING, message="Looking for model files"))
            return await asyncio.to_thread(discover, roots)

        operation = Operation("Looking for model files", body, self)
        operation.succeeded.connect(self._found)
        return operation.start()

    def _found(self, models: object) -> None:
        assert isinstance(models, list)
        self.models = models
        self.models_changed.emit(models)

    def chat_models(self) -> list[LocalModel]:
        """The models one can chat with (readable, not embedding models or projectors)."""
        return [m for m in self.models if m.kind == "chat"]

    def fit(self, model: LocalModel, context: int | None = None) -> Fit | None:
        return plan(model.info, context=context, file_size=model.size) if model.info else None

    # --- load and unload ---------------------------------------------------------------------

    def load(self, model: LocalModel, context: int | None = None) -> Operation:
        """Load ``model`` in the child process and probe its tool calling (once per file)."""
        path, label, cache, idle = model.path, model.label, self.probe_cache, self.idle_seconds

        async def body(token: Any, report: Any) -> LoadedModel:
            return await asyncio.to_thread(_load, path, label, context, cache, idle, report)

        operation = Operation(f"Loading {label}", body, self)
        operation.succeeded.connect(self._loaded)
        operation.cancelled.connect(self.unload)
        return operation.start()

    def _loaded(self, loaded: object) -> None:
        assert isinstance(loaded, LoadedModel)
        self.current = loaded
        self.loaded.emit(loaded)

    def unload(self) -> None:
        from haiku.rag.local_models.provider import unload

        unload()
        if self.current is not None:
            self.current = None
            self.unloaded.emit()

    def shutdown(self) -> None:
        """On quit: no model process outlives the app."""
        self.unload()

    def model_config(self, loaded: LoadedModel | None = None) -> ModelConfig | None:
        """``qa.model`` for answering with the loaded model (None when none is loaded)."""
        loaded = loaded or self.current
        if loaded is None:
            return None
        return ModelConfig(
            provider="model-file",
            name=str(loaded.path),
            supports_tools=loaded.supports_tools,
            context_tokens=loaded.context,
        )


def _load(
    path: Path, label: str, context: int | None, cache: Path | None, idle: float | None, report: Any
) -> LoadedModel:
    """In a worker thread (holds no Qt object): start the runtime, then the probe."""
    from haiku.rag.local_models.fit import plan as fit_plan
    from haiku.rag.local_models.provider import runtime_for, tools_verdict

    runtime = runtime_for(path, context=context, idle_seconds=idle)
    report(Progress(Stage.READING, source=label, message=f"Loading {label}"))
    runtime.ensure_started()
    report(Progress(Stage.READING, source=label, message="Checking whether it can call tools"))
    verdict = tools_verdict(runtime, cache)
    from haiku.rag.local_models import read_header

    fit = fit_plan(read_header(path), context=runtime.settings.context)
    return LoadedModel(path, label, runtime.settings.context, runtime.settings.threads, fit.message, verdict)
