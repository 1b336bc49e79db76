"""The chat pane: conversations, streamed answers with citation chips and sources, toggles.

It talks only to ``ChatService`` (and reads the model's name from ``ModelsService``); clicking a
chip or a source emits ``citation_activated`` with the haiku.rag ``Citation``, which the main
window shows in its citation panel.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QKeySequence, QTextOption
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTextBrowser,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.citations import citation_location, citation_place, citation_title, snippet_source
from haiku_desk.services.conversations import ConversationRecord, ToolStep, Turn
from haiku_desk.views.analysis_panel import AnalysisPanel
from haiku_desk.views.widgets import compact_button

if TYPE_CHECKING:
    from haiku.rag.capabilities.state import Citation
    from haiku_desk.bridge import Operation
    from haiku_desk.services import AppServices

MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
CONVERSATIONS_WIDTH = 165  # the list's default width: titles end in "…", the chat gets the room
CONVERSATIONS_MIN_WIDTH = 150
TOOLBAR_SLACK = 8  # a little room beyond the toolbar's own hint, against rounding
BADGES = {
    "grounded": ("Grounded", "#2e7d32", "The answer declared evidence from your library."),
    "ungrounded": (
        "Ungrounded",
        "#b26a00",
        "The answer declared that nothing in your library supports it.",
    ),
    "missing": (
        "No sources declared",
        "#c62828",
        "The answer declared no evidence: treat it with suspicion.",
    ),
}
CITE_SCHEME = "cite"


def linked_markers(markdown: str) -> str:
    """``[2]`` / ``[1, 3]`` become links the answer view turns into citation activations."""

    def link(match: re.Match[str]) -> str:
        numbers = [n.strip() for n in match.group(1).split(",")]
        return " ".join(f"[[{n}]]({CITE_SCHEME}:{n})" for n in numbers)

    return MARKER.sub(link, markdown)


class SourceLabel(QLabel):
    """One source under an answer: the title as a link, elided to one line (the full title in
    the tooltip), the heading path and pages beneath it, then a snippet of the cited text."""

    def __init__(self, citation: Citation, snippet: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.citation = citation
        self.snippet = snippet
        self.title = citation_title(citation)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setToolTip(citation_place(citation))
        self.setAccessibleName(f"Source {citation.index}: {citation_place(citation)}")
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.LinksAccessibleByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByKeyboard
        )
        self._render()

    def shown_title(self) -> str:
        """The title as shown: cut to what fits on one line."""
        prefix = f"[{self.citation.index}] "
        metrics = self.fontMetrics()
        # Before the first layout the label has no real width yet: show the title whole.
        width = self.contentsRect().width() if self.isVisible() else 10_000
        room = max(40, width - metrics.horizontalAdvance(prefix) - metrics.averageCharWidth())
        return metrics.elidedText(self.title, Qt.TextElideMode.ElideRight, room)

    def _render(self) -> None:
        location = citation_location(self.citation)
        lines = [
            f"<a href='{CITE_SCHEME}:{self.citation.index}'>[{self.citation.index}] "
            f"{html.escape(self.shown_title())}</a>"
        ]
        if location:
            lines.append(f"<span style='color: gray'>{html.escape(location)}</span>")
        if self.snippet:
            lines.append(f"<span style='color: gray'><i>{html.escape(self.snippet)}</i></span>")
        text = "<br>".join(lines)
        if text != self.text():  # eliding depends only on the width: no resize loop
            self.setText(text)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._render()

    def showEvent(self, event: Any) -> None:  # noqa: N802
        super().showEvent(event)
        self._render()


class AnswerView(QTextBrowser):
    """Markdown that grows with its content instead of scrolling on its own."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.document().contentsChanged.connect(self._fit)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        self.document().setTextWidth(self.viewport().width())
        height = int(self.document().size().height()) + 6
        if height != self.height():
            self.setFixedHeight(height)


class TurnWidget(QFrame):
    """One question with its steps, streamed answer, citation chips, sources and badge."""

    citation_activated = Signal(object)

    def __init__(self, turn: Turn, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.turn = turn
        self.text = turn.answer
        self.chips: list[QToolButton] = []
        self.source_labels: list[SourceLabel] = []
        self.setFrameShape(QFrame.Shape.NoFrame)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 8, 4, 8)
        self.question = QLabel(f"<b>{html.escape(turn.question)}</b>", self)
        self.question.setWordWrap(True)
        self.question.setAccessibleName("Question")
        self.question.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.steps = QLabel(self)
        self.steps.setAccessibleName("Tool steps")
        self.steps.setWordWrap(True)
        self.steps.setStyleSheet("color: palette(placeholder-text); font-size: small;")
        self.answer = AnswerView(self)
        self.answer.setAccessibleName("Answer")
        self.answer.anchorClicked.connect(self._anchor)
        self.chip_row = QHBoxLayout()
        self.chip_row.setSpacing(4)
        self.badge = QLabel(self)
        self.badge.setAccessibleName("Grounding")
        self.status = QLabel(self)
        self.status.setAccessibleName("Answer status")
        self.chip_row.addWidget(self.badge)
        self.chip_row.addWidget(self.status)
        self.chip_row.addStretch(1)
        self.sources = QVBoxLayout()
        self.sources.setSpacing(2)
        layout.addWidget(self.question)
        layout.addWidget(self.steps)
        layout.addWidget(self.answer)
        layout.addLayout(self.chip_row)
        layout.addLayout(self.sources)
        self.badge.hide()
        self.status.hide()
        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.setInterval(0)  # coalesce the deltas of one event-loop pass
        self._render_timer.timeout.connect(self._render)
        for step in turn.steps:
            self.add_step(step, render=False)
        self._render_steps()
        if turn.answer:
            self.finish(turn)

    # --- streaming ------------------------------------------------------------------------

    def append(self, text: str) -> None:
        self.text += text
        self._render_timer.start()

    def reset_text(self) -> None:
        self.text = ""
        self._render_timer.start()

    def add_step(self, step: ToolStep, render: bool = True) -> None:
        if step not in self.turn.steps:
            self.turn.steps.append(step)
        if render:
            self._render_steps()

    def _render_steps(self) -> None:
        labels = [html.escape(s.label) for s in self.turn.steps]
        self.steps.setText(" · ".join(labels))
        self.steps.setVisible(bool(labels))

    def _render(self) -> None:
        self.answer.setMarkdown(linked_markers(self.text))

    def mark(self, status: str) -> None:
        self.status.setText(f"<i>{html.escape(status)}</i>")
        self.status.show()

    # --- the finished answer --------------------------------------------------------------

    def finish(self, turn: Turn) -> None:
        self.turn = turn
        self.text = turn.answer
        self._render_timer.stop()
        self._render()
        self._render_steps()
        self.status.hide()
        label, colour, tip = BADGES.get(turn.grounding, BADGES["missing"])
        self.badge.setText(
            f"<span style='color:{colour}; font-weight:600'>● {html.escape(label)}</span>"
        )
        self.badge.setToolTip(tip)
        self.badge.setAccessibleDescription(tip)
        self.badge.show()
        for chip in self.chips:
            chip.deleteLater()
        self.chips = []
        for position, citation in enumerate(turn.citations):
            chip = QToolButton(self)
            chip.setText(str(citation.index))
            chip.setAutoRaise(False)
            chip.setToolTip(citation_place(citation))
            chip.setAccessibleName(f"Citation {citation.index}: {citation_place(citation)}")
            chip.clicked.connect(lambda _=False, c=citation: self.citation_activated.emit(c))
            self.chip_row.insertWidget(position, chip)
            self.chips.append(chip)
        for label in self.source_labels:
            label.deleteLater()
        self.source_labels = []
        for citation in turn.citations:
            self._add_source(citation)

    def _add_source(self, citation: Citation) -> None:
        from haiku_desk.services.chat import citing_text, excerpt

        # Centred on what the answer says with this citation, else on the whole exchange
        turn = self.turn
        query = citing_text(turn.answer, citation.index) or f"{turn.question} {turn.answer}"
        label = SourceLabel(citation, excerpt(snippet_source(citation), query, 220), self)
        label.linkActivated.connect(self._link)
        self.sources.addWidget(label)
        self.source_labels.append(label)

    def citation(self, index: int) -> Citation | None:
        return next((c for c in self.turn.citations if c.index == index), None)

    def _link(self, link: str) -> None:
        self._activate(link)

    def _anchor(self, url: QUrl) -> None:
        self._activate(url.toString())

    def _activate(self, link: str) -> None:
        scheme, _, number = link.partition(":")
        if scheme == CITE_SCHEME and number.isdigit():
            citation = self.citation(int(number))
            if citation is not None:
                self.citation_activated.emit(citation)


class _InputKeys(QObject):
    """Ctrl+Enter in the input box sends (Enter alone adds a line)."""

    def __init__(self, pane: ChatPane) -> None:
        super().__init__(pane)
        self.pane = pane

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.KeyPress:
            key, mods = event.key(), event.modifiers()  # type: ignore[attr-defined]
            if (
                key in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and mods & Qt.KeyboardModifier.ControlModifier
            ):
                self.pane.send()
                return True
        return False


class ChatPane(QWidget):
    """Conversations on the left; the current conversation, its toolbar and the input box."""

    citation_activated = Signal(object)  # haiku.rag Citation

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.services = services
        self.chat = services.chat
        self.models = services.models
        self.turn_widgets: list[TurnWidget] = []
        self._live: TurnWidget | None = None
        self._live_id: str | None = None
        self.export_operation: Operation | None = None
        self.setAccessibleName("Chat")
        self._build()
        self._connect()
        self.refresh_conversations()
        self._show_record(self.chat.current)
        self._set_busy(self.chat.busy)
        self._update_model_label()
        self._update_scope(len(self.chat.scope_document_ids()))

    # --- building -------------------------------------------------------------------------

    def _build(self) -> None:
        outer = QHBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        outer.addWidget(self.splitter)

        sidebar = QWidget(self)
        side = QVBoxLayout(sidebar)
        side.setContentsMargins(4, 4, 4, 4)
        self.conversation_search = QLineEdit(sidebar)
        self.conversation_search.setPlaceholderText("Search conversations")
        self.conversation_search.setAccessibleName("Search conversations")
        self.conversation_search.setClearButtonEnabled(True)
        self.conversation_list = QListWidget(sidebar)
        self.conversation_list.setAccessibleName("Conversations")
        self.conversation_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        # Long titles end in "…" (the full title is the tooltip) instead of scrolling sideways.
        self.conversation_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.conversation_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.conversation_list.setWordWrap(False)
        buttons = QHBoxLayout()
        buttons.setSpacing(4)
        self.new_button = compact_button(QPushButton("New", sidebar))
        self.new_button.setAccessibleName("New chat")
        self.rename_button = compact_button(QPushButton("Rename", sidebar))
        self.rename_button.setAccessibleName("Rename chat")
        self.delete_button = compact_button(QPushButton("Delete", sidebar))
        self.delete_button.setAccessibleName("Delete chat")
        for b in (self.new_button, self.rename_button, self.delete_button):
            buttons.addWidget(b)
        side.addWidget(self.conversation_search)
        side.addWidget(self.conversation_list, 1)
        side.addLayout(buttons)

        main = QWidget(self)
        column = QVBoxLayout(main)
        column.setContentsMargins(4, 0, 4, 4)
        self.toolbar = QToolBar("Chat tools", main)
        self.toolbar.setAccessibleName("Chat tools")
        self.toolbar.setMovable(False)  # no grip: its width goes to the toggles
        self.compaction_action = self._toggle_action(
            "Evidence compaction",
            "Send earlier questions' evidence as only what was cited (smaller requests)",
        )
        self.policy_action = self._toggle_action(
            "Citation policy", "Require every answer to declare what grounds it"
        )
        self.analysis_action = self._toggle_action(
            "Analysis mode", "Let the model run Python over your library to count and compare"
        )
        self.no_tools_action = self._toggle_action(
            "Answer without tools",
            "Search first, then let the model read numbered passages (for models without tool calling)",
        )
        self.export_answer_action = QAction("Export answer…", self)
        self.export_answer_action.setToolTip(
            "Save the last answer as Markdown with its cited pages"
        )
        self.export_conversation_action = QAction("Export chat…", self)
        self.export_conversation_action.setToolTip(
            "Save this conversation as Markdown with its cited pages"
        )
        # Exports sit beside Send, behind one menu button: the toolbar keeps its width for
        # the toggles, which must stay visible in a narrow chat pane.
        export_menu = QMenu(main)
        export_menu.addAction(self.export_answer_action)
        export_menu.addAction(self.export_conversation_action)
        self.export_button = QToolButton(main)
        self.export_button.setText("Export")
        self.export_button.setAccessibleName("Export")
        self.export_button.setToolTip("Save the last answer or this conversation as Markdown")
        self.export_button.setMenu(export_menu)
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)

        status = QHBoxLayout()
        self.model_label = QLabel(main)
        self.model_label.setAccessibleName("Chat model")
        self.scope_label = QLabel(main)
        self.scope_label.setAccessibleName("Search scope")
        self.token_meter = QLabel(main)
        self.token_meter.setAccessibleName("Token meter")
        self.token_meter.setToolTip("Input tokens of the last model request")
        status.addWidget(self.model_label)
        status.addWidget(self.scope_label)
        status.addStretch(1)
        status.addWidget(self.token_meter)

        self.scroll = QScrollArea(main)
        self.scroll.setAccessibleName("Conversation")
        self.scroll.setWidgetResizable(True)
        self.transcript = QWidget(self.scroll)
        self.transcript_layout = QVBoxLayout(self.transcript)
        self.transcript_layout.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.empty_hint = QLabel(
            "Ask a question about your library. Answers cite the exact pages they rest on.",
            self.transcript,
        )
        self.empty_hint.setWordWrap(True)
        self.empty_hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.transcript_layout.addWidget(self.empty_hint)
        self.scroll.setWidget(self.transcript)

        self.analysis_panel = AnalysisPanel(main)

        self.input = QPlainTextEdit(main)
        self.input.setAccessibleName("Question")
        self.input.setPlaceholderText("Ask your library… (Ctrl+Enter to send)")
        self.input.setMaximumHeight(110)
        self.input.installEventFilter(_InputKeys(self))
        send_row = QHBoxLayout()
        self.send_button = QPushButton("Send", main)
        self.send_button.setAccessibleName("Send question")
        self.send_button.setToolTip("Send (Ctrl+Enter)")
        self.stop_button = QPushButton("Stop", main)
        self.stop_button.setAccessibleName("Stop answering")
        self.stop_button.setToolTip("Stop (Esc)")
        send_row.addWidget(self.export_button)
        send_row.addStretch(1)
        send_row.addWidget(self.stop_button)
        send_row.addWidget(self.send_button)

        column.addWidget(self.toolbar)
        column.addLayout(status)
        column.addWidget(self.scroll, 1)
        column.addWidget(self.analysis_panel)
        column.addWidget(self.input)
        column.addLayout(send_row)

        self.splitter.addWidget(sidebar)
        self.splitter.addWidget(main)
        # The list keeps its width when the window grows; the conversation takes the rest.
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setCollapsible(1, False)
        sidebar.setMinimumWidth(max(CONVERSATIONS_MIN_WIDTH, sidebar.minimumSizeHint().width()))
        self.splitter.setSizes([CONVERSATIONS_WIDTH, 520])

        self.send_action = QAction("Send", self)
        self.send_action.setShortcuts([QKeySequence("Ctrl+Return"), QKeySequence("Ctrl+Enter")])
        self.send_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.stop_action = QAction("Stop", self)
        self.stop_action.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        self.stop_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.new_chat_action = QAction("New chat", self)
        self.new_chat_action.setShortcut(QKeySequence.StandardKey.New)
        self.new_chat_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.addActions([self.send_action, self.stop_action, self.new_chat_action])

    def default_width(self) -> int:
        """The width that shows the conversation list at its default width and every toggle
        of the toolbar."""
        sidebar = self.splitter.widget(0)
        conversations = max(CONVERSATIONS_WIDTH, sidebar.minimumSizeHint().width())
        margins = self.splitter.widget(1).layout().contentsMargins()
        column = self.toolbar.sizeHint().width() + margins.left() + margins.right()
        return conversations + self.splitter.handleWidth() + column + TOOLBAR_SLACK

    def _toggle_action(self, text: str, tip: str) -> QAction:
        action = QAction(text, self)
        action.setCheckable(True)
        action.setToolTip(tip)
        action.setStatusTip(tip)
        self.toolbar.addAction(action)
        button = self.toolbar.widgetForAction(action)
        if button is not None:
            button.setAccessibleName(text)
        return action

    def _connect(self) -> None:
        chat = self.chat
        self.send_button.clicked.connect(self.send)
        self.stop_button.clicked.connect(chat.stop)
        self.send_action.triggered.connect(self.send)
        self.stop_action.triggered.connect(chat.stop)
        self.new_chat_action.triggered.connect(self.new_chat)
        self.new_button.clicked.connect(self.new_chat)
        self.rename_button.clicked.connect(self.rename_current)
        self.delete_button.clicked.connect(self.delete_current)
        self.conversation_search.textChanged.connect(lambda _: self.refresh_conversations())
        self.conversation_list.itemActivated.connect(self._open_item)
        self.conversation_list.itemClicked.connect(self._open_item)
        self.compaction_action.toggled.connect(lambda on: self._toggle("evidence_compaction", on))
        self.policy_action.toggled.connect(lambda on: self._toggle("citation_policy", on))
        self.analysis_action.toggled.connect(lambda on: self._toggle("analysis", on))
        self.no_tools_action.toggled.connect(
            lambda on: self._toggle("no_tools", True if on else None)
        )
        self.export_answer_action.triggered.connect(self._export_answer_dialog)
        self.export_conversation_action.triggered.connect(self._export_conversation_dialog)

        chat.conversations_changed.connect(self.refresh_conversations)
        chat.current_changed.connect(self._show_record)
        chat.toggles_changed.connect(self._show_toggles)
        chat.busy_changed.connect(self._set_busy)
        chat.question_started.connect(self._question_started)
        chat.text_delta.connect(self._text_delta)
        chat.text_reset.connect(self._text_reset)
        chat.tool_step.connect(self._tool_step)
        chat.analysis_step.connect(self._analysis_step)
        chat.answer_ready.connect(self._answer_ready)
        chat.question_failed.connect(self._question_failed)
        chat.question_cancelled.connect(self._question_cancelled)
        chat.token_meter_changed.connect(self._show_tokens)
        chat.scope_changed.connect(self._update_scope)
        self.models.model_changed.connect(lambda _: self._update_model_label())

    # --- conversations --------------------------------------------------------------------

    def refresh_conversations(self) -> None:
        current = self.chat.current.id if self.chat.current else None
        self.conversation_list.blockSignals(True)
        self.conversation_list.clear()
        for summary in self.chat.conversations(self.conversation_search.text()):
            item = QListWidgetItem(summary.title)
            item.setData(Qt.ItemDataRole.UserRole, summary.id)
            updated = summary.updated.astimezone().strftime("%Y-%m-%d %H:%M")
            item.setToolTip(f"{summary.title}\n{updated}")
            self.conversation_list.addItem(item)
            if summary.id == current:
                item.setSelected(True)
                self.conversation_list.setCurrentItem(item)
        self.conversation_list.blockSignals(False)
        has_current = current is not None
        self.rename_button.setEnabled(has_current)
        self.delete_button.setEnabled(has_current)

    def _open_item(self, item: QListWidgetItem) -> None:
        conversation_id = item.data(Qt.ItemDataRole.UserRole)
        if self.chat.current is None or self.chat.current.id != conversation_id:
            self.chat.open_conversation(conversation_id)

    def new_chat(self) -> None:
        self.chat.new_conversation()
        self.input.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def rename_current(self, title: str | None = None) -> None:
        record = self.chat.current
        if record is None:
            return
        if not isinstance(title, str):
            title, ok = QInputDialog.getText(self, "Rename chat", "Title:", text=record.title)
            if not ok:
                return
        self.chat.rename(record.id, title)

    def delete_current(self, confirm: bool = True) -> None:
        record = self.chat.current
        if record is None:
            return
        if confirm is True and self.isVisible():
            answer = QMessageBox.question(
                self, "Delete chat", f"Delete the conversation “{record.title}”?"
            )
            if answer != QMessageBox.StandardButton.Yes:
                return
        self.chat.delete(record.id)

    def _show_record(self, record: ConversationRecord | None) -> None:
        for widget in self.turn_widgets:
            widget.deleteLater()
        self.turn_widgets = []
        self._live = None
        self._live_id = None
        self.analysis_panel.clear()
        if record is not None:
            for turn in record.turns:
                self._add_turn_widget(turn)
                for step in turn.steps:
                    if step.kind == "analysis":
                        self.analysis_panel.add_step(step)
            self._show_toggles(record.toggles)
        else:
            self.analysis_panel.hide()  # no conversation, no analysis to show
        self._update_empty()
        self.refresh_conversations()
        self._update_exports()

    def _show_toggles(self, toggles: Any) -> None:
        for action, on in (
            (self.compaction_action, toggles.evidence_compaction),
            (self.policy_action, toggles.citation_policy),
            (self.analysis_action, toggles.analysis),
            (self.no_tools_action, toggles.no_tools is True),
        ):
            action.blockSignals(True)
            action.setChecked(bool(on))
            action.blockSignals(False)
        self.analysis_panel.setVisible(bool(toggles.analysis) or bool(self.analysis_panel.steps))

    def _toggle(self, name: str, value: bool | None) -> None:
        self.chat.set_toggle(name, value)

    # --- asking ---------------------------------------------------------------------------

    def send(self) -> None:
        question = self.input.toPlainText().strip()
        if not question or self.chat.busy:
            return
        if self.chat.ask(question) is not None:
            self.input.clear()

    def _question_started(self, conversation_id: str, turn: Turn) -> None:
        if self.chat.current is None or self.chat.current.id != conversation_id:
            return
        self._live = self._add_turn_widget(turn)
        self._live_id = conversation_id
        self._live.mark("Answering…")
        self._update_empty()

    def _is_live(self, conversation_id: str) -> bool:
        return self._live is not None and self._live_id == conversation_id

    def _text_delta(self, conversation_id: str, text: str) -> None:
        if self._is_live(conversation_id):
            self._live.append(text)  # type: ignore[union-attr]
            self._scroll_to_end()

    def _text_reset(self, conversation_id: str) -> None:
        if self._is_live(conversation_id):
            self._live.reset_text()  # type: ignore[union-attr]

    def _tool_step(self, conversation_id: str, step: ToolStep) -> None:
        if self._is_live(conversation_id):
            self._live.add_step(step)  # type: ignore[union-attr]

    def _analysis_step(self, conversation_id: str, step: ToolStep) -> None:
        if self._is_live(conversation_id):
            self.analysis_panel.add_step(step)
            self.analysis_panel.show()

    def _answer_ready(self, conversation_id: str, turn: Turn) -> None:
        if self._is_live(conversation_id):
            self._live.finish(turn)  # type: ignore[union-attr]
            self._live = None
            self._scroll_to_end()
        self._update_exports()

    def _question_failed(self, conversation_id: str, message: str) -> None:
        if self._is_live(conversation_id):
            self._live.mark(f"Not answered: {message}")  # type: ignore[union-attr]
            self._live = None

    def _question_cancelled(self, conversation_id: str) -> None:
        if self._is_live(conversation_id):
            self._live.mark("Stopped: this question was not kept")  # type: ignore[union-attr]
            self._live = None

    def _add_turn_widget(self, turn: Turn) -> TurnWidget:
        widget = TurnWidget(turn, self.transcript)
        widget.citation_activated.connect(self.citation_activated)
        self.transcript_layout.addWidget(widget)
        self.turn_widgets.append(widget)
        return widget

    def _set_busy(self, busy: bool) -> None:
        self.send_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)

    def _show_tokens(self, tokens: int) -> None:
        self.token_meter.setText(f"{tokens:,} input tokens" if tokens else "")

    def _update_model_label(self) -> None:
        self.model_label.setText(self.models.describe())

    def _update_scope(self, count: int) -> None:
        self.scope_label.setText(
            f"· {count} selected document{'s' if count != 1 else ''}"
            if count
            else "· whole library"
        )

    def _update_empty(self) -> None:
        self.empty_hint.setVisible(not self.turn_widgets)

    def _scroll_to_end(self) -> None:
        bar = self.scroll.verticalScrollBar()
        QTimer.singleShot(0, lambda: bar.setValue(bar.maximum()))

    # --- export ---------------------------------------------------------------------------

    def _update_exports(self) -> None:
        record = self.chat.current
        has_turns = bool(record and record.turns)
        self.export_answer_action.setEnabled(has_turns)
        self.export_conversation_action.setEnabled(has_turns)
        self.export_button.setEnabled(has_turns)

    def export_to(self, folder: str, *, whole_conversation: bool = True) -> Operation | None:
        """Export the conversation (or its last answer) into ``folder``, off the GUI thread."""
        from haiku_desk.bridge import Operation
        from haiku_desk.export import export_answer, export_conversation

        record = self.chat.current
        if record is None or not record.turns:
            return None
        client = self.services.library.client

        async def body(token: Any, report: Any) -> Any:
            if whole_conversation:
                return await export_conversation(record, client, folder)
            return await export_answer(record.turns[-1], client, folder)

        operation = Operation("Exporting the chat", body, self)
        operation.succeeded.connect(
            lambda path: self.services.notifications.info(f"Exported to {path}")
        )
        operation.failed.connect(
            lambda exc: self.services.notifications.report_failure("Exporting the chat", exc)
        )
        self.export_operation = operation.start()
        return operation

    def _export_answer_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export the answer into")
        if folder:
            self.export_to(folder, whole_conversation=False)

    def _export_conversation_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export the chat into")
        if folder:
            self.export_to(folder, whole_conversation=True)
