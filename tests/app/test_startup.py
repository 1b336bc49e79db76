"""Start-up and first page view stay off the heavy paths.

The window must appear before LanceDB, pyarrow, PyMuPDF, onnxruntime, Pydantic AI's models or
docling load (they come with the library, opened in a worker once the window is up), and an
answer's cited pages are rendered before the user clicks them. Behavioural checks in fresh
interpreters (``sys.modules``), no timing thresholds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pdf_factory
import pytest
from PySide6.QtWidgets import QApplication
from qt_helpers import run_until

from haiku_desk.services import create_services
from haiku_desk.services.library import uri_for
from haiku_desk.views.main_window import READABLE_WIDTH, MainWindow

HEAVY = (
    "lancedb",
    "pyarrow",
    "pymupdf",
    "onnxruntime",
    "numpy",
    "pandas",
    "pydantic_ai.models",
    "docling",
    "docling_core",
    "haiku.rag.store.engine",
)
CHECK_HEAVY = f"""
heavy = {HEAVY!r}
loaded = sorted({{m.split('.')[0] if m.split('.')[0] != 'pydantic_ai' else m for m in sys.modules}} & set(heavy))
loaded += [m for m in heavy if '.' in m and m in sys.modules and m not in loaded]
print(json.dumps(sorted(set(loaded))))
"""


def run_python(code: str, tmp_path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        HF_HUB_OFFLINE="1",
    )
    env.pop("HAIKU_RAG_CONFIG_PATH", None)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=tmp_path,
    )


def loaded_heavy(result: subprocess.CompletedProcess[str]) -> list[str]:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_the_app_and_its_window_loads_no_heavy_module(tmp_path):
    code = (
        "import json, sys\n"
        "import haiku_desk.app, haiku_desk.services, haiku_desk.views.main_window\n"
        "import haiku_desk.views.chat_pane, haiku_desk.services.chat, haiku_desk.services.conversations\n"
        + CHECK_HEAVY
    )
    assert loaded_heavy(run_python(code, tmp_path)) == []


def test_building_and_showing_the_window_loads_no_heavy_module(tmp_path):
    """What ``haiku-desk`` does before its window is on screen: settings, services, the window,
    shown and painted. The library opens afterwards (``LibraryService.start``), and PyMuPDF
    warms up on the render thread once the event loop has run a while after the first paint."""
    code = (
        "import json, sys\n"
        "from haiku.rag.config import load_config\n"
        "from PySide6.QtWidgets import QApplication\n"
        "from haiku_desk.bridge import install_event_loop\n"
        "from haiku_desk.services import create_services\n"
        "from haiku_desk.views.main_window import MainWindow\n"
        "app = QApplication([])\n"
        "app.setOrganizationName('haiku-desk-startup-test')\n"
        "loop = install_event_loop(app)\n"
        "config = load_config()\n"
        f"config.storage.data_dir = {str(tmp_path / 'data')!r}\n"
        f"services = create_services({str(tmp_path / 'library.lancedb')!r}, config)\n"
        "window = MainWindow(services)\n"
        "window.show()\n"
        "window.grab()  # a paint of the whole window\n"
        + CHECK_HEAVY
    )
    assert loaded_heavy(run_python(code, tmp_path)) == []


def test_a_saved_conversation_resolves_its_citations_on_first_use(tmp_path):
    """``Citation`` (which loads the store's models) is imported when a conversation is first
    read or built, not when the module is imported; records still hold real ``Citation``s."""
    code = """
        import sys
        from haiku_desk.services.conversations import ConversationRecord, Turn
        assert "haiku.rag.citations" not in sys.modules
        box = {"page": 2, "x0": 1.0, "y0": 2.0, "x1": 3.0, "y1": 4.0}
        cited = {"index": 1, "chunk_id": "c", "document_id": "d", "document_uri": "file:///r.pdf",
                 "content": "kerosene", "boxes": [box]}
        record = ConversationRecord.model_validate({"turns": [{"question": "q", "citations": [cited]}]})
        from haiku.rag.citations import Citation
        citation = record.turns[0].citations[0]
        assert isinstance(citation, Citation) and citation.boxes[0].page == 2
        again = ConversationRecord.model_validate_json(record.model_dump_json())
        assert again.turns[0].citations == [citation]
        assert Turn(question="q", citations=[citation]).citations[0] is citation
        print("ok")
    """
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_page_renderer_loads_pymupdf_without_its_layout_extras(tmp_path):
    """pymupdf's ``__init__`` would load ``pymupdf.layout`` (an ONNX model) and pymupdf4llm;
    rendering needs neither, and both stay importable for whoever does."""
    code = """
        import importlib.util, sys
        from haiku.rag.mupdf import MUPDF_LOCK
        from haiku_desk.services.pages import import_pymupdf
        with MUPDF_LOCK:
            pymupdf = import_pymupdf()
            doc = pymupdf.open()
            doc.new_page(width=100, height=50).insert_text((10, 30), "Aa")
            assert doc[0].get_pixmap(alpha=False).width == 100
            doc.close()
        for extra in ("pymupdf.layout", "pymupdf4llm", "onnxruntime"):
            assert extra not in sys.modules, extra
        assert importlib.util.find_spec("pymupdf.layout") is not None  # no placeholder left behind
        assert import_pymupdf() is pymupdf
        print("ok")
    """
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


SLOW = 180


@pytest.fixture
def window(qloop, qtbot, db_path, config):
    services = create_services(db_path, config)
    opened = []
    services.library.opened.connect(lambda: opened.append(True))
    services.library.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.citation_panel.open_in_system_viewer = False
    window.show()
    qtbot.waitExposed(window)
    yield window
    qloop.run_until_complete(services.library.aclose())
    services.pages.close()


def test_an_answers_cited_page_is_rendered_before_it_is_clicked(qloop, window, tmp_path):
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    library, chat, pages = window.services.library, window.services.chat, window.services.pages
    library.add_paths([str(report.path)])
    run_until(qloop, lambda: (e := library.entry(uri_for(report.path))) is not None and e.searchable, SLOW)

    # a readable panel: a narrower one turns reader mode on at the click (a new width, so a
    # new zoom to render at), which is its own behaviour (tests/app/test_reader.py)
    panel = window.citation_panel
    window.resize(max(window.width(), 1400), window.height())
    window.splitter.setSizes([330, 560, 420])
    QApplication.processEvents()
    assert panel.width() >= READABLE_WIDTH

    answers = []
    chat.answer_ready.connect(lambda _id, turn: answers.append(turn))
    assert chat.answer_mode() == "search-only"  # no model configured: real passages, real citations
    chat.ask("kerosene shortage night convoys")
    run_until(qloop, lambda: bool(answers), SLOW)
    citation = answers[0].citations[0]
    page = min(b.page for b in citation.boxes)
    run_until(qloop, lambda: pages.cached(citation.document_id, page, panel.render_zoom()) is not None, SLOW)

    shown = []
    panel.page_shown.connect(shown.append)
    window.chat_pane.citation_activated.emit(citation)  # what a click on its chip emits
    assert shown == [page]  # from the cache, before the event loop runs again
