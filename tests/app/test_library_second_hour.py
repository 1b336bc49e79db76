"""Issue 34, the library pane's second hour: the filter reads file names, authors and years;
Delete deletes; the confirmation opens in one place; the Document column keeps its width; the
collections and watched folders sit in a splitter that keeps its size."""

from __future__ import annotations

from PySide6.QtCore import Qt
from qt_helpers import run_until

from haiku_desk.models.documents import ENTRY_ROLE, NAME
from haiku_desk.services.library import uri_for
from haiku_desk.views.library_pane import LibraryPane

SLOW = 180


def _titled_pdf(path, title: str, body: str):
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 110), title, fontname="hebo", fontsize=22)
    for i in range(8):
        page.insert_text((72, 170 + 14 * i), f"{body} (line {i})", fontname="helv", fontsize=10)
    doc.save(path)
    doc.close()
    return path


def _pane(qtbot, library, width=420, height=520, **kwargs):
    pane = LibraryPane(library, **kwargs)
    qtbot.addWidget(pane)
    pane.resize(width, height)
    pane.show()
    qtbot.waitExposed(pane)
    return pane


def _ingest(qloop, library, files):
    library.add_paths(files)
    run_until(qloop, lambda: all((e := library.entry(uri_for(f))) is not None and e.searchable for f in files), SLOW)


def _pane_in_window(qtbot, library):
    """The library pane as the main window holds it: in an active window (the keyboard's
    focus and the delete confirmation's place need one). Returns (window, pane): the caller
    keeps the window."""
    from PySide6.QtWidgets import QMainWindow

    window = QMainWindow()
    qtbot.addWidget(window)
    pane = LibraryPane(library)
    window.setCentralWidget(pane)
    window.resize(900, 600)
    window.show()
    window.activateWindow()
    qtbot.waitExposed(window)
    return window, pane


def _shown_keys(pane) -> list[str]:
    return [pane.proxy.index(r, NAME).data(ENTRY_ROLE).key for r in range(pane.proxy.rowCount())]


def test_the_filter_matches_title_file_name_authors_and_year(qloop, qtbot, library, tmp_path):
    from haiku.rag.bibliography import edited_record

    report = _titled_pdf(tmp_path / "report-619.pdf", "Groundwater Recharge in Karst", "Karst aquifers recharge.")
    paper = _titled_pdf(tmp_path / "paper.pdf", "Attention Is All You Need", "Transformers attend.")
    pane = _pane(qtbot, library)
    _ingest(qloop, library, [report, paper])
    paper_id = library.entry(uri_for(paper)).document_id
    record = edited_record(None, title=None, authors="Vaswani, Ashish\nShazeer, Noam", year="2017", venue=None, doi=None)
    client = library.client
    qloop.run_until_complete(client.update_bibliographic(paper_id, record))
    qloop.run_until_complete(library.refresh())

    def shown(text: str) -> list[str]:
        pane.search.setText(text)
        return _shown_keys(pane)

    assert shown("619") == [uri_for(report)]  # the file name shown under the title
    assert shown("karst") == [uri_for(report)]  # the title
    assert shown("shazeer") == [uri_for(paper)]  # an author
    assert shown("2017") == [uri_for(paper)]  # the year
    assert shown("vaswani 2017") == [uri_for(paper)]  # every word, in any field
    assert shown("vaswani karst") == []
    assert shown("") == [uri_for(report), uri_for(paper)]


def test_the_filter_folds_accents_and_says_when_nothing_matches(qloop, qtbot, library, tmp_path):
    """Tester 19:40: "Oguz" found nothing while the paper's author is Barlas Oğuz (the chat's
    search folds accents), and a filter matching nothing left a blank table."""
    from haiku.rag.bibliography import edited_record

    paper = _titled_pdf(tmp_path / "dpr.pdf", "Dense Passage Retrieval", "Dense retrieval of passages.")
    notes = _titled_pdf(tmp_path / "notes.pdf", "Notes on the Kéréon lighthouse", "A lighthouse off Ushant.")
    pane = _pane(qtbot, library)
    _ingest(qloop, library, [paper, notes])
    run_until(qloop, lambda: not library.busy, SLOW)  # embedded: no later write of the rows
    record = edited_record(None, title=None, authors="Oğuz, Barlas", year="2020", venue=None, doi=None)
    qloop.run_until_complete(library.client.update_bibliographic(library.entry(uri_for(paper)).document_id, record))
    qloop.run_until_complete(library.refresh())

    def shown(text: str) -> list[str]:
        pane.search.setText(text)
        return _shown_keys(pane)

    assert shown("oguz") == [uri_for(paper)]
    assert shown("OĞUZ") == [uri_for(paper)]
    assert shown("kereon") == [uri_for(notes)]
    assert not pane.empty_hint.isVisible()
    assert shown("jegou") == []
    assert pane.empty_hint.isVisible() and pane.empty_hint.text().startswith("No document matches “jegou”")
    assert shown("") == [uri_for(paper), uri_for(notes)] and not pane.empty_hint.isVisible()


def test_the_conversation_search_folds_accents():
    from haiku_desk.services.conversations import ConversationRecord

    conversation = ConversationRecord(title="The Kéréon lighthouse")
    assert conversation.matches("kereon") and conversation.matches("KÉRÉON") and not conversation.matches("ushant")


def test_delete_key_asks_first_in_the_same_place_each_time_then_deletes(qloop, qtbot, library, tmp_path):
    files = [_titled_pdf(tmp_path / f"{n}.pdf", f"Notes on {n}", f"{n} grow in orchards.") for n in ("apples", "pears")]
    window, pane = _pane_in_window(qtbot, library)
    _ingest(qloop, library, files)
    keys = [uri_for(f) for f in files]

    def ask(selected: list[str]):
        pane.select_keys(selected)
        pane.table.setFocus()
        qtbot.keyClick(pane.table, Qt.Key.Key_Delete)
        dialog = pane.delete_dialog
        assert dialog is not None and dialog.isVisible()
        return dialog, dialog.frameGeometry().center()

    dialog, first = ask(keys[:1])  # one document: “Notes on apples”
    assert "Notes on apples" in dialog.text()
    dialog.reject()
    qtbot.waitUntil(lambda: pane.delete_dialog is None)
    assert library.entry(keys[0]) is not None  # Cancel keeps it

    dialog, second = ask(keys)  # a longer question: "2 documents"
    assert "2 documents" in dialog.text()
    centre = window.frameGeometry().center()
    assert (first - centre).manhattanLength() <= 2 and (second - centre).manhattanLength() <= 2
    delete = next(b for b in dialog.buttons() if b.text() == "Delete")
    delete.click()
    run_until(qloop, lambda: all(library.entry(k) is None for k in keys), SLOW)

    # Delete typed in the filter box edits the text, never the rows
    pane.search.setText("abc")
    pane.search.setFocus()
    pane.search.setCursorPosition(0)
    qtbot.keyClick(pane.search, Qt.Key.Key_Delete)
    assert pane.search.text() == "bc" and pane.delete_dialog is None


def test_the_document_column_keeps_its_width_when_a_scrollbar_appears(qloop, qtbot, library):
    from haiku_desk.services.entries import DocumentState, LibraryEntry

    pane = _pane(qtbot, library, width=420, height=360)
    header = pane.table.horizontalHeader()
    library.rows.set(LibraryEntry(key="file:///none/0.pdf", name="Zero", state=DocumentState.CANCELLED))
    qtbot.waitUntil(lambda: pane.proxy.rowCount() == 1)
    assert not pane.table.verticalScrollBar().isVisible()
    before = header.sectionSize(NAME)
    for i in range(1, 40):
        library.rows.set(LibraryEntry(key=f"file:///none/{i}.pdf", name=f"Row {i}", state=DocumentState.CANCELLED))
    qtbot.waitUntil(lambda: pane.table.verticalScrollBar().isVisible())
    assert header.sectionSize(NAME) == before
    assert not pane.table.horizontalScrollBar().isVisible()


def test_collections_and_watched_folders_sit_in_a_splitter_that_remembers_its_sizes(
    qloop, qtbot, library, notifications, tmp_path
):
    from haiku_desk.services.collections import CollectionsService

    collections = CollectionsService(library, notifications)
    collections.refresh()
    watched = tmp_path / "watched"
    watched.mkdir()
    library.watch.add(str(watched))
    run_until(qloop, lambda: bool(library.watch.folders), SLOW)
    pane = _pane(qtbot, library, width=420, height=600, collections=collections)
    sections = pane.sections
    assert sections.widget(0) is pane.collections_box and sections.widget(2) is pane.watched_box
    qtbot.waitUntil(lambda: pane.watched_box.isVisible())
    table_height = pane.table.height()
    # the user drags the collections box shut and the watched folders down to nothing
    sizes = sections.sizes()
    sections.setSizes([0, sizes[0] + sizes[1] + sizes[2], 0])
    sections.splitterMoved.emit(0, 1)
    qtbot.waitUntil(lambda: pane.table.height() > table_height)
    grown = pane.table.height()

    again = _pane(qtbot, library, width=420, height=600, collections=collections)  # the next start
    qtbot.waitUntil(lambda: again.watched_box.isVisible())
    assert again.sections.sizes()[0] == 0 and again.sections.sizes()[2] == 0
    assert again.table.height() == grown


def test_a_cancelled_file_stays_a_row_across_starts_with_reingest_and_remove(
    qloop, qtbot, library, tmp_path, db_path, config, notifications
):
    from haiku_desk.services.entries import DocumentState
    from haiku_desk.services.failures import NextStep
    from haiku_desk.services.library import LibraryService

    a = _titled_pdf(tmp_path / "a.pdf", "Saffron Tariffs", "Saffron tariffs were renegotiated.")
    b = _titled_pdf(tmp_path / "b.pdf", "Porcupine Protocol", "The porcupine protocol governs crews.")
    library.add_paths([a, b])
    library.cancel([uri_for(a), uri_for(b)])  # still queued: neither is added
    run_until(qloop, lambda: not library.busy, SLOW)
    qloop.run_until_complete(library.aclose())

    again = LibraryService(db_path, config, notifications)  # the next start
    opened = []
    again.opened.connect(lambda: opened.append(True))
    again.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    try:
        for f in (a, b):
            entry = again.entry(uri_for(f))
            assert entry is not None and entry.state is DocumentState.CANCELLED and entry.state_label == "cancelled"
        pane = _pane(qtbot, again)
        pane.select_keys([uri_for(a)])
        assert pane.reason.isVisible() and "cancelled" in pane.reason.text()
        assert pane.next_step_buttons[NextStep.REINGEST].isVisible()
        assert pane.next_step_buttons[NextStep.REMOVE].isVisible()
        pane.next_step_buttons[NextStep.REMOVE].click()  # the row goes, and stays gone
        assert again.entry(uri_for(a)) is None
        pane.select_keys([uri_for(b)])
        pane.next_step_buttons[NextStep.REINGEST].click()
        run_until(qloop, lambda: (e := again.entry(uri_for(b))) is not None and e.searchable, SLOW)
        run_until(qloop, lambda: not again.busy, SLOW)
    finally:
        qloop.run_until_complete(again.aclose())

    third = LibraryService(db_path, config, notifications)
    opened.clear()
    third.opened.connect(lambda: opened.append(True))
    third.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    try:
        assert third.entry(uri_for(a)) is None
        assert third.entry(uri_for(b)) is not None and third.entry(uri_for(b)).searchable
    finally:
        qloop.run_until_complete(third.aclose())


def test_ctrl_n_again_reuses_the_empty_new_chat(qloop, qtbot, services):
    from haiku_desk.views.chat_pane import ChatPane

    pane = ChatPane(services)
    qtbot.addWidget(pane)
    pane.resize(700, 500)
    pane.show()
    qtbot.waitExposed(pane)
    chat = services.chat
    for _ in range(3):
        pane.new_chat_action.trigger()  # Ctrl+N (its shortcut: tests/app/test_chat_pane.py)
    titles = [s.title for s in chat.conversations()]
    assert titles == ["New chat"] and pane.conversation_list.count() == 1
    first = chat.current
    chat.rename(first.id, "Orchard notes")  # no longer blank: the next Ctrl+N makes a new one
    pane.new_chat_action.trigger()
    assert chat.current.id != first.id
    assert sorted(s.title for s in chat.conversations()) == ["New chat", "Orchard notes"]
    chat.open_conversation(first.id)  # back in the named one, Ctrl+N opens the empty one again
    pane.new_chat_action.trigger()
    assert chat.current.title == "New chat" and len(chat.conversations()) == 2


def _long_pdf(path, pages: int):
    import pymupdf

    words = "soil moisture probes calibrate against gravimetric samples in sandy loam orchards".split()
    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 72), f"Chapter {p + 1}", fontname="hebo", fontsize=16)
        for line in range(40):
            text = " ".join(words[(line + p + i) % len(words)] for i in range(12)) + f" {p}.{line}"
            page.insert_text((72, 100 + 17 * line), text, fontname="helv", fontsize=10)
    doc.save(path)
    doc.close()
    return path


def test_the_overall_bar_reads_files_then_says_all_searchable_and_follows_the_chunks_embedded(
    qloop, qtbot, library, tmp_path
):
    """The bar names the phase under way and measures it alone: pages while files are read
    ("Reading files: 1 of 2 · 40 %"), then, with every file searchable, the chunks embedded
    ("All searchable · improving search: 1 of 2 embedded"). It once measured both as one
    number: with 24 files read it said "16 % · 23 files to go" while the status bar said "24
    documents searchable", and crawled along a total that was mostly embedding."""
    import re

    from haiku.rag.operations import Stage

    book = _long_pdf(tmp_path / "book.pdf", 30)
    note = _titled_pdf(tmp_path / "note.pdf", "A Short Note", "A note on probes.")
    pane = _pane(qtbot, library)
    statuses: list = []
    library.overall_progress.connect(statuses.append)
    reading: list = []
    embedding: list = []

    def seen(key: str, progress) -> None:  # after the runner took the report in
        if progress.stage is Stage.PARSING and progress.total > 1 and key == uri_for(book):
            reading.append((statuses[-1], pane.overall.format()))
        if progress.stage is Stage.EMBEDDING and progress.total > 1:
            embedded_so_far = [e.chunk_count for e in library.entries if e.state.value == "hybrid"]
            embedding.append((sum(embedded_so_far) + progress.done, statuses[-1], pane.overall.format()))

    library.queue.progressed.connect(seen)
    library.add_paths([book, note])
    run_until(qloop, lambda: all(library.entry(uri_for(f)).state.value == "hybrid" for f in (book, note)), SLOW)
    run_until(qloop, lambda: statuses[-1].idle, SLOW)
    assert not pane.overall.isVisible()

    # reading: the book's pages move the bar, and the words say so
    assert len({status.done for status, _ in reading}) >= 2
    bars = [status.done / status.total for status, _ in reading]
    assert bars == sorted(bars) and bars[-1] > bars[0]
    for status, text in reading:
        assert status.phase == "reading" and status.files_total == 2 and status.files_done <= 1
        assert text in (status.text(), status.text(short=True)) and text.startswith("Reading")
        assert "to go" not in text

    # embedding: every file searchable, the bar the chunks embedded of the chunks to embed
    chunks = sum(library.entry(uri_for(f)).chunk_count for f in (book, note))
    assert library.entry(uri_for(book)).chunk_count > 30
    assert len({status.done for _, status, _ in embedding}) >= 3
    for embedded, status, text in embedding:
        assert status.phase == "embedding" and status.files_total == 2
        assert abs(status.done / status.total - embedded / chunks) <= 1 / status.total + 1e-9
        assert re.fullmatch(r"All searchable · improving search: [01] of 2 embedded", status.text())
        assert text in (status.text(), status.text(short=True)) and text.startswith("All searchable")
    # one file embedded, then the other
    assert [s.files_done for s in statuses if s.phase == "embedding"][-1] == 1
    assert embedding[0][1].files_done == 0 or embedding[-1][1].files_done == 1
    # the phases in order, each bar never backwards (but rounding), full only at its end
    phases = [s.phase for i, s in enumerate(statuses) if i == 0 or s.phase != statuses[i - 1].phase]
    assert phases == ["reading", "embedding", ""]
    for phase in ("reading", "embedding"):
        steps = [s.done / s.total for s in statuses if s.phase == phase]
        assert all(b >= a - 0.01 for a, b in zip(steps, steps[1:], strict=False)), phase
    embeds = [s for s in statuses if s.phase == "embedding"]
    assert all(s.done < s.total for s in embeds[:-1]) and embeds[0].done < embeds[0].total / 2


def test_f6_frames_the_pane_that_has_the_focus(qloop, qtbot, services):
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QApplication

    from haiku_desk.views.main_window import MainWindow

    window = MainWindow(services)
    qtbot.addWidget(window)
    window.resize(1280, 800)  # four panes (at 1024x640 the empty reader yields its room)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(lambda: window.isActiveWindow())
    focus = window.pane_focus
    panes = [pane for pane, _ in window._focus_stops()]
    assert len(panes) == 4

    def framed() -> object:
        return next((p for p in panes if p.property("focusPane") is True), None)

    window.chat_pane.input.setFocus()  # where the window starts: the question box, no frame
    assert framed() is None and not focus.frame.isVisible()
    for expected in (panes[3], panes[0], panes[1], panes[2], panes[3]):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_F6)
        qtbot.waitUntil(lambda e=expected: framed() is e)
        assert [p for p in panes if p.property("focusPane") is True] == [expected]
        frame = focus.frame
        assert frame.isVisible() and frame.geometry().topLeft() == expected.mapTo(window, expected.rect().topLeft())
        assert frame.size() == expected.size()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_F6, Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: framed() is panes[2])
    window.library_pane.search.setFocus(Qt.FocusReason.TabFocusReason)  # Tab on into another pane
    qtbot.waitUntil(lambda: framed() is panes[0])  # the frame follows
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_F6, Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: framed() is panes[3])

    # the frame is drawn: the pane's edge is the highlight colour in the window's pixels
    image = window.grab().toImage()
    pane = panes[3]
    top_left = pane.mapTo(window, pane.rect().topLeft())
    point = top_left + pane.rect().center() * 0
    point.setY(top_left.y() + pane.height() // 2)
    ratio = image.devicePixelRatio()
    pixel = image.pixelColor(int(point.x() * ratio), int(point.y() * ratio))
    highlight = window.palette().color(QPalette.ColorGroup.Active, QPalette.ColorRole.Highlight)
    assert pixel.rgb() == highlight.rgb()

    # a mouse click ends the keyboard's frame
    qtbot.mouseClick(window.chat_pane.input, Qt.MouseButton.LeftButton)
    assert framed() is None and not focus.frame.isVisible()


def test_help_about_names_versions_licence_library_and_log_folder(qloop, qtbot, services):
    from haiku_desk import __version__
    from haiku_desk.views.main_window import MainWindow

    window = MainWindow(services)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    help_menu = window.help_menu
    assert window.about_action in help_menu.actions() and help_menu.actions()[-1] is window.about_action
    assert "&A" in window.about_action.text()  # Alt+H, A from the keyboard
    window.about_action.trigger()
    dialog = window.about_dialog
    qtbot.waitUntil(dialog.isVisible)
    text = dialog.text.text()
    assert f"haiku-desk {__version__}" in text and f"haiku.rag {__version__}" in text
    assert "AGPL-3.0-or-later" in text
    assert str(services.library.db_path) in text
    from haiku_desk.services.library_choice import log_folder

    assert str(log_folder(services.config)) in text
    assert "docs" in text  # links to the documentation of a source checkout
    dialog.copy_details()
    from PySide6.QtGui import QGuiApplication

    assert str(services.library.db_path) in QGuiApplication.clipboard().text()
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.about_dialog.isVisible())


def test_zotero_rows_are_told_apart_show_their_files_and_a_missing_file_warns_with_its_next_step(
    qloop, qtbot, library, notifications, tmp_path
):
    import zotero_factory as zf

    from haiku_desk.models.documents import FILE_NAME_ROLE
    from haiku_desk.services.notifications import Level

    zotero = zf.build_library(tmp_path)
    pane = _pane(qtbot, library)
    task = library.import_zotero(zotero.data_dir)
    run_until(qloop, task.done, SLOW)
    assert task.result().counts() == {"ingested": 3, "missing": 1}

    def row(role: str):
        key = f"zotero://select/library/items/{zotero.keys[role]}"
        index = pane.proxy.mapFromSource(pane.model.index(pane.model.row_of(key), NAME))
        return library.entry(key), index

    main, main_index = row("a_main")
    supplement, supplement_index = row("a_supplement")
    assert main.name == zf.PAPER_A["title"]
    # not a second identical row, even where a narrow list cuts titles short
    assert supplement.name == f"Supplement to “{zf.PAPER_A['title']}” (supplement.pdf)"
    assert supplement_index.data(FILE_NAME_ROLE).startswith("supplement.pdf")  # the file, not ATTA0002
    assert main_index.data(FILE_NAME_ROLE).startswith("kowalczyk2017.pdf")
    pane.search.setText("kowalczyk2017")  # and the filter finds it by that name
    assert [pane.proxy.index(r, NAME).data(ENTRY_ROLE).key for r in range(pane.proxy.rowCount())] == [main.key]

    # the missing attachment: a warning that stays, naming it and what to do
    (warning,) = [n for n in notifications.history if n.level is Level.WARNING]
    assert "otters.pdf" in warning.message and "Find Available PDF" in warning.message
    assert notifications.is_live(warning.key)


def test_a_start_lists_the_last_sessions_rows_before_the_store_opens_then_corrects_them(
    qloop, library, tmp_path, db_path, config, notifications
):
    from haiku_desk.services.library import LibraryService

    kept = _titled_pdf(tmp_path / "kept.pdf", "Lichen on Basalt", "Lichens grow slowly.")
    gone = _titled_pdf(tmp_path / "gone.pdf", "Moss on Granite", "Mosses hold water.")
    _ingest(qloop, library, [kept, gone])
    run_until(qloop, lambda: not library.busy, SLOW)
    qloop.run_until_complete(library.aclose())  # the rows are written at close
    # meanwhile another program (the command line) deletes one of them
    from haiku.rag.client import HaikuRAG

    gone_id = library.entry(uri_for(gone)).document_id
    other = HaikuRAG(db_path, config)
    qloop.run_until_complete(other.delete_document(gone_id))
    other.close()

    again = LibraryService(db_path, config, notifications)
    opened = []
    again.opened.connect(lambda: opened.append(True))
    again.start()  # no event-loop turn yet: the store cannot be open
    try:
        assert not again.is_open and again.is_opening
        assert [e.name for e in again.entries] == ["Lichen on Basalt", "Moss on Granite"]  # rows first
        assert again.entry(uri_for(kept)).searchable and again.entry(uri_for(kept)).page_count == 1
        run_until(qloop, lambda: bool(opened), SLOW)
        assert [e.key for e in again.entries] == [uri_for(kept)]  # the store's listing corrects them
    finally:
        qloop.run_until_complete(again.aclose())


def test_the_collections_box_grows_to_show_the_collections_that_arrive(qloop, qtbot, library, notifications):
    from haiku_desk.services.collections import CollectionsService

    collections = CollectionsService(library, notifications)
    collections.refresh()
    pane = _pane(qtbot, library, width=420, height=600, collections=collections)
    box = pane.collections_box
    for name in ("Thesis", "Reading list", "Methods"):
        qloop.run_until_complete(collections.create(name, []))
    qtbot.waitUntil(lambda: box.list.count() == 3)
    qtbot.waitUntil(lambda: box.height() >= box.sizeHint().height())
    assert box.list.height() >= 3 * box.list.sizeHintForRow(0)  # all three rows, no scrolling


def test_the_menu_key_opens_the_current_rows_menu(qloop, qtbot, library):
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QContextMenuEvent
    from PySide6.QtWidgets import QApplication

    from haiku_desk.services.entries import DocumentState, LibraryEntry

    pane = _pane(qtbot, library, width=420, height=500)
    for i in range(2):
        library.rows.set(LibraryEntry(key=f"file:///none/{i}.pdf", name=f"Row {i}", state=DocumentState.CANCELLED))
    qtbot.waitUntil(lambda: pane.proxy.rowCount() == 2)
    pane.table.setFocus()
    pane.table.setCurrentIndex(pane.proxy.index(1, NAME))
    viewport = pane.table.viewport()
    below_the_rows = QPoint(10, viewport.height() - 5)  # where Qt may put a keyboard menu
    assert not pane.table.indexAt(below_the_rows).isValid()
    event = QContextMenuEvent(QContextMenuEvent.Reason.Keyboard, below_the_rows, viewport.mapToGlobal(below_the_rows))
    QApplication.sendEvent(viewport, event)
    menu = pane.context_menu
    qtbot.waitUntil(menu.isVisible)
    assert "Delete" in [a.text() for a in menu.actions()]
    menu.close()


def test_the_page_renderer_and_the_cjk_font_load_only_once_the_library_is_open(
    qloop, qtbot, library, tmp_path, db_path, config
):
    from haiku_desk.services import create_services
    from haiku_desk.views.main_window import MainWindow

    _ingest(qloop, library, [_titled_pdf(tmp_path / "a.pdf", "Lichen on Basalt", "Lichens grow slowly.")])
    run_until(qloop, lambda: not library.busy, SLOW)
    qloop.run_until_complete(library.aclose())  # its rows are kept: the next start lists them first

    services = create_services(db_path, config)
    window = MainWindow(services)
    qtbot.addWidget(window)
    opened = []
    services.library.opened.connect(lambda: opened.append(True))
    services.library.start()  # rows first: a searchable row shows before the store is open
    assert services.library.is_opening and any(e.searchable for e in services.library.entries)
    window._warm_up_renderer_when_useful()  # what the first paint's timers call
    window._install_fallback_font()
    assert services.pages._warm is None and not hasattr(window, "_font_task")  # LanceDB's import goes first
    run_until(qloop, lambda: bool(opened), SLOW)
    assert services.pages._warm is not None and hasattr(window, "_font_task")
    qloop.run_until_complete(window._font_task)
    qloop.run_until_complete(services.library.aclose())
    services.pages.close()


def test_a_narrow_library_pane_gives_the_titles_most_of_its_width(qloop, qtbot, library):
    from haiku_desk.services.entries import DocumentState, LibraryEntry

    pane = _pane(qtbot, library, width=320, height=400)
    library.rows.set(LibraryEntry(key="file:///none/a.pdf", name="Sparse Walrus Attention", state=DocumentState.HYBRID))
    qtbot.waitUntil(lambda: pane.proxy.rowCount() == 1)
    header = pane.table.horizontalHeader()
    from PySide6.QtWidgets import QStyle

    scrollbar = pane.table.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
    assert header.sectionSize(NAME) >= 0.6 * (pane.table.contentsRect().width() - scrollbar)


def test_a_cancelled_embedding_stays_cancelled_at_the_next_start(qloop, qtbot, library, tmp_path, db_path, config, notifications):
    from haiku_desk.models.documents import FILE_NAME_ROLE
    from haiku_desk.services.entries import DocumentState
    from haiku_desk.services.library import LibraryService

    book = _long_pdf(tmp_path / "book.pdf", 30)
    key = uri_for(book)
    library.add_paths([book])
    run_until(qloop, lambda: (e := library.entry(key)) is not None and e.state is DocumentState.EMBEDDING, SLOW)
    pane = _pane(qtbot, library)
    index = pane.proxy.index(0, NAME)
    assert index.data(FILE_NAME_ROLE) == "book.pdf · 30 p."  # the pages stay shown while it embeds
    library.cancel([key])
    run_until(qloop, lambda: not library.busy and library.entry(key).state is DocumentState.TEXT, SLOW)
    qloop.run_until_complete(library.aclose())

    again = LibraryService(db_path, config, notifications)
    opened = []
    again.opened.connect(lambda: opened.append(True))
    again.start()
    try:
        run_until(qloop, lambda: bool(opened), SLOW)
        run_until(qloop, lambda: not again.busy, SLOW)
        assert again.entry(key).state is DocumentState.TEXT  # not embedded again without asking
        again.reingest([key])  # the user's way to complete it
        run_until(qloop, lambda: again.entry(key).state is DocumentState.HYBRID, SLOW)
    finally:
        qloop.run_until_complete(again.aclose())


def test_one_watched_folder_takes_two_lines_and_folds_away(qloop, qtbot, library, tmp_path):
    watched = tmp_path / "watched"
    watched.mkdir()
    library.watch.add(str(watched))
    run_until(qloop, lambda: bool(library.watch.folders), SLOW)
    pane = _pane(qtbot, library, width=420, height=600)
    qtbot.waitUntil(pane.watched_box.isVisible)
    line = pane.fontMetrics().height()
    assert pane.watched_box.sizeHint().height() <= 2 * line + 3 * 12  # header with its buttons + one row
    assert pane.watched.height() < 2 * pane.watched.sizeHintForRow(0)  # one row, not a box of empty lines
    table = pane.table.height()
    pane.watched_toggle.click()  # folded: only its header line stays
    qtbot.waitUntil(lambda: not pane.watched.isVisible())
    qtbot.waitUntil(lambda: pane.table.height() > table)
    again = _pane(qtbot, library, width=420, height=600)  # remembered at the next start
    qtbot.waitUntil(again.watched_box.isVisible)
    assert not again.watched.isVisible() and not again.watched_toggle.isChecked()


def test_the_collections_fold_away_and_the_table_takes_their_room(qloop, qtbot, library, notifications):
    from haiku_desk.services.collections import CollectionsService

    collections = CollectionsService(library, notifications)
    collections.refresh()
    pane = _pane(qtbot, library, width=420, height=600, collections=collections)
    box = pane.collections_box
    for name in ("Thesis", "Reading list"):
        qloop.run_until_complete(collections.create(name, []))
    qtbot.waitUntil(lambda: box.list.count() == 2 and box.list.isVisible())
    table = pane.table.height()
    box.title.click()  # folded: the header stays, the list goes, the table grows
    qtbot.waitUntil(lambda: not box.list.isVisible())
    qtbot.waitUntil(lambda: pane.table.height() > table)
    again = _pane(qtbot, library, width=420, height=600, collections=collections)  # the next start
    qtbot.waitUntil(lambda: again.collections_box.list.count() == 2)
    assert not again.collections_box.list.isVisible() and not again.collections_box.title.isChecked()


def test_a_source_without_pages_opens_for_reading_from_its_row(qloop, qtbot, library, tmp_path):
    """A Markdown (or HTML, Office) source has no pages; Enter or "Open" on its row still opens
    it, as text, like a PDF's row opens its pages (the reader's hint promises it for every row)."""
    notes = tmp_path / "field-notes.md"
    notes.write_text("# Field notes\n\nOtters hold hands while sleeping so they do not drift apart.\n")
    pane = _pane(qtbot, library)
    _ingest(qloop, library, [notes])
    entry = library.entry(uri_for(notes))
    assert entry.page_count == 0  # a text source
    opened: list[tuple[str, str]] = []
    pane.document_opened.connect(lambda document_id, name: opened.append((document_id, name)))
    row = pane.proxy.index(0, NAME)
    pane.table.setFocus()
    pane.table.setCurrentIndex(row)
    qtbot.keyClick(pane.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: len(opened) == 1)
    assert opened[0][0] == entry.document_id
    pane._context_menu(pane.table.visualRect(row).center(), row)
    assert "Open" in [a.text() for a in pane.context_menu.actions()]
    pane.context_menu.close()


def _scan_of_text(path, pages: int):
    """A PDF of page images of printed text (no text layer): each page needs OCR."""
    import pymupdf

    source, scan = pymupdf.open(), pymupdf.open()
    for p in range(pages):
        page = source.new_page(width=595, height=842)
        page.insert_text((72, 110), f"Soil moisture, chapter {p + 1}", fontname="hebo", fontsize=22)
        for line in range(6):
            page.insert_text((72, 170 + 30 * line), "Gravimetric samples calibrate the probes", fontname="helv", fontsize=16)
        image = scan.new_page(width=595, height=842)
        image.insert_image(image.rect, pixmap=page.get_pixmap(dpi=150))
    scan.save(path)
    return path


def test_pages_read_by_text_recognition_move_the_bar_and_are_named(qloop, qtbot, library, tmp_path):
    """A scan's pages are read by text recognition, seconds a page: the bar names that step
    ("text recognition 1 of 3 pages") and moves with each page. It once sat at "4 of 6 · 95 %"
    for 20 s while a 4-page scan was recognised (its pages weighed as little as parsed ones,
    and the total, found larger late, held the bar still)."""
    from haiku.rag.operations import Stage

    note = _titled_pdf(tmp_path / "note.pdf", "A Short Note", "A note on probes.")
    scan = _scan_of_text(tmp_path / "scan.pdf", 3)
    pane = _pane(qtbot, library)
    statuses: list = []
    library.overall_progress.connect(statuses.append)
    at_page: list = []

    def seen(key: str, progress) -> None:
        if progress.stage is Stage.RECOGNISING and key == uri_for(scan):
            at_page.append((progress.done, progress.total, statuses[-1], pane.overall.format()))

    library.queue.progressed.connect(seen)
    library.add_paths([note, scan])
    run_until(qloop, lambda: all((e := library.entry(uri_for(f))) is not None and e.searchable for f in (note, scan)), SLOW)
    run_until(qloop, lambda: statuses[-1].idle, SLOW)

    assert library.entry(uri_for(scan)).recognised_pages == 3
    pages = [(done, total, status, text) for done, total, status, text in at_page if done < total]
    assert len(pages) >= 2
    for done, total, status, text in pages:
        assert status.phase == "reading"
        assert f"text recognition {done} of {total} pages" in status.text()
        assert text in (status.text(), status.text(short=True)) and (f"{done} of {total}" in text or f"{done}/{total}" in text)
    by_page = {done: status.done / status.total for done, _, status, _ in pages}  # (a page may report twice)
    bars = [by_page[done] for done in sorted(by_page)]
    assert len(bars) >= 2 and all(b > a for a, b in zip(bars, bars[1:], strict=False)), bars  # each page moves it
    assert bars[-1] < 1.0


def test_tab_into_the_filtered_table_selects_its_row_so_delete_works_without_a_mouse(
    qloop, qtbot, library, tmp_path
):
    """Tester 16:36: filter 'beaver', Tab to the table, Down / Home / Up: no row showed as
    selected or current and Delete did nothing (Qt made the one row current, unselected and
    invisible; the arrows had nowhere to move). Tab into the table selects its row."""
    files = [_titled_pdf(tmp_path / f"{n}.pdf", f"Notes on {n}", f"{n} grow in orchards.") for n in ("apples", "pears", "plums")]
    _window, pane = _pane_in_window(qtbot, library)
    _ingest(qloop, library, files)
    keys = [uri_for(f) for f in files]

    pane.search.setFocus()
    pane.search.setText("pears")
    assert _shown_keys(pane) == [keys[1]]
    pane.table.setFocus(Qt.FocusReason.TabFocusReason)  # Tab from the filter to the table
    assert pane.selected_keys() == [keys[1]]
    assert pane.delete_button.isEnabled()
    for key in (Qt.Key.Key_Down, Qt.Key.Key_Home, Qt.Key.Key_Up):
        qtbot.keyClick(pane.table, key)
        assert pane.selected_keys() == [keys[1]]
    qtbot.keyClick(pane.table, Qt.Key.Key_Delete)
    dialog = pane.delete_dialog
    assert dialog is not None and dialog.isVisible() and "Notes on pears" in dialog.text()
    dialog.reject()
    qtbot.waitUntil(lambda: pane.delete_dialog is None)

    # the whole list: Tab selects the current row and the arrows move the selection
    pane.search.setText("")
    pane.table.clearSelection()
    pane.search.setFocus()
    pane.table.setFocus(Qt.FocusReason.TabFocusReason)
    assert len(pane.selected_keys()) == 1
    first = pane.selected_keys()[0]
    qtbot.keyClick(pane.table, Qt.Key.Key_Down)
    assert len(pane.selected_keys()) == 1 and pane.selected_keys() != [first]

    # a click in the table is the mouse's own selection: focus by the mouse selects nothing
    pane.table.clearSelection()
    pane.search.setFocus()
    pane.table.setFocus(Qt.FocusReason.MouseFocusReason)
    assert pane.selected_keys() == []


def test_re_ingest_pressed_from_the_keyboard_leaves_the_focus_on_the_rows_not_on_delete(
    qloop, qtbot, library, tmp_path
):
    """Tester 16:45: Re-ingest disabled itself and Qt moved the keyboard focus on to the next
    button, Delete, so the next Space or Enter asked to delete. The focus goes back to the
    rows instead."""
    from PySide6.QtWidgets import QApplication

    paper = _titled_pdf(tmp_path / "tracemonkey.pdf", "Trace-based compilation", "Traces record loops.")
    _window, pane = _pane_in_window(qtbot, library)
    _ingest(qloop, library, [paper])
    pane.select_keys([uri_for(paper)])
    run_until(qloop, pane.reingest_button.isEnabled, SLOW)  # embedded too: nothing running
    pane.reingest_button.setFocus(Qt.FocusReason.TabFocusReason)
    assert pane.reingest_button.hasFocus()
    qtbot.keyClick(pane.reingest_button, Qt.Key.Key_Space)
    run_until(qloop, lambda: not pane.reingest_button.isEnabled(), 30)  # queued: it waits now
    assert QApplication.focusWidget() is pane.table
    assert not pane.delete_button.hasFocus()
    assert pane.selected_keys() == [uri_for(paper)]  # the row it acted on stays selected
    run_until(qloop, lambda: library.entry(uri_for(paper)).searchable and pane.reingest_button.isEnabled(), SLOW)
