"""Settings › "Download a recommended model…": the catalog dialog over real widgets, a real
download service and a real HTTP server on 127.0.0.1 (tests/range_server.py) serving a tiny
GGUF made here. The catalog is replaced the way a person would replace it, through
``HAIKU_DESK_MODEL_CATALOG`` naming a JSON file. The server holds the transfer on an event
(never a sleep) where a test needs the download caught in the middle."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from gguf_factory import tiny_llama
from qt_helpers import run_until
from range_server import FileServer, file_server

from haiku_desk.services.model_downloads import CATALOG_ENV, ModelDownloads
from haiku_desk.services.models import ModelsService
from haiku_desk.services.notifications import Notifications
from haiku_desk.views.model_catalog_dialog import COLUMNS, ModelCatalogDialog
from haiku_desk.views.settings_dialog import ModelSettingsDialog

FILE = "tiny-chat.gguf"
GB = 1_000_000_000


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return tiny_llama(tmp_path_factory.mktemp("src") / "t.gguf", name="Tiny Catalog Chat").read_bytes()


@pytest.fixture
def server(model_bytes: bytes) -> Iterator[FileServer]:
    with file_server(model_bytes) as state:
        yield state


def free(n: int) -> Any:
    return lambda _path: SimpleNamespace(free=n)


def write_catalog(path: Path, url: str, data: bytes, *, sha256: str | None = None) -> Path:
    path.write_text(
        json.dumps(
            [
                {
                    "name": "Tiny Catalog Chat (F32)",
                    "file_name": FILE,
                    "kind": "chat",
                    "size": len(data),
                    "licence": "MIT",
                    "url": url,
                    "sha256": sha256 or hashlib.sha256(data).hexdigest(),
                    "context_length": 2048,
                    "verified_from": "made by the test",
                    "parameters": "9K",
                }
            ]
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def models(config, tmp_path: Path, server: FileServer, model_bytes: bytes, monkeypatch) -> ModelsService:
    from haiku.rag.local_models import Roots

    monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "catalog.json", server.url, model_bytes)))
    service = ModelsService(config, Notifications())
    service.model_file_roots = Roots()  # nothing of this computer's: only the downloads folder
    service.downloads.disk_usage = free(50 * GB)
    return service


def open_catalog(qtbot, models: ModelsService) -> tuple[ModelSettingsDialog, ModelCatalogDialog]:
    settings = ModelSettingsDialog(models)
    qtbot.addWidget(settings)
    settings.provider.setCurrentIndex(settings.provider.findData("model-file"))
    dialog = settings.open_catalog()
    assert isinstance(dialog, ModelCatalogDialog)
    return settings, dialog


def cell(dialog: ModelCatalogDialog, row: int, column: str) -> str:
    item = dialog.table.item(row, COLUMNS.index(column))
    assert item is not None
    return item.text()


def test_the_built_in_catalog_is_listed_with_its_facts_and_the_free_space(qtbot, config, monkeypatch) -> None:
    from haiku.rag.local_models.catalog import CATALOG

    monkeypatch.delenv(CATALOG_ENV, raising=False)
    models = ModelsService(config, Notifications())
    models.downloads.disk_usage = free(12_300_000_000)
    settings = ModelSettingsDialog(models)
    qtbot.addWidget(settings)
    settings.provider.setCurrentIndex(settings.provider.findData("model-file"))
    settings.catalog_button.click()
    dialog = settings.catalog_dialog
    assert isinstance(dialog, ModelCatalogDialog) and dialog.isVisible()
    assert dialog.table.rowCount() == len(CATALOG)
    for row, item in enumerate(CATALOG):
        assert cell(dialog, row, "Model") == item.name
        assert cell(dialog, row, "Parameters") == item.parameters and item.parameters
        assert cell(dialog, row, "Size") == f"{item.size / 1e6:.1f} MB"
        assert cell(dialog, row, "Licence") == item.licence
        assert cell(dialog, row, "Source") == item.url and item.url.startswith("https://")
        assert cell(dialog, row, "Status") == "Not downloaded"
    intro = dialog.intro.text()
    assert "12.3 GB free" in intro and str(models.downloads.folder) in intro and "built-in list" in intro
    assert CATALOG[0].sha256 in dialog.details.text()  # the selected row's hash and provenance
    assert dialog.download_button.isEnabled() and not dialog.pause_button.isEnabled()


def test_a_download_completes_is_checked_and_can_be_chosen(
    qloop, qtbot, models: ModelsService, server: FileServer, model_bytes: bytes
) -> None:
    settings, dialog = open_catalog(qtbot, models)
    assert dialog.table.rowCount() == 1 and cell(dialog, 0, "Source") == server.url
    assert CATALOG_ENV in dialog.intro.text()
    seen: list[Any] = []
    models.downloads.progressed.connect(lambda name, progress: seen.append(progress))

    dialog.download_button.click()
    run_until(qloop, lambda: cell(dialog, 0, "Status") == "Downloaded")
    path = models.downloads.folder / FILE
    assert path.read_bytes() == model_bytes and not path.with_name(FILE + ".part").exists()
    assert server.ranges == [None]
    assert seen and seen[-1].done == seen[-1].total == len(model_bytes)
    assert "Downloaded and checked" in dialog.status.text()
    # the settings list the model files again: the new one is there, chosen by Use
    run_until(qloop, lambda: settings.model_name.findData(str(path)) >= 0)
    assert "tiny-chat.gguf" in settings.model_name.itemText(settings.model_name.findData(str(path)))

    assert dialog.use_button.isEnabled()
    dialog.use_button.click()
    assert not dialog.isVisible()
    # chosen at once, then shown under its description once the model files are listed again
    assert settings.chosen_model_name() == str(path)
    run_until(qloop, lambda: settings.operation is not None and not settings.operation.running)
    assert settings.model_name.currentIndex() == settings.model_name.findData(str(path))
    assert settings.chosen_model_name() == str(path)
    assert settings.model_name.lineEdit().cursorPosition() == 0  # the description's start shows
    settings.buttons.button(settings.buttons.StandardButton.Save).click()
    assert models.choice is not None and (models.choice.provider, models.choice.name) == ("model-file", str(path))


def test_pause_keeps_the_part_and_resume_continues_with_range_even_after_a_restart(
    qloop, qtbot, config, models: ModelsService, server: FileServer, model_bytes: bytes
) -> None:
    half = len(model_bytes) // 2
    server.hold_after = half
    _, dialog = open_catalog(qtbot, models)
    dialog.download_button.click()
    run_until(qloop, lambda: dialog.progress.isVisible() and dialog.pause_button.isEnabled())
    run_until(qloop, lambda: (models.downloads.running(FILE).last_progress or SimpleNamespace(done=0)).done == half)
    assert "Downloading: " in dialog.status.text() and "(50%)" in dialog.status.text()

    dialog.pause_button.click()
    assert "Pausing" in dialog.status.text() and not dialog.pause_button.isEnabled()
    server.release.set()  # the transfer goes on; the download stops at its next chunk
    run_until(qloop, lambda: models.downloads.running(FILE) is None)
    part = models.downloads.folder / (FILE + ".part")
    assert part.read_bytes() == model_bytes[:half]
    assert cell(dialog, 0, "Status").startswith("Paused at")
    assert dialog.download_button.text() == "&Resume" and dialog.cancel_button.isEnabled()
    dialog.close()

    # the app quits and starts again: the new service finds the part and resumes it
    again = ModelsService(config, Notifications())
    again.downloads.disk_usage = free(50 * GB)
    _, dialog = open_catalog(qtbot, again)
    assert cell(dialog, 0, "Status").startswith("Paused at")
    assert "Paused:" in dialog.status.text() and dialog.progress.value() == 50
    dialog.download_button.click()
    run_until(qloop, lambda: cell(dialog, 0, "Status") == "Downloaded")
    assert server.ranges == [None, f"bytes={half}-"]
    assert (again.downloads.folder / FILE).read_bytes() == model_bytes and not part.exists()


def test_a_file_whose_hash_differs_is_refused_and_nothing_is_left(
    qloop, qtbot, config, tmp_path: Path, server: FileServer, model_bytes: bytes, monkeypatch
) -> None:
    wrong = "0" * 64
    monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "c.json", server.url, model_bytes, sha256=wrong)))
    models = ModelsService(config, Notifications())
    models.downloads.disk_usage = free(50 * GB)
    _, dialog = open_catalog(qtbot, models)
    dialog.download_button.click()
    run_until(qloop, lambda: cell(dialog, 0, "Status") == "Failed")
    message = dialog.status.text()
    assert "SHA-256 differs" in message and "discarded" in message and wrong in message
    assert hashlib.sha256(model_bytes).hexdigest() in message
    assert list(models.downloads.folder.iterdir()) == []  # neither the file nor a .part
    assert dialog.download_button.text() == "&Retry"


def test_too_little_disk_space_is_refused_before_any_byte(
    qloop, qtbot, models: ModelsService, server: FileServer
) -> None:
    models.downloads.disk_usage = free(100_000_000)  # 100 MB: less than the file plus the margin
    _, dialog = open_catalog(qtbot, models)
    assert "100.0 MB free" in dialog.intro.text()
    dialog.download_button.click()
    run_until(qloop, lambda: cell(dialog, 0, "Status") == "Failed")
    message = dialog.status.text()
    assert message.startswith("Not enough disk space: ") and "only 100.0 MB is" in message
    needed = float(message.split("space: ")[1].split(" MB")[0])
    assert needed > 256  # the file plus the 256 MB margin, said in MB
    assert server.ranges == []  # not even a request
    assert not models.downloads.folder.exists() or list(models.downloads.folder.iterdir()) == []


def test_cancel_stops_and_deletes_the_part(qloop, qtbot, models: ModelsService, server: FileServer, model_bytes: bytes) -> None:
    server.hold_after = 1000
    _, dialog = open_catalog(qtbot, models)
    dialog.download_button.click()
    run_until(qloop, lambda: (models.downloads.running(FILE).last_progress or SimpleNamespace(done=0)).done == 1000)
    part = models.downloads.folder / (FILE + ".part")
    assert part.exists() and dialog.cancel_button.isEnabled()
    dialog.cancel_button.click()
    server.release.set()
    run_until(qloop, lambda: models.downloads.running(FILE) is None)
    assert not part.exists() and not (models.downloads.folder / FILE).exists()
    assert cell(dialog, 0, "Status") == "Not downloaded"
    assert dialog.status.text() == "Cancelled: the part downloaded was deleted."
    assert dialog.download_button.text() == "&Download" and dialog.download_button.isEnabled()


def test_a_lost_connection_keeps_the_part_and_retry_resumes(
    qloop, qtbot, models: ModelsService, server: FileServer, model_bytes: bytes
) -> None:
    cut = len(model_bytes) // 3
    server.drop_after = cut
    _, dialog = open_catalog(qtbot, models)
    dialog.download_button.click()
    run_until(qloop, lambda: models.downloads.running(FILE) is None and cell(dialog, 0, "Status") != "Downloading")
    assert cell(dialog, 0, "Status") == f"Interrupted at {cut / 1000:.1f} KB"  # not "Paused"
    message = dialog.status.text()
    assert message.startswith(f"The connection was lost after {cut / 1000:.1f} KB, which are kept")
    assert message.endswith("Check the network, then Retry: the download continues from there.")
    assert dialog.download_button.text() == "&Retry"
    dialog.download_button.click()
    run_until(qloop, lambda: cell(dialog, 0, "Status") == "Downloaded")
    assert server.ranges == [None, f"bytes={cut}-"]
    assert (models.downloads.folder / FILE).read_bytes() == model_bytes


def test_a_bad_catalog_file_is_said_in_the_dialog(qtbot, config, tmp_path: Path, monkeypatch) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"name": "x"}]', encoding="utf-8")
    monkeypatch.setenv(CATALOG_ENV, str(bad))
    downloads = ModelDownloads(tmp_path / "models")
    dialog = ModelCatalogDialog(downloads)
    qtbot.addWidget(dialog)
    assert dialog.table.rowCount() == 0
    assert "could not be read" in dialog.intro.text() and "missing file_name" in dialog.intro.text()


def test_an_unreachable_server_is_said_and_retry_is_offered(
    qloop, qtbot, config, tmp_path: Path, model_bytes: bytes, monkeypatch
) -> None:
    import socket

    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/models/tiny.gguf"
    monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "c.json", url, model_bytes)))
    models = ModelsService(config, Notifications())
    models.downloads.disk_usage = free(50 * GB)
    _, dialog = open_catalog(qtbot, models)
    dialog.download_button.click()
    run_until(qloop, lambda: cell(dialog, 0, "Status") == "Failed")
    message = dialog.status.text()
    assert message.startswith("The server could not be reached (ConnectError: ")
    assert message.endswith("Check the network, then Retry.")
    assert dialog.download_button.text() == "&Retry" and dialog.download_button.isEnabled()


def test_a_downloaded_embedding_model_is_offered_as_the_embedder(qloop, qtbot, config, tmp_path: Path, monkeypatch) -> None:
    from gguf_factory import tiny_bert

    from haiku.rag.local_models import Roots

    data = tiny_bert(tmp_path / "src" / "e.gguf").read_bytes()
    with file_server(data) as server:
        catalog = write_catalog(tmp_path / "c.json", server.url, data)
        entry = json.loads(catalog.read_text())[0]
        entry.update(name="Tiny Embed", file_name="tiny-embed.gguf", kind="embedding")
        catalog.write_text(json.dumps([entry]))
        monkeypatch.setenv(CATALOG_ENV, str(catalog))
        models = ModelsService(config, Notifications())
        models.model_file_roots = Roots()  # nothing of this computer's: only the downloads folder
        models.downloads.disk_usage = free(50 * GB)
        settings, dialog = open_catalog(qtbot, models)
        dialog.download_button.click()
        run_until(qloop, lambda: cell(dialog, 0, "Status") == "Downloaded")
    path = models.downloads.folder / "tiny-embed.gguf"
    assert "Settings › Search › Embedder" in dialog.status.text()
    embedders = settings.search_tab.embedder
    before = embedders.currentData()
    assert embedders.findData(f"model-file/{path}") >= 0 and before != f"model-file/{path}"  # listed, not chosen
    # listed among this computer's embedding model files from now on
    assert str(path) in [p for _, p in models.embedding_model_files()]
    dialog.use_button.click()
    assert settings.tabs.currentWidget() is settings.search_tab
    assert settings.search_tab.embedder.currentData() == f"model-file/{path}"
    choice = settings.search_tab.embedder_choice()
    assert (choice.provider, choice.model) == ("model-file", str(path))


def test_a_connection_ending_while_pausing_is_a_pause_not_a_failure(
    qloop, qtbot, models: ModelsService, server: FileServer, model_bytes: bytes
) -> None:
    half = len(model_bytes) // 2
    server.hold_after, server.cut_on_release = half, True
    _, dialog = open_catalog(qtbot, models)
    dialog.download_button.click()
    run_until(qloop, lambda: (models.downloads.running(FILE).last_progress or SimpleNamespace(done=0)).done == half)
    dialog.pause_button.click()
    server.release.set()  # the server closes the connection while the download is stopping
    run_until(qloop, lambda: models.downloads.running(FILE) is None)
    assert cell(dialog, 0, "Status") == f"Paused at {half / 1000:.1f} KB"
    assert dialog.status.text().startswith("Paused: ") and dialog.download_button.text() == "&Resume"
    assert (models.downloads.folder / (FILE + ".part")).read_bytes() == model_bytes[:half]


def test_a_download_goes_on_when_the_dialog_closes_and_a_new_one_follows_it(
    qloop, qtbot, models: ModelsService, server: FileServer, model_bytes: bytes
) -> None:
    half = len(model_bytes) // 2
    server.hold_after = half
    settings, dialog = open_catalog(qtbot, models)
    dialog.download_button.click()
    run_until(qloop, lambda: (models.downloads.running(FILE).last_progress or SimpleNamespace(done=0)).done == half)
    dialog.close()
    again = settings.open_catalog()
    assert again is not dialog and cell(again, 0, "Status") == "Downloading"
    assert again.pause_button.isEnabled() and not again.download_button.isEnabled()
    server.release.set()
    run_until(qloop, lambda: cell(again, 0, "Status") == "Downloaded")
    assert (models.downloads.folder / FILE).read_bytes() == model_bytes and server.ranges == [None]
