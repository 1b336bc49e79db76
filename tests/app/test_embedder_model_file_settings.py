"""The Search tab offers the GGUF embedding models found on this computer (an LM Studio-style
folder made in the test, beside a chat model it must not list) as "Model file on this computer
(built in)"; choosing one rebuilds the library's vectors through the built-in runtime with
progress, the library records it, search uses it, and the choice is remembered. Real LanceDB,
real PDFs, a real llama.cpp child on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf_factory import tiny_bert, tiny_llama
from qt_helpers import run_until

from haiku.rag.local_models import Roots, provider
from haiku.rag.local_models.runtime import runtime_available
from haiku_desk.services.library import DocumentState, uri_for
from haiku_desk.services.models import ModelsService
from haiku_desk.views.settings_dialog import ModelSettingsDialog

SLOW = 180  # parsing + embedding on 2 shared cores


@pytest.fixture
def lms(tmp_path: Path):
    root = tmp_path / "lms"
    embed = tiny_bert(root / "nomic-ai" / "Tiny-Embed-GGUF" / "tiny-embed.gguf", name="Tiny Embed", embd=24, context=2048)
    tiny_llama(root / "someone" / "Tiny-GGUF" / "tiny-chat.gguf", name="Tiny Chat")
    yield root, embed
    provider.stop_all()


@pytest.mark.skipif(not runtime_available(), reason="xllamacpp is not installed")
def test_an_embedding_model_file_is_offered_and_rebuilds_the_library_with_progress(
    qloop, qtbot, library, config, notifications, tmp_path, make_pdf, lms
):
    root, embed = lms
    paths = [
        make_pdf(tmp_path / "a.pdf", "The marmoset orchestra rehearsed in the glasshouse."),
        make_pdf(tmp_path / "b.pdf", "Quarterly tungsten prices rose along the canal."),
    ]
    library.add_paths(paths)
    run_until(qloop, lambda: all(library.entry(uri_for(p)) and library.entry(uri_for(p)).state is DocumentState.HYBRID for p in paths), SLOW)

    models = ModelsService(config, notifications, library=library)
    models.model_file_roots = Roots(lm_studio=(root,))
    dialog = ModelSettingsDialog(models)
    qtbot.addWidget(dialog)
    dialog.tabs.setCurrentWidget(dialog.search_tab)
    tab = dialog.search_tab

    offered = [tab.embedder.itemData(i) for i in range(tab.embedder.count())]
    assert [d for d in offered if d.startswith("model-file/")] == [f"model-file/{embed}"]  # not the chat file
    index = tab.embedder.findData(f"model-file/{embed}")
    label = tab.embedder.itemText(index)
    assert label.startswith("nomic-ai/Tiny-Embed-GGUF/tiny-embed.gguf · ") and "embedding" in label
    assert label.endswith("(model file on this computer (built in))")
    tab.embedder.setCurrentIndex(index)
    assert not tab.embedder_url.isEnabled() and not tab.embedder_model.isEnabled()  # no server

    values: list[int] = []
    operation = tab.rebuild()
    assert operation is not None
    operation.progressed.connect(lambda p: values.append(tab.progress.value()))
    run_until(qloop, lambda: not operation.running, SLOW)

    assert operation.error is None and operation.result == 2
    assert values and values[-1] == tab.progress.maximum() == 2
    assert f"Done: 2 passages re-embedded with {embed}" in tab.rebuild_status.text()
    client = library.client
    assert client.store.embedder_identity == {"provider": "model-file", "model": str(embed), "vector_dim": 24}
    runtime = provider._embedding[embed]
    starts = runtime.starts
    hits = qloop.run_until_complete(library.search_passages("marmoset orchestra", limit=2))
    assert hits and runtime.running and runtime.starts == starts  # the query went to the same child

    # remembered for this library: the next start shows it chosen
    again = ModelsService(config.model_copy(deep=True), notifications, library=library)
    again.model_file_roots = Roots(lm_studio=(root,))
    choice = again.embedder_choice()
    assert (choice.provider, choice.model) == ("model-file", str(embed))
    reopened = ModelSettingsDialog(again)
    qtbot.addWidget(reopened)
    assert reopened.search_tab.embedder.currentData() == f"model-file/{embed}"
