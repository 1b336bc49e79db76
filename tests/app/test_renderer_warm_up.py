"""The page renderer (PyMuPDF, tens of MB resident) is loaded ahead of the first citation click
only once the library holds a document a citation could show: an empty library's window stays
light while it waits (issue 16, idle memory)."""

from __future__ import annotations

import asyncio

import pdf_factory
from qt_helpers import run_until

from haiku_desk.views.main_window import DEFAULT_SIZE, WARM_UP_DELAY_MS, MainWindow

SLOW = 180


def _show(qtbot, services) -> MainWindow:
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.citation_panel.open_in_system_viewer = False
    window.resize(*DEFAULT_SIZE)
    window.show()
    qtbot.waitExposed(window)
    return window


def test_an_empty_library_does_not_load_the_renderer_until_a_document_is_in(qtbot, qloop, services, tmp_path):
    _show(qtbot, services)
    qloop.run_until_complete(asyncio.sleep(3 * WARM_UP_DELAY_MS / 1000))
    assert services.pages._warm is None
    pdf = tmp_path / "report.pdf"
    pdf_factory.make_report_pdf(pdf)
    services.library.add_paths([pdf])
    run_until(qloop, lambda: any(e.searchable for e in services.library.entries), SLOW)
    run_until(qloop, lambda: services.pages._warm is not None, SLOW)


def test_a_library_that_holds_documents_loads_the_renderer_after_the_first_paint(qtbot, qloop, services, tmp_path):
    pdf = tmp_path / "report.pdf"
    pdf_factory.make_report_pdf(pdf)
    services.library.add_paths([pdf])
    run_until(qloop, lambda: any(e.searchable for e in services.library.entries), SLOW)
    assert services.pages._warm is None  # no window yet
    _show(qtbot, services)
    run_until(qloop, lambda: services.pages._warm is not None, SLOW)
