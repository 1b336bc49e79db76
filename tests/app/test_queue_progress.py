"""The queue runner reports a job's progress by a typed signal that carries the row's key,
``progressed(key, Progress)`` (issue 31: not the operation's identity looked up through
``sender().property("entry_key")``), and the row shows it."""

from __future__ import annotations

from qt_helpers import run_until

from haiku.rag.operations import Progress, Stage
from haiku_desk.services.library import DocumentState, uri_for

SLOW = 180  # parsing + embedding on 2 shared cores


def test_progress_reaches_the_row_of_its_key(qloop, library, tmp_path, make_pdf):
    a = make_pdf(tmp_path / "a.pdf", "Kingfishers nest in the clay banks of the river.")
    b = make_pdf(tmp_path / "b.pdf", "The lamplighter walked the harbour wall at dusk.")
    reports: list[tuple[str, Progress]] = []
    library.queue.progressed.connect(lambda key, progress: reports.append((key, progress)))
    shown: dict[str, set[str]] = {uri_for(a): set(), uri_for(b): set()}
    library.entry_changed.connect(lambda e: e.stage and shown.get(e.key, set()).add(e.stage))

    library.add_paths([a, b])
    run_until(qloop, lambda: all(library.entry(uri_for(p)).state is DocumentState.HYBRID for p in (a, b)), SLOW)

    assert {key for key, _ in reports} == {uri_for(a), uri_for(b)}
    assert all(isinstance(progress, Progress) for _, progress in reports)
    for key in (uri_for(a), uri_for(b)):
        stages = {p.stage.value for k, p in reports if k == key}
        assert Stage.EMBEDDING.value in stages  # the embedding job reports under the same key
        # what a row showed came from its own reports (or is the stage the runner sets when a job
        # starts: "reading", "embedding"), never from the other file's
        assert shown[key] - {"reading", "embedding"} <= stages
        assert shown[key] - {"reading", "embedding"}, "the row showed its parse's progress"


def test_a_report_for_a_row_that_is_not_busy_changes_nothing(qloop, library, tmp_path, make_pdf):
    a = make_pdf(tmp_path / "a.pdf", "Otters hunt eels under the willow roots.")
    library.add_paths([a])
    run_until(qloop, lambda: library.entry(uri_for(a)).state is DocumentState.HYBRID, SLOW)
    before = library.entry(uri_for(a))

    library.queue.progressed.emit(uri_for(a), Progress(Stage.PARSING, done=3, total=9))
    library.queue.progressed.emit("file:///nowhere.pdf", Progress(Stage.PARSING, done=1, total=2))

    assert library.entry(uri_for(a)) == before
    assert library.entry("file:///nowhere.pdf") is None
