"""Evidence tables in the real window (issue 35, the app): a table over a collection fills cell
by cell and shows every cell; a click on a cell opens its citation in the citation panel on the
cited page; a value edited by hand is kept, marked edited, across a relaunch; quitting mid-fill
keeps the cells filled and the next start continues with the rest.

Real parts throughout: generated papers (``tests/extraction/papers.py``: each fact on a known
page) ingested into a LanceDB library in a temp dir, the app's services and main window
(pytest-qt, offscreen), haiku.rag's extraction package. The model is a ``FunctionModel`` that
reads the numbered passages it is given and answers with the fact and its passage's marker, as
a model without tools would; search-only mode needs no model. Nothing waits on time: a held
cell waits on an ``asyncio.Event`` the test sets (or never sets, for the quit).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from extraction.papers import PAGES, Paper, library_config, make_papers
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from qt_helpers import run_until

from app.evidence_window import open_window, quit_window
from haiku.rag.client import HaikuRAG
from haiku_desk.services import create_services
from haiku_desk.services.extraction import ColumnSpec
from haiku_desk.views.evidence_table import DOCUMENT_ROLE, STRIPES
from haiku_desk.views.main_window import MainWindow

SLOW = 180
COLLECTION = "Trials"
PAPERS = 4  # three in the collection, one outside it
COLUMNS = [
    ColumnSpec(id="", name="Sample size", question="How many participants were enrolled?", type="number"),
    ColumnSpec(id="", name="Dataset", question="Which dataset do the measurements come from?"),
]
# what the scripted model looks for in its passages, by a word of the question
FACTS = {
    "participants": re.compile(r"enrolled (\d+) participants"),
    "dataset": re.compile(r"from the (\w+) dataset"),
}


@dataclass(frozen=True)
class Built:
    root: Path
    papers: list[Paper]
    ids: dict[str, str]  # title -> document id
    collection: list[str]  # document ids in the collection, in order


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    """The papers ingested once per module (tests copy the library before changing it)."""
    root = tmp_path_factory.mktemp("evidence")
    papers = make_papers(root, PAPERS)
    db_path = root / "library.lancedb"
    config = library_config(root)

    async def ingest() -> dict[str, str]:
        ids = {}
        async with HaikuRAG(db_path, config, create=True) as client:
            for paper in papers:
                outcome = await client.ingest_file(paper.path)
                assert outcome.status == "ingested" and outcome.document is not None
                ids[paper.title] = outcome.document.id
            await client.create_collection(COLLECTION, [ids[p.title] for p in papers[:3]])
        return ids

    # On a thread of its own: the app's qasync loop is registered as running in app tests.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        ids = pool.submit(asyncio.run, ingest()).result()
    return Built(root, papers, ids, [ids[p.title] for p in papers[:3]])


@pytest.fixture
def library_dir(built, tmp_path) -> Path:
    """A copy of the built library (a test's tables are its own)."""
    target = tmp_path / "library.lancedb"
    shutil.copytree(built.root / "library.lancedb", target)
    return target


@dataclass
class ExtractingModel:
    """A model without tools: it reads the numbered passages of each request and answers with
    the fact the question asks for, cited by its passage's number. ``hold`` holds the request
    with that number (1-based) until ``gate`` is set."""

    hold: int | None = None
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    questions: list[str] = field(default_factory=list)

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self._respond, model_name="extracting")

    async def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = _last_prompt(messages)
        passages_part, _, question = prompt.rpartition("Question:")
        self.questions.append(question.strip())
        if self.hold is not None and len(self.questions) == self.hold:
            await self.gate.wait()
        pattern = next((p for word, p in FACTS.items() if word in question), None)
        for number, passage in _passages(passages_part):
            text = " ".join(passage.replace(">", " ").split())
            if "blinded" in question and "blind" in text:
                # sure where assessors were blinded; unsure (no yes or no) where they were not
                answer = "yes" if "were blinded" in text else "perhaps"
                return ModelResponse(parts=[TextPart(f"{answer} [{number}]")])
            found = pattern.search(text) if pattern else None
            if found:
                return ModelResponse(parts=[TextPart(f"{found.group(1)} [{number}]")])
        return ModelResponse(parts=[TextPart("I did not find this in the documents.")])


def _last_prompt(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _passages(text: str) -> list[tuple[int, str]]:
    pieces = re.split(r"^\[(\d+)\] ", text, flags=re.M)
    return [(int(pieces[i]), pieces[i + 1]) for i in range(1, len(pieces) - 1, 2)]


def wait_filled(qloop, window: MainWindow) -> None:
    """Until the running fill has ended (its ``ended`` signal, not a time)."""
    evidence = window.services.evidence
    assert evidence is not None
    run_until(qloop, lambda: not evidence.busy, SLOW)


def shown(window: MainWindow, document_id: str, column_id: str) -> str:
    pane = window.evidence_pane
    assert pane is not None
    return str(pane.proxy_index(document_id, column_id).data())


def create(qloop, window: MainWindow, name: str = "Review"):
    evidence = window.services.evidence
    assert evidence is not None
    table = qloop.run_until_complete(evidence.create_table(name, COLUMNS, collection=COLLECTION))
    assert table is not None
    return table


def test_a_table_over_a_collection_fills_every_cell_and_shows_it(qtbot, qapp, qloop, built, library_dir):
    window = open_window(qtbot, qapp, qloop, library_dir, built.root)
    pane = window.evidence_pane
    assert pane is not None and window.centre.currentWidget() is pane
    started: list[object] = []
    window.services.evidence.fill_started.connect(started.append)
    progress: list[tuple[int, int]] = []
    window.services.evidence.fill_progressed.connect(lambda done, total: progress.append((done, total)))

    table = create(qloop, window)
    assert started, "creating a table starts its fill"
    wait_filled(qloop, window)

    # the collection's documents are the rows (the fourth paper is not), in its order
    assert pane.model.rowCount() == 3
    assert [pane.model.document_at(r) for r in range(3)] == built.collection
    assert progress[-1] == (6, 6)
    size, dataset = (c.id for c in table.columns)
    for paper in built.papers[:3]:
        document_id = built.ids[paper.title]
        cell = window.services.evidence.current.cell(document_id, size)
        assert cell is not None and cell.mode == "search-only"
        assert all(c.document_id == document_id for c in cell.citations)  # its own document only
        # search-only: the best passage, marked so in words, with its page
        assert shown(window, document_id, size).startswith("¶ ")
        assert str(paper.sample_size) in cell.value and f"(p. {PAGES['sample_size']})" in shown(window, document_id, size)
        assert paper.dataset in window.services.evidence.current.cell(document_id, dataset).value
    assert "search" in pane.mode_label.text().lower() or "no chat model" in pane.mode_label.text().lower()

    # sort by a column, filter by text
    pane.table.sortByColumn(0, pane.table.horizontalHeader().sortIndicatorOrder())
    pane.filter.setText(built.papers[1].dataset)
    assert pane.proxy.rowCount() == 1
    assert pane.proxy.index(0, 0).data() == window.services.evidence.document_title(built.collection[1])
    pane.filter.clear()
    assert pane.proxy.rowCount() == 3

    # F6 reaches the table (its tab is shown in the chat's place)
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    window.activateWindow()
    qtbot.waitUntil(lambda: window.isActiveWindow())
    window.library_pane.table.setFocus()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_F6)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is pane.table)

    # a document deleted from the library: its row stays, after the others, marked removed
    gone = built.collection[1]
    entry = window.services.library.entry_for_document(gone)
    window.services.library.delete([entry.key])
    run_until(qloop, lambda: window.services.library.entry_for_document(gone) is None, SLOW)
    run_until(qloop, lambda: gone not in evidence_rows(window), SLOW)
    assert pane.model.rowCount() == 3 and pane.model.document_at(2) == gone
    assert pane.model.is_removed(gone) and str(pane.model.index(2, 0).data()).endswith("removed from the library")
    quit_window(qloop, window)


def evidence_rows(window: MainWindow) -> list[str]:
    current = window.services.evidence.current
    return list(current.rows) if current is not None else []


def test_a_scripted_model_fills_values_and_a_click_opens_the_cited_page(qtbot, qapp, qloop, built, library_dir):
    from PySide6.QtCore import Qt

    model = ExtractingModel()
    window = open_window(qtbot, qapp, qloop, library_dir, built.root, model)
    pane = window.evidence_pane
    table = create(qloop, window)
    wait_filled(qloop, window)
    evidence = window.services.evidence
    blinded = evidence.add_column(
        {"name": "Blinded", "question": "Were the assessors blinded?", "type": "yes-no"}
    )
    funding = evidence.add_column({"name": "Funding", "question": "Who funded the study?"})
    qloop.run_until_complete(funding)
    wait_filled(qloop, window)  # added columns fill at once
    assert qloop.run_until_complete(blinded) is not None
    current = evidence.current
    assert [c.name for c in current.columns] == ["Sample size", "Dataset", "Blinded", "Funding"]
    assert current.filled == current.total == 12
    blinded_id, funding_id = current.columns[2].id, current.columns[3].id

    # low confidence and not found: a colour AND words (text cue, tooltip, accessible text)
    unsure = built.ids[built.papers[1].title]  # its assessors were not blinded: "perhaps"
    sure = built.ids[built.papers[0].title]
    assert current.cell(unsure, blinded_id).status == "low_confidence"
    assert current.cell(sure, blinded_id).status == "grounded"
    assert shown(window, unsure, blinded_id).startswith("⚠ ")
    assert shown(window, sure, blinded_id).startswith("yes")
    low = pane.proxy_index(unsure, blinded_id)
    assert low.data(Qt.ItemDataRole.AccessibleTextRole).startswith("Low confidence")
    assert "Low confidence" in low.data(Qt.ItemDataRole.ToolTipRole)
    missing = pane.proxy_index(sure, funding_id)
    assert current.cell(sure, funding_id).status == "not_found"
    assert shown(window, sure, funding_id) == "∅ Not found"
    assert "Not found in this document" in missing.data(Qt.ItemDataRole.AccessibleDescriptionRole)
    backgrounds = {
        name: index.data(Qt.ItemDataRole.BackgroundRole)
        for name, index in (("low", low), ("missing", missing), ("plain", pane.proxy_index(sure, blinded_id)))
    }
    assert backgrounds["plain"] is None
    assert backgrounds["low"].color() != backgrounds["missing"].color()
    # and painted so on screen (the app's stylesheet would hide a plain item background)
    for index, status in ((low, "low_confidence"), (missing, "not_found")):
        pane.table.scrollTo(index)
        rect = pane.table.visualRect(index)
        image = pane.table.viewport().grab().toImage()
        assert image.pixelColor(rect.left() + 1, rect.center().y()).name() == STRIPES[status]
    # the status filter keeps the rows with such a cell
    pane.status_filter.setCurrentIndex(pane.status_filter.findData("low_confidence"))
    assert pane.proxy.rowCount() == 1 and pane.proxy.index(0, 0).data(DOCUMENT_ROLE) == unsure
    pane.status_filter.setCurrentIndex(pane.status_filter.findData("not_found"))
    assert pane.proxy.rowCount() == 3
    pane.status_filter.setCurrentIndex(0)
    size = table.columns[0].id
    paper = built.papers[2]
    document_id = built.ids[paper.title]
    cell = window.services.evidence.current.cell(document_id, size)
    assert cell is not None and cell.value.startswith(str(paper.sample_size)), cell
    assert shown(window, document_id, size).startswith(str(paper.sample_size))

    index = pane.proxy_index(document_id, size)
    pane.table.scrollTo(index)
    panel = window.citation_panel
    with qtbot.waitSignal(panel.page_shown, timeout=SLOW * 1000) as shown_page:
        qtbot.mouseClick(pane.table.viewport(), qt_left(), pos=pane.table.visualRect(index).center())
    assert panel.citation is cell.citations[0]
    assert panel.citation.document_id == document_id
    assert shown_page.args == [PAGES["sample_size"]] and panel.page == PAGES["sample_size"]
    assert panel.citation.boxes, "the cited passage is highlighted on its page"
    quit_window(qloop, window)


def qt_left():
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_a_value_edited_by_hand_is_kept_marked_edited_after_a_relaunch(qtbot, qapp, qloop, built, library_dir):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QLineEdit

    window = open_window(qtbot, qapp, qloop, library_dir, built.root)
    table = create(qloop, window)
    wait_filled(qloop, window)
    pane = window.evidence_pane
    size = table.columns[0].id
    document_id = built.collection[0]

    index = pane.proxy_index(document_id, size)
    pane.table.setFocus()
    pane.table.setCurrentIndex(index)
    qtbot.keyClick(pane.table, Qt.Key.Key_F2)  # edit, as the user does
    editor = QApplication.focusWidget()
    assert isinstance(editor, QLineEdit)
    editor.selectAll()
    qtbot.keyClicks(editor, "118 (after dropouts)")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qloop.run_until_complete(window.services.evidence.wait_writes())
    assert shown(window, document_id, size).startswith("✎ 118 (after dropouts)")
    quit_window(qloop, window)

    again = open_window(qtbot, qapp, qloop, library_dir, built.root)
    pane = again.evidence_pane
    current = again.services.evidence.current
    assert current is not None and current.id == table.id, "the open table comes back"
    cell = current.cell(document_id, size)
    assert cell is not None and cell.status == "edited" and cell.value == "118 (after dropouts)"
    assert cell.edited_from and str(built.papers[0].sample_size) in cell.edited_from
    assert shown(again, document_id, size).startswith("✎ 118 (after dropouts)")
    described = pane.proxy_index(document_id, size).data(Qt.ItemDataRole.AccessibleDescriptionRole)
    assert "Edited by hand" in described
    assert pane.proxy_index(document_id, size).data(Qt.ItemDataRole.BackgroundRole) is not None
    quit_window(qloop, again)


def test_quitting_mid_fill_keeps_the_cells_and_the_next_start_fills_the_rest(qtbot, qapp, qloop, built, library_dir):
    held = ExtractingModel(hold=3)  # the third cell's answer never comes: Quit arrives first
    window = open_window(qtbot, qapp, qloop, library_dir, built.root, held)
    evidence = window.services.evidence
    fills: list = []
    evidence.fill_started.connect(fills.append)
    table = create(qloop, window)
    run_until(qloop, lambda: len(held.questions) == 3, SLOW)
    assert evidence.busy and evidence.current.filled == 2
    before = dict(evidence.current.cells)
    outcome: list[str] = []
    fills[0].cancelled.connect(lambda: outcome.append("cancelled"))
    fills[0].failed.connect(lambda exc: outcome.append(f"failed: {exc}"))
    quit_window(qloop, window)
    run_until(qloop, lambda: bool(outcome), SLOW)  # Quit stops the fill (its task ends after)
    assert outcome == ["cancelled"] and fills[0].halted
    assert not evidence.busy

    model = ExtractingModel(hold=1)  # held at its first cell: the window shows the fill going on
    again = open_window(qtbot, qapp, qloop, library_dir, built.root, model)
    evidence = again.services.evidence
    assert evidence.current is not None and evidence.current.id == table.id
    assert evidence.busy, "the fill stopped by Quit continues at the start"
    run_until(qloop, lambda: len(model.questions) == 1, SLOW)
    pane = again.evidence_pane
    # the counter keeps the table's total: the 2 cells filled before the quit are counted
    assert pane.progress.isVisibleTo(pane) and pane.progress.text() == "2 / 6 cells"
    assert (pane.progress.value(), pane.progress.maximum()) == (2, 6)
    assert pane.stop_button.isEnabled() and not pane.fill_button.isEnabled()
    model.gate.set()
    wait_filled(qloop, again)
    assert not pane.progress.isVisibleTo(pane) and not pane.stop_button.isEnabled()
    current = evidence.current
    assert current.filled == current.total == 6
    assert len(model.questions) == 4, "only the cells not filled before the quit are answered"
    for key, cell in before.items():
        assert current.cells[key] == cell
    for document_id in current.rows:
        for column in current.columns:
            assert shown(again, document_id, column.id)
    quit_window(qloop, again)


def test_a_table_of_the_ticked_documents_with_columns_added_edited_and_removed_then_exported(
    qtbot, qapp, qloop, built, library_dir, tmp_path, monkeypatch
):
    """Everything from the pane's own dialogs and menus, as a user does it."""
    import csv

    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDialogButtonBox

    window = open_window(qtbot, qapp, qloop, library_dir, built.root)
    pane = window.evidence_pane
    evidence = window.services.evidence
    ticked = [built.ids[built.papers[3].title], built.ids[built.papers[0].title]]
    window.library_pane.tick(ticked)  # the fourth paper is in no collection

    dialog = pane.new_table()  # some ticked in the library: the table's list starts from them
    assert dialog.documents.use_ticked.isChecked() and "(2 chosen)" in dialog.documents.use_ticked.text()
    dialog.reject()
    window.library_pane.tick(None)  # everything ticked (what the chat searches): a collection first
    dialog = pane.new_table()
    chooser = dialog.documents
    assert chooser.use_collection.isChecked() and "Trials (3)" in chooser.collection.currentText()
    # the table's documents chosen in its own list: the library's ticks (the chat's scope) stay
    for i in range(chooser.documents.count()):
        item = chooser.documents.item(i)
        wanted = item.data(Qt.ItemDataRole.UserRole) in ticked
        item.setCheckState(Qt.CheckState.Checked if wanted else Qt.CheckState.Unchecked)
    assert chooser.use_ticked.isChecked() and "(2 chosen)" in chooser.use_ticked.text()
    dialog.name.setText("Ticked")
    dialog.columns.setPlainText("Sample size\n\nDataset\n")
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    run_until(qloop, lambda: evidence.current is not None and evidence.current.name == "Ticked", SLOW)
    wait_filled(qloop, window)
    table = evidence.current
    assert sorted(table.rows) == sorted(ticked) and [c.name for c in table.columns] == ["Sample size", "Dataset"]
    assert window.library_pane.scope() is None and window.services.chat.scope() is None
    assert table.filled == table.total == 4

    # add a column (refused without categories, then accepted), edit its question, remove one
    adding = pane.edit_column(None)
    adding.name.setText("Design")
    adding.type.setCurrentIndex(adding.type.findData("category"))
    adding.categories.setText("cohort")
    adding.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    assert adding.isVisible() and "two categories" in adding.error.text()
    adding.categories.setText("cohort, randomised, survey")
    adding.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    run_until(qloop, lambda: len(evidence.current.columns) == 3, SLOW)
    qloop.run_until_complete(evidence.wait_writes())
    wait_filled(qloop, window)
    design = evidence.current.columns[2]
    assert design.type == "category" and design.categories == ("cohort", "randomised", "survey")
    assert evidence.current.filled == 6

    editing = pane.edit_column(design)
    assert editing.name.text() == "Design" and editing.categories.text() == "cohort, randomised, survey"
    editing.question.setPlainText("Which study design was used?")
    editing.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    run_until(qloop, lambda: evidence.current.column(design.id).question == "Which study design was used?", SLOW)
    qloop.run_until_complete(evidence.wait_writes())
    wait_filled(qloop, window)  # its cells were asked again
    assert evidence.current.filled == evidence.current.total == 6

    dataset = evidence.current.columns[1]
    qloop.run_until_complete(evidence.remove_column(dataset.id))
    assert [c.name for c in evidence.current.columns] == ["Sample size", "Design"]
    assert pane.model.columnCount() == 3

    # Export › CSV…: the save dialog (the platform's, answered here) opens in the home folder,
    # then where the last export went
    from haiku_desk.views import evidence_table

    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path / "home"))
    (tmp_path / "home").mkdir()
    exports = tmp_path / "exports"
    exports.mkdir()
    target = exports / "ticked.csv"
    offered: list[str] = []

    def save_as(parent, caption, suggested, filter):  # noqa: A002 - Qt's argument names
        offered.append(suggested)
        return str(exports / "ticked"), filter  # the suffix is added

    monkeypatch.setattr(evidence_table.QFileDialog, "getSaveFileName", save_as)
    exported: list[object] = []
    evidence.notifications.posted.connect(exported.append)
    pane.export_actions["csv"].trigger()
    run_until(qloop, lambda: target.is_file() and bool(exported), SLOW)
    assert offered == [str(tmp_path / "home" / "Ticked.csv")]
    pane.export_actions["markdown"].trigger()
    assert offered[1] == str(exports / "Ticked.md")
    run_until(qloop, lambda: (exports / "ticked.md").is_file(), SLOW)
    with target.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header = rows[0]
    assert "Sample size" in header and "Sample size — quote" in header and "Dataset" not in header
    assert len(rows) == 3

    # Table › Rename… and Table › Documents…, through their dialogs
    pane.rename_action.trigger()
    pane.dialog.setTextValue("Two trials")
    pane.dialog.accept()
    run_until(qloop, lambda: evidence.current.name == "Two trials", SLOW)
    pane.documents_action.trigger()
    chooser = pane.dialog.chooser  # the list starts from the table's rows
    for i in range(chooser.documents.count()):
        item = chooser.documents.item(i)
        keep = item.data(Qt.ItemDataRole.UserRole) == ticked[0]
        item.setCheckState(Qt.CheckState.Checked if keep else Qt.CheckState.Unchecked)
    pane.dialog.accept()
    run_until(qloop, lambda: list(evidence.current.rows) == [ticked[0]], SLOW)
    quit_window(qloop, window)


def test_stop_keeps_the_cells_filled_and_fill_answers_only_the_rest(qtbot, qapp, qloop, built, library_dir):
    from PySide6.QtCore import Qt

    held = ExtractingModel(hold=2)
    window = open_window(qtbot, qapp, qloop, library_dir, built.root, held)
    pane = window.evidence_pane
    evidence = window.services.evidence
    create(qloop, window)
    run_until(qloop, lambda: len(held.questions) == 2, SLOW)
    assert evidence.current.filled == 1 and pane.stop_button.isEnabled()
    qtbot.mouseClick(pane.stop_button, Qt.MouseButton.LeftButton)
    run_until(qloop, lambda: not evidence.busy, SLOW)
    assert evidence.current.filled == 1
    assert evidence.filling_to_resume() == [], "a fill the user stopped does not restart by itself"
    assert pane.fill_button.isEnabled() and not pane.stop_button.isEnabled()

    held.hold = 3  # the fill's first cell: held, so the counter can be read
    progress: list[tuple[int, int]] = []
    evidence.fill_progressed.connect(lambda done, total: progress.append((done, total)))
    qtbot.mouseClick(pane.fill_button, Qt.MouseButton.LeftButton)
    assert evidence.busy
    run_until(qloop, lambda: len(held.questions) == 3, SLOW)
    assert pane.progress.text() == "1 / 6 cells", "the counter counts the cell filled before Stop"
    held.gate.set()
    wait_filled(qloop, window)
    assert progress[0] == (1, 6) and progress[-1] == (6, 6)
    assert evidence.current.filled == evidence.current.total == 6
    assert len(held.questions) == 2 + 5, "the cell filled before Stop is not asked again"
    assert not pane.fill_button.isEnabled()
    quit_window(qloop, window)


def test_an_authors_column_shows_the_record_and_a_cell_not_found_says_why(qtbot, qapp, qloop, built, library_dir):
    """Search-only: "Authors" comes from each row's bibliographic record, marked as such and
    cited on the first page that names them; "Funding", which no paper names, is not found and
    says so in the cell and its tooltip (absent, not merely unmatched)."""
    from haiku_desk.views.evidence_table import LEGEND, TOOLTIP_CHARS, cell_description

    window = open_window(qtbot, qapp, qloop, library_dir, built.root)
    pane = window.evidence_pane
    evidence = window.services.evidence
    table = qloop.run_until_complete(
        evidence.create_table("Records", [ColumnSpec(id="", name="Authors"), ColumnSpec(id="", name="Funding")],
                              collection=COLLECTION)
    )  # fmt: skip
    wait_filled(qloop, window)
    authors, funding = (c.id for c in table.columns)
    assert "† " in LEGEND and "record" in LEGEND and pane.legend.text() == LEGEND
    for paper in built.papers[:3]:
        document_id = built.ids[paper.title]
        cell = evidence.current.cell(document_id, authors)
        assert cell is not None and cell.mode == "record" and cell.status == "grounded"
        assert shown(window, document_id, authors) == f"† {', '.join(paper.authors)}  (p. 1)"
        assert all(c.document_id == document_id for c in cell.citations) and cell.pages == (1,)
        tip = cell_description(cell, evidence.current.column(authors))
        assert "bibliographic record" in tip and "first page" in tip
        missing = evidence.current.cell(document_id, funding)
        assert missing is not None and missing.status == "not_found"
        assert shown(window, document_id, funding) == "∅ Not named in it"
        assert "never names “funding”" in cell_description(missing, evidence.current.column(funding))
        # the tooltip is wrapped at words (a plain Qt tooltip runs off the screen otherwise)
        from PySide6.QtCore import Qt

        tip_lines = str(pane.proxy_index(document_id, authors).data(Qt.ItemDataRole.ToolTipRole)).split("\n")
        assert len(tip_lines) > 2 and all(len(line) <= TOOLTIP_CHARS for line in tip_lines)
    quit_window(qloop, window)


def test_while_the_library_opens_the_tab_says_its_tables_are_loading(qtbot, qapp, qloop, built, library_dir):
    """Before the store has listed the tables, the tab says so and New table… waits (no "No
    table yet" inviting a duplicate); once listed, the table open at the last quit is shown."""
    first = open_window(qtbot, qapp, qloop, library_dir, built.root)
    create(qloop, first)
    wait_filled(qloop, first)
    quit_window(qloop, first)

    qapp.setQuitOnLastWindowClosed(False)
    services = create_services(library_dir, library_config(built.root))
    window = MainWindow(services)  # the window is up before the library opens, as at a start
    qtbot.addWidget(window)
    window.quit_flow.manage_shutdown = True
    window.show()
    window.show_evidence_table()
    pane = window.evidence_pane
    assert pane is not None
    assert "Loading" in pane.empty_hint.text() and pane.empty_hint.isVisibleTo(pane)
    assert "Loading" in pane.tables.placeholderText()
    assert not pane.new_button.isEnabled()

    opened: list[bool] = []
    services.library.opened.connect(lambda: opened.append(True))
    services.library.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    qloop.run_until_complete(services.evidence.wait_started())
    assert pane.new_button.isEnabled() and pane.table.isVisibleTo(pane)
    assert not pane.empty_hint.isVisibleTo(pane) and pane.tables.currentText().startswith("Review")
    assert "Loading" not in pane.tables.placeholderText()
    quit_window(qloop, window)


def test_a_long_column_name_is_elided_at_its_end_and_whole_in_its_tooltip(qtbot, qapp, qloop, built, library_dir):
    from PySide6.QtCore import Qt

    window = open_window(qtbot, qapp, qloop, library_dir, built.root)
    pane = window.evidence_pane
    long_name = "Number of documents cited in the related work"
    qloop.run_until_complete(
        window.services.evidence.create_table("Wide", [ColumnSpec(id="", name=long_name, question="How many?")],
                                              collection=COLLECTION)
    )  # fmt: skip
    wait_filled(qloop, window)
    header = pane.table.horizontalHeader()
    assert header.textElideMode() == Qt.TextElideMode.ElideRight
    tip = pane.model.headerData(1, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith(f"{long_name}: How many?")
    quit_window(qloop, window)


def test_the_banner_of_a_fill_stopped_by_the_model_goes_once_a_fill_goes_through(
    qtbot, qapp, qloop, built, library_dir
):
    """Tester 17:17: the model server stopped, the fill stopped with a red banner; the server
    back, Fill filled every cell, but the banner stayed. One banner per problem, withdrawn when
    a fill goes through."""
    from PySide6.QtCore import Qt

    model = ExtractingModel()
    down = {"yes": True}
    working = model._respond

    async def respond(messages, info):
        if down["yes"]:
            raise RuntimeError("cannot reach the chat model extracting")
        return await working(messages, info)

    model._respond = respond  # type: ignore[method-assign]
    window = open_window(qtbot, qapp, qloop, library_dir, built.root, model)
    pane = window.evidence_pane
    evidence = window.services.evidence
    notifications = window.services.notifications
    create(qloop, window)
    wait_filled(qloop, window)
    assert evidence.current.filled < evidence.current.total
    assert notifications.is_live("evidence-fill-failed")
    shown_banners = [w for w in window.notification_area.visible_notices if "Filling the evidence table stopped" in w.notice.message]
    assert len(shown_banners) == 1

    down["yes"] = False  # the model is back
    qtbot.mouseClick(pane.fill_button, Qt.MouseButton.LeftButton)
    wait_filled(qloop, window)
    assert evidence.current.filled == evidence.current.total
    assert not notifications.is_live("evidence-fill-failed")
    assert not [w for w in window.notification_area.visible_notices if "Filling the evidence table stopped" in w.notice.message]
    quit_window(qloop, window)


def test_a_double_click_on_a_cell_edits_it_and_a_click_opens_its_page(qtbot, qapp, qloop, built, library_dir):
    """Tester 16:58: a double-click on a cell (the legend's way to edit) opened the cell's
    citation at its first click; the reader took reader mode's room, the table moved under the
    pointer and the edit never began. The click's citation waits for the double-click
    interval: a double-click edits, a click opens the page."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QAbstractItemView, QApplication

    window = open_window(qtbot, qapp, qloop, library_dir, built.root, ExtractingModel())
    pane = window.evidence_pane
    create(qloop, window)
    wait_filled(qloop, window)
    document_id, column = built.collection[0], window.services.evidence.current.columns[0].id
    index = pane.proxy_index(document_id, column)
    pane.table.scrollTo(index)
    panel = window.citation_panel
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    where = pane.table.visualRect(index).center()

    doubled: list[object] = []
    pane.table.doubleClicked.connect(doubled.append)
    qtbot.mouseClick(pane.table.viewport(), qt_left(), pos=where)  # a double-click: click, then
    qtbot.mouseDClick(pane.table.viewport(), qt_left(), pos=where)  # the second press
    assert doubled, "no double-click reached the table"
    assert pane.table.state() == QAbstractItemView.State.EditingState  # the edit began
    qtbot.wait(2 * qapp.doubleClickInterval())  # the first click's citation stays unopened
    assert panel.citation is None and not shown and not window.reader_mode.active
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Escape)  # the edit given up
    qtbot.waitUntil(lambda: pane.table.state() != QAbstractItemView.State.EditingState)

    with qtbot.waitSignal(panel.page_shown, timeout=SLOW * 1000):
        qtbot.mouseClick(pane.table.viewport(), qt_left(), pos=where)
    assert panel.citation is not None and panel.citation.document_id == document_id
    quit_window(qloop, window)
