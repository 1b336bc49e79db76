"""Export an answer or a whole conversation to Markdown, with its citations and the cited pages.

``<folder>/<name>.md`` holds the questions, answers, grounding and a numbered source list
(a source whose document has authors named author–year–page, "Gal et al., 2009, p. 5"); the
cited pages, rendered from the library's stored originals with the cited passage highlighted
(haiku.rag's grounding renderer, not Qt widgets), go next to it as PNG files in
``<folder>/<name>-pages/``, linked from the Markdown. The bibliography of the cited documents
goes beside it as ``<name>.bib`` (BibTeX) and ``<name>.csl.json`` (CSL-JSON), from the
library's export (Zotero keys kept), linked from a References section.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from haiku_desk.citations import citation_place, snippet_source
from haiku_desk.emphasis import balanced_emphasis
from haiku_desk.services.conversations import ConversationRecord, Turn

if TYPE_CHECKING:
    from haiku.rag.citations import Citation
    from haiku.rag.client import HaikuRAG

# What the answer rests on (Turn.basis), as the chat's badge says it
BASIS_LABELS = {
    "grounded": "Grounded: the answer declared evidence from the library",
    "ungrounded": "Ungrounded: the answer declared that nothing in the library supports it",
    "missing": "Missing: the answer declared no evidence",
    "search-results": "Search results: no model wrote this; the passages that matched best",
    "computed": "Computed: the answer rests on code run over the library; it cites no passage",
    "stopped": "Stopped before it was complete: not checked or cited",
    "no-documents": "Not answered: there was nothing in the library to search",
    "not-answered": "Not answered",
}
PAGE_DPI = 110
REMOVED = "removed from the library"  # a cited document deleted since (as the reader says it)
SNIPPET_CHARS = 300

# An export is opened in Markdown viewers, editors and browsers, so what documents put in it
# (titles, headings, quoted passages, and answers a model wrote from them) must stay text:
# no heading or list it did not write, no link or image (a remote image is a beacon fetched
# when the file is opened), no HTML.
_MARKDOWN_SPECIAL = re.compile(r"[\\`*_\[\]{}<>!|~#&]")
_HTML = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_IMAGE = re.compile(r"!(?=\[)")
# an ATX heading (``## Sources``), or a setext underline (``---``/``===``) turning the line
# above into one
_HEADING = re.compile(r"^(\s{0,3})(#|[=-](?=[=\- ]*$))", re.MULTILINE)
# an in-app link (``[Settings → Models…](haiku:models)``): means nothing outside the app, so
# an export keeps its words only
_APP_LINK = re.compile(r"\[([^\]]*)\]\(\s*<?haiku:[^)]*\)", re.IGNORECASE)


@dataclass(frozen=True)
class Unanswered:
    """A question asked in the chat that could not be answered (never saved as a turn): an
    export still lists it, with why."""

    question: str
    reason: str


def inline(text: str) -> str:
    """Text from a document or a user as one line of literal Markdown: line breaks become
    spaces, every character Markdown or HTML reads as markup is escaped."""
    text = " ".join(str(text).split())
    return _MARKDOWN_SPECIAL.sub(lambda m: _HTML.get(m.group(), "\\" + m.group()), text)


def inert_answer(text: str) -> str:
    """A model's answer keeps its Markdown (paragraphs, lists, tables, emphasis, links), but
    cannot embed an image (``![…](https://beacon…)`` is shown as a link), raw HTML, or a
    heading that would pass for one the export wrote."""
    text = _APP_LINK.sub(lambda m: m.group(1), text)
    text = _IMAGE.sub("\\\\!", text)
    text = text.replace("<", "&lt;")  # no tag, comment or autolink can open
    return _HEADING.sub(lambda m: m.group(1) + "\\" + m.group(2), text)


def slug(text: str, limit: int = 48) -> str:
    words = re.findall(r"[\w]+", text.casefold())
    return "-".join(words)[:limit].strip("-") or "chat"


async def export_answer(
    turn: Turn, client: HaikuRAG, folder: str | os.PathLike[str], name: str | None = None
) -> Path:
    """Write one answer (with its question) to ``<folder>/<name>.md``; returns the path."""
    return await _export([turn], turn.question, client, Path(folder), name or slug(turn.question))


async def export_conversation(
    record: ConversationRecord,
    client: HaikuRAG,
    folder: str | os.PathLike[str],
    name: str | None = None,
    *,
    turns: Sequence[Turn | Unanswered] | None = None,
) -> Path:
    """Write every question of ``record`` to ``<folder>/<name>.md``: its turns, or ``turns``
    (the transcript as shown: its turns with the questions that could not be answered)."""
    return await _export(
        record.turns if turns is None else turns, record.title, client, Path(folder), name or slug(record.title)
    )


async def _export(
    items: Sequence[Turn | Unanswered], title: str, client: HaikuRAG, folder: Path, name: str
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pages_dir = folder / f"{name}-pages"
    rendered: dict[tuple[str, int], list[str]] = {}  # (chunk id, index) -> image paths
    turns = [t for t in items if isinstance(t, Turn)]
    for turn in turns:
        for citation in turn.citations:
            key = (citation.chunk_id, citation.index)
            if key not in rendered:
                rendered[key] = await _render_citation(citation, client, pages_dir, folder)
    cited = [c for turn in turns for c in turn.citations]
    records = await _records(client, cited)
    removed = {c.document_id for c in cited} - records.keys()  # deleted since it was cited
    lines = [f"# {inline(title)}", ""]
    for item in items:
        if isinstance(item, Turn) and item.failure is not None:  # kept in the transcript with why
            item = Unanswered(item.question, item.failure.reason)
        if isinstance(item, Unanswered):
            lines += [f"## {inline(item.question)}", "", f"*Not answered: {inline(item.reason)}*", ""]
        else:
            lines += turn_markdown(item, rendered, records, removed)
    if cited:
        lines += await _references(client, cited, records, folder, name)
    target = folder / f"{name}.md"
    target.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return target


async def _render_citation(
    citation: Citation, client: HaikuRAG, pages_dir: Path, folder: Path
) -> list[str]:
    """Render the cited pages with the passage highlighted; relative paths of the PNGs."""
    if not citation.boxes and not citation.page_numbers:
        return []
    from haiku_desk.citations import matched_pages

    # the pages of the cited text itself (its context shown faintly on them), not every page
    # of the context widened around it
    own = set(matched_pages(citation))
    try:
        pages = await client.visualize(
            citation.document_id,
            citation.boxes,
            [b for b in citation.context_boxes if b.page in own],
            sorted(own),
            dpi=PAGE_DPI,
        )
    except Exception:  # a document deleted since: the citation still exports, as text
        return []
    paths: list[str] = []
    for page in pages:
        pages_dir.mkdir(parents=True, exist_ok=True)
        image = pages_dir / f"source-{citation.index}-page-{page.page}.png"
        image.write_bytes(page.to_png(highlight=True))
        paths.append(image.relative_to(folder).as_posix())
    return paths


async def _records(client: HaikuRAG, citations: Sequence[Citation]) -> dict[str, Any]:
    """The bibliographic record (or None) of each cited document still in the library (one
    deleted since is left out: cited by its title, and not in the .bib)."""
    from haiku.rag.bibliography import bibliographic

    records: dict[str, Any] = {}
    for document_id in dict.fromkeys(c.document_id for c in citations):
        try:
            document = await client.get_document(document_id)
        except Exception:
            continue
        records[document_id] = bibliographic(document.metadata)
    return records


async def _references(
    client: HaikuRAG, citations: Sequence[Citation], records: dict[str, Any], folder: Path, name: str
) -> list[str]:
    """``<name>.bib`` and ``<name>.csl.json`` of the cited documents, and the References
    section that lists them and links both files."""
    from haiku.rag.bibliography import author_label, bibliography_of_answer

    present = [c for c in citations if c.document_id in records]
    lines = ["## References", ""]
    seen: set[str] = set()
    for c in citations:
        if c.document_id in seen:
            continue
        seen.add(c.document_id)
        record = records.get(c.document_id)
        who = author_label(record) if record is not None else None
        year = record.year if record is not None and record.year else "n.d."
        title = (record.title if record is not None and record.title else None) or c.document_title or c.document_uri
        gone = "" if c.document_id in records else f" ({REMOVED})"
        lines.append(f"- {inline(who)} ({year}). {inline(title)}.{gone}" if who else f"- {inline(title)}.{gone}")
    lines.append("")
    if not present:
        return lines
    try:
        bibtex = await bibliography_of_answer(client, present, "bibtex")
        csl = await bibliography_of_answer(client, present, "csl-json")
    except Exception:  # the library could not be read: the list above still names them
        return lines
    (folder / f"{name}.bib").write_text(bibtex, encoding="utf-8")
    (folder / f"{name}.csl.json").write_text(csl + "\n", encoding="utf-8")
    target = quote(name)
    lines += [f"BibTeX: [{inline(name)}.bib]({target}.bib) · CSL-JSON: [{inline(name)}.csl.json]({target}.csl.json)", ""]
    return lines


def turn_markdown(
    turn: Turn,
    rendered: dict[tuple[str, int], list[str]] | None = None,
    records: dict[str, Any] | None = None,
    removed: Collection[str] = (),
) -> list[str]:
    """One question and its answer, as Markdown: its sources named once each (an author–year
    label holds the page, which is then not repeated), a source whose document was deleted
    since (``removed``: document ids) marked so, and a document's stray ``**`` dropped as the
    chat drops it (a Markdown viewer made the rest of the answer bold)."""
    from haiku_desk.citations import citation_title, has_authors, heading_path, source_label
    from haiku_desk.services.chat import citing_text, excerpt

    rendered = rendered or {}
    records = records or {}
    answer = inert_answer(balanced_emphasis(turn.answer.strip()))
    lines = [f"## {inline(turn.question)}", "", answer, ""]
    lines += [f"*{BASIS_LABELS.get(turn.basis, turn.basis)}.*", ""]
    check = turn.support_check
    if check is not None and turn.basis in ("grounded", "ungrounded", "missing"):
        # whether the cited text holds what the answer states (haiku.rag.answering.support)
        lines += [f"*Support: {check.label}.*", ""]
        for sentence in check.flagged:
            why = "no citation" if sentence.status == "uncited" else "not in the cited text"
            # the model's sentence and claims again: as literal text, like the rest of the export
            missing = ", ".join(inline(claim) for claim in sentence.missing)
            lines.append(f"- ⚠ “{inline(sentence.text)}” ({why}: {missing})")
        if check.flagged:
            lines.append("")
    if turn.citations:
        lines += ["### Sources", ""]
        for c in turn.citations:
            where = citation_place(c)
            record = records.get(c.document_id)
            if has_authors(record):  # "Gal et al., 2009, p. 5 — Title — 3 Trace Trees"
                headings = " › ".join(heading_path(c))
                where = " — ".join(p for p in (source_label(c, record), citation_title(c), headings) if p)
            if c.document_id in removed:
                where = f"{where} ({REMOVED})"
            query = citing_text(turn.answer, c.index) or f"{turn.question} {turn.answer}"
            snippet = excerpt(snippet_source(c), query, SNIPPET_CHARS)
            lines += [f"{c.index}. **{inline(where)}**", f"   > {inline(snippet)}", ""]
            for path in rendered.get((c.chunk_id, c.index), []):
                page = path.rsplit("-page-", 1)[-1].removesuffix(".png")
                # the page as printed, with the PDF's number when they differ: "page 22 (PDF 36)"
                printed = c.page_labels.get(int(page)) if page.isdigit() else None
                shown = f"{printed} (PDF {page})" if printed else page
                lines += [f"   ![Source {c.index}, page {shown}]({path})", ""]
    return lines
