"""The Search tab of the settings: a rerank endpoint on 127.0.0.1 chosen there reorders the
library's search and receives a pool larger than the limit; choosing another embedder
rebuilds the library's vectors as an operation with progress and Cancel, the library stays
searchable meanwhile and a cancel keeps the old vectors. Real LanceDB, real PDFs, real
HTTP servers on 127.0.0.1 (the rerank server of tests/search/test_rerank.py, the embedding
server of tests/store/test_rebuild_embedder.py)."""

from __future__ import annotations

import threading

from qt_helpers import run_until
from search.test_rerank import score
from search.test_rerank import server as rerank_server  # noqa: F401 - a fixture
from store.test_rebuild_embedder import server as embedding_server  # noqa: F401 - a fixture

from haiku_desk.services.library import DocumentState, uri_for
from haiku_desk.services.models import ModelsService
from haiku_desk.views.settings_dialog import ModelSettingsDialog

SLOW = 180  # parsing + embedding on 2 shared cores
PADDING = "padding words " * 6


def _ingest(qloop, library, paths, state=DocumentState.HYBRID):
    library.add_paths(paths)
    run_until(qloop, lambda: all(library.entry(uri_for(p)) and library.entry(uri_for(p)).state is state for p in paths), SLOW)


def _dialog(qtbot, config, notifications, library):
    models = ModelsService(config, notifications, library=library)
    dialog = ModelSettingsDialog(models)
    qtbot.addWidget(dialog)
    dialog.tabs.setCurrentWidget(dialog.search_tab)
    return dialog


def test_a_rerank_endpoint_chosen_in_the_settings_reorders_the_librarys_search(
    qloop, qtbot, library, config, notifications, tmp_path, make_pdf, rerank_server  # noqa: F811
):
    # Many "quokka"s rank a file high in full text; the "golden" one has one among padding.
    paths = [make_pdf(tmp_path / f"q{i}.pdf", "quokka " * (8 - i) + f"filler note {i}") for i in range(5)]
    paths.append(make_pdf(tmp_path / "golden.pdf", "quokka golden", *([PADDING] * 6)))
    _ingest(qloop, library, paths)
    fused = qloop.run_until_complete(library.search_passages("quokka", limit=2))
    assert len(fused) == 2 and not any("golden" in r.content for r in fused), "precondition"

    dialog = _dialog(qtbot, config, notifications, library)
    tab = dialog.search_tab
    assert tab.reranker.currentData() == "none" and not tab.rerank_url.isEnabled()  # off by default
    tab.reranker.setCurrentIndex(tab.reranker.findData("http"))
    tab.rerank_url.setText(rerank_server.url)
    tab.rerank_model.setText("bge-reranker")
    dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    assert dialog.result() == dialog.DialogCode.Accepted

    results = qloop.run_until_complete(library.search_passages("quokka", limit=2))

    [request] = rerank_server.requests
    assert request["path"] == "/v1/rerank" and request["body"]["model"] == "bge-reranker"
    sent = request["body"]["documents"]
    assert len(sent) == len(paths) > 2, "the endpoint receives the pool, not the cut"
    assert "golden" in results[0].content
    best = sorted(range(len(sent)), key=lambda i: -score(sent[i], i))[:2]
    # (the passages shown are widened by context expansion: compare their first lines)
    assert [r.content.split("\n")[0] for r in results] == [sent[i].split("\n")[0] for i in best]
    # remembered: a new service (the next start) reranks the same way
    again = ModelsService(config, notifications)
    assert again.rerank_choice().base_url == rerank_server.url

    # turned off again from the settings: the fused order is back, the endpoint not asked
    dialog = _dialog(qtbot, config, notifications, library)
    dialog.search_tab.reranker.setCurrentIndex(0)
    dialog.save()
    assert [r.content for r in qloop.run_until_complete(library.search_passages("quokka", limit=2))] == [r.content for r in fused]
    assert len(rerank_server.requests) == 1


def test_changing_the_embedder_rebuilds_with_progress_and_cancel_keeps_the_old_vectors(
    qloop, qtbot, library, config, notifications, tmp_path, make_pdf, embedding_server  # noqa: F811
):
    paths = [
        make_pdf(tmp_path / "a.pdf", "The marmoset orchestra rehearsed in the glasshouse."),
        make_pdf(tmp_path / "b.pdf", "Quarterly tungsten prices rose along the canal."),
    ]
    _ingest(qloop, library, paths)
    client = library.client
    old_identity = client.store.embedder_identity
    assert old_identity["provider"] == "local"

    dialog = _dialog(qtbot, config, notifications, library)
    tab = dialog.search_tab
    assert tab.embedder.currentData().startswith("local/")  # the library's embedder is shown
    tab.embedder.setCurrentIndex(tab.embedder.findData("openai-compatible"))
    tab.embedder_url.setText(embedding_server.url)
    tab.embedder_model.setText("new-model")

    # 1. held inside the embedding server, then cancelled
    embedding_server.gate, embedding_server.gated = threading.Event(), {"new-model"}
    operation = tab.rebuild()
    run_until(qloop, embedding_server.waiting.is_set)
    assert not tab.rebuild_button.isEnabled() and tab.cancel_rebuild.isEnabled() and not tab.progress.isHidden()
    during = qloop.run_until_complete(library.search_passages("marmoset orchestra", limit=2))
    assert during and during[0].document_uri == uri_for(paths[0]), "searchable while rebuilding"
    tab.cancel_rebuild.click()
    assert "Cancelling" in tab.rebuild_status.text()
    embedding_server.gate.set()
    run_until(qloop, lambda: not operation.running)
    assert "Cancelled" in tab.rebuild_status.text() and tab.rebuild_button.isEnabled()
    assert client.store.embedder_identity == old_identity
    assert client.config.embeddings.provider == "local"
    assert {d.index_state for d in qloop.run_until_complete(client.list_documents())} == {"hybrid"}
    assert qloop.run_until_complete(library.search_passages("tungsten canal", limit=1))[0].document_uri == uri_for(paths[1])

    # 2. rebuilt to the end: progress shown, the new embedder recorded and remembered
    embedding_server.gate = None
    values: list[int] = []
    operation = tab.rebuild()
    operation.progressed.connect(lambda p: values.append(tab.progress.value()))
    run_until(qloop, lambda: not operation.running, SLOW)
    assert operation.error is None and operation.result == 2
    assert values and values[-1] == tab.progress.maximum() == 2
    assert "Done: 2 passages re-embedded with new-model" in tab.rebuild_status.text()
    assert client.store.embedder_identity == {"provider": "openai-compatible", "model": "new-model", "vector_dim": 8}
    embedding_server.requests.clear()
    hits = qloop.run_until_complete(library.search_passages("marmoset orchestra", limit=2))
    assert hits and embedding_server.requests == ["new-model"], "queries are embedded by the new model"
    again = ModelsService(config.model_copy(deep=True), notifications, library=library)
    assert again.config.embeddings.model == "new-model" and again.embedder_choice().base_url == embedding_server.url


def test_each_library_keeps_its_own_embedder_when_switching_libraries(
    qloop, library, config, notifications, tmp_path, make_pdf, embedding_server  # noqa: F811
):
    from haiku_desk.services.models import EmbedderChoice

    first_db = library.db_path
    _ingest(qloop, library, [make_pdf(tmp_path / "a.pdf", "The marmoset orchestra rehearsed in the glasshouse.")])
    models = ModelsService(config, notifications, library=library)
    operation = models.rebuild_vectors(
        EmbedderChoice(provider="openai-compatible", model="new-model", base_url=embedding_server.url)
    )
    run_until(qloop, lambda: not operation.running, SLOW)
    assert operation.error is None and config.embeddings.model == "new-model"

    # Another library, never rebuilt: it embeds with the configured (built-in) model, not the
    # first library's, which would have recorded the wrong model in it.
    assert qloop.run_until_complete(library.open_library(tmp_path / "second.lancedb"))
    second = make_pdf(tmp_path / "b.pdf", "Quarterly tungsten prices rose along the canal.")
    _ingest(qloop, library, [second])
    assert library.client.store.embedder_identity["provider"] == "local"
    assert config.embeddings.provider == "local"

    # and back: the first library opens with the model it was rebuilt with, and searches
    embedding_server.requests.clear()
    assert qloop.run_until_complete(library.open_library(first_db))
    run_until(qloop, lambda: not library.is_opening, SLOW)
    assert library.client.store.embedder_identity["model"] == "new-model"
    hits = qloop.run_until_complete(library.search_passages("marmoset orchestra", limit=1))
    assert hits and embedding_server.requests == ["new-model"]
