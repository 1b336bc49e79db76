"""Reader mode (View › Reader, Ctrl+Shift+R, the reader's ⤢ button): the citation panel takes
the room of the library and the conversation list, the chat stays beside it.

It is NotebookLM's way (a cited source opens beside the conversation, which stays in view to
click the next citation) rather than a separate window: nothing to find behind the main one,
and the chat's citations stay one click away. The reader's share of the width is the user's: a
dragged splitter is remembered in QSettings, and leaving reader mode puts every pane back as it
was. The panes hidden here are not remembered as hidden (that is the View menu's job).

A citation opened in a panel too narrow to read a page in (under main_window.READABLE_WIDTH,
a 1024×640 window) turns reader mode on by itself; the ⤢ button shows it checked, one click
gives the panes back, and so does widening the window until the usual layout would give the
panel that width again.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings
from PySide6.QtWidgets import QSplitter, QWidget

DEFAULT_READER_SHARE = 0.6  # of the splitter's width, the rest for the chat
MIN_SHARE, MAX_SHARE = 0.3, 0.85


class ReaderMode(QObject):
    def __init__(
        self,
        splitter: QSplitter,
        reader_index: int,
        make_room: list[QWidget],
        chat: QWidget,
        settings_key: str,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.splitter = splitter
        self.reader_index = reader_index
        self.make_room = make_room  # hidden while reading (the library, the conversation list)
        self.chat = chat
        self.settings_key = settings_key
        self.active = False
        self._hidden: list[QWidget] = []
        self._sizes: list[int] = []
        self._chat_minimum = 0
        splitter.splitterMoved.connect(self._moved)

    def share(self) -> float:
        value = QSettings().value(self.settings_key, DEFAULT_READER_SHARE)
        try:
            share = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            share = DEFAULT_READER_SHARE
        return max(MIN_SHARE, min(MAX_SHARE, share))

    def set_active(self, on: bool) -> None:
        if on == self.active:
            return
        if on:
            self._sizes = self.splitter.sizes()
            self._hidden = [w for w in self.make_room if not w.isHidden()]
            self.active = True
            for widget in self._hidden:
                widget.hide()
            # the chat's pinned minimum counted the conversation list, hidden now
            self._chat_minimum = self.chat.minimumWidth()
            self.chat.setMinimumWidth(min(self._chat_minimum, self.chat.minimumSizeHint().width()))
            total = sum(self.splitter.sizes())
            reader = int(total * self.share())
            sizes = [0] * self.splitter.count()
            sizes[self.reader_index] = reader
            sizes[self.reader_index - 1] = total - reader
            self.splitter.setSizes(sizes)
        else:
            self.active = False
            for widget in self._hidden:
                widget.show()
            self._hidden = []
            self.chat.setMinimumWidth(self._chat_minimum)
            if self._sizes:
                self.splitter.setSizes(self._sizes)

    def _moved(self, _pos: int, _index: int) -> None:
        if not self.active:
            return
        sizes = self.splitter.sizes()
        total = sum(sizes)
        if total > 0:
            QSettings().setValue(self.settings_key, sizes[self.reader_index] / total)
