"""LocalModelsService: model files found on disk, the fit, load (child process + tool probe)
as an Operation, unload and quit leaving no process. Real llama.cpp on a tiny generated model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gguf_factory import tiny_llama

from haiku.rag.local_models import Roots
from haiku.rag.local_models.provider import current_runtime
from haiku.rag.local_models.runtime import ModelLoadError, runtime_available
from haiku_desk.services.local_models import LocalModelsService


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def store(tmp_path: Path) -> Path:
    lms = tmp_path / "lmstudio" / "someone" / "Tiny-GGUF"
    tiny_llama(lms / "tiny.gguf", name="Tiny Chat")
    (tmp_path / "lmstudio" / "someone" / "Tiny-GGUF" / "broken.gguf").write_bytes(b"GGUF")
    return tmp_path


@pytest.fixture
def service(store: Path, qtbot):  # noqa: ARG001 (qtbot: the QApplication)
    service = LocalModelsService(Roots(lm_studio=(store / "lmstudio",)), probe_cache=store / "probe.json")
    yield service
    service.shutdown()


async def test_scan_lists_the_models_with_their_description(service: LocalModelsService) -> None:
    seen: list[list] = []
    service.models_changed.connect(seen.append)
    await service.scan().wait()
    assert [m.label for m in service.models] == ["someone/Tiny-GGUF/broken.gguf", "someone/Tiny-GGUF/tiny.gguf"]
    assert seen == [service.models]
    assert [m.label for m in service.chat_models()] == ["someone/Tiny-GGUF/tiny.gguf"]
    fit = service.fit(service.chat_models()[0])
    assert fit is not None and fit.fits and "free" in fit.message
    assert service.fit(service.models[0]) is None  # unreadable: no estimate


async def test_added_folder_is_scanned_too(service: LocalModelsService, tmp_path: Path) -> None:
    extra = tmp_path / "picked"
    tiny_llama(extra / "mine.gguf", seed=5)
    await service.add_folder(extra).wait()
    assert "mine.gguf" in [m.label for m in service.models]


@pytest.mark.skipif(not runtime_available(), reason="xllamacpp is not installed")
async def test_load_probes_tools_and_unload_and_quit_leave_no_process(service: LocalModelsService) -> None:
    import pydantic_ai.models

    await service.scan().wait()
    model = service.chat_models()[0]
    loaded_events: list = []
    service.loaded.connect(loaded_events.append)
    operation = service.load(model)
    await operation.wait()
    assert operation.error is None
    loaded = operation.result
    assert loaded_events == [loaded] and service.current == loaded
    assert loaded.supports_tools is False and "passages the app retrieves" in loaded.answer_path
    assert "free" in loaded.fit_message and loaded.context == 2048
    config = service.model_config()
    assert config is not None and config.provider == "model-file" and config.supports_tools is False
    runtime = current_runtime()
    assert runtime is not None and runtime.running
    pid = runtime.pid
    assert pid is not None
    # the configured model answers through the same child
    from haiku.rag.config import AppConfig
    from haiku.rag.models import get_model

    pydantic_ai.models.ALLOW_MODEL_REQUESTS = True
    try:
        from pydantic_ai import Agent

        result = await Agent(get_model(config, AppConfig())).run("hi", model_settings={"max_tokens": 4})
        assert isinstance(result.output, str) and runtime.pid == pid
    finally:
        pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
    unloaded: list = []
    service.unloaded.connect(lambda: unloaded.append(True))
    service.shutdown()
    assert unloaded == [True] and service.current is None and gone(pid)


@pytest.mark.skipif(not runtime_available(), reason="xllamacpp is not installed")
async def test_a_file_that_is_not_a_model_fails_the_operation(service: LocalModelsService) -> None:
    await service.scan().wait()
    operation = service.load(service.models[0])  # broken.gguf
    await operation.wait()
    assert isinstance(operation.error, ModelLoadError) and "cut short" in str(operation.error)
    assert service.current is None
