"""How the app words a citation: its title, where in the document it is, and its snippet.

Shared by the chat pane, the citation panel and the Markdown export, so a source reads the same
everywhere. No Qt here: the export runs off the GUI thread. The views take the library's
``Citation`` (a type), its ``[n]`` markers and a citation that opens a document for reading from
here: they never import ``haiku.rag`` themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from haiku.rag.bibliography import Bibliographic
    from haiku.rag.citations import Citation

def replace_markers(text: str, replace: Callable[[list[int]], str]) -> str:
    """Every ``[n]`` / ``[1, 3]`` marker of ``text`` (the library's one marker pattern) replaced
    by ``replace(numbers)``; what precedes a marker in its match is kept."""
    from haiku.rag.citations import MARKER, marker_numbers

    def one(match: re.Match[str]) -> str:
        return f"{match.group(1)}{replace(marker_numbers(match))}"

    return MARKER.sub(one, text)


def reading_citation(document_id: str, title: str) -> Citation:
    """A citation that cites nothing of a document (no boxes, no passage): how the citation
    panel opens a document for reading."""
    from haiku.rag.citations import Citation

    return Citation(index=0, chunk_id="", document_id=document_id, document_uri="", document_title=title, content="")


def _normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def citation_title(citation: Citation) -> str:
    """The document's title, else its file name (a URI's last part)."""
    if citation.document_title and citation.document_title.strip():
        return " ".join(citation.document_title.split())
    return unquote(citation.document_uri.rstrip("/").rsplit("/", 1)[-1]) or citation.document_uri


def heading_path(citation: Citation) -> list[str]:
    """The headings above the passage, without those that only repeat the document's title
    (a paper's first heading is usually its title, already shown beside the path)."""
    title = _normalised(citation_title(citation))
    return [h for h in citation.headings if h.strip() and _normalised(h) != title]


def citation_location(citation: Citation) -> str:
    """Heading path and the pages of the cited text itself (not of the context widened
    around it), as printed when the document prints other numbers than its sheets:
    ``3 Results — pp. 1–2``, ``Piracy — pp. 22–23``."""
    parts = [" › ".join(heading_path(citation)), citation_pages(citation)]
    return " — ".join(p for p in parts if p)


def citation_pages(citation: Citation) -> str:
    """The pages of the cited text itself as a reader cites them: ``pp. 22–23`` (printed),
    ``p. 3``; empty for a source without pages."""
    from haiku.rag.citations import pages_label

    return pages_label(matched_pages(citation), citation.page_labels)


def reader_pages(citation: Citation) -> str:
    """The cited pages where the reader shows them: printed and PDF numbers when they differ
    (``p. 22 (PDF 36)``, ``pp. 22–23 (PDF 36–37)``), else ``p. 36``; the reader pages by
    the PDF's numbers."""
    from haiku.rag.citations import pages_label

    pages = matched_pages(citation)
    printed = pages_label(pages, citation.page_labels)
    sheets = pages_label(pages)
    if not citation.page_labels or printed.startswith("PDF ") or printed == sheets:
        return printed
    return f"{printed} (PDF {sheets.split(' ', 1)[1]})"


def page_place(page: int, labels: dict[int, str] | None = None) -> str:
    """One page as the reader names it: ``p. 22 (PDF 36)``, ``PDF p. 30`` or ``p. 36``."""
    from haiku.rag.citations import page_place as place

    return place(page, labels)


def citation_place(citation: Citation) -> str:
    """Title, heading path and pages on one line (tooltips, accessible names, export)."""
    return " — ".join(p for p in (citation_title(citation), citation_location(citation)) if p)


def snippet_source(citation: Citation) -> str:
    """The text a snippet is cut from: the cited chunk's own text when its passage was merged
    from several chunks (else two citations of one merged passage would show the same
    snippet), otherwise the passage."""
    return citation.matched_text or citation.content


def matched_pages(citation: Citation) -> list[int]:
    """The pages of the cited text itself (its strong boxes), else the passage's pages."""
    from haiku.rag.citations import matched_pages

    return matched_pages(citation)


def cited_pages(citation: Citation) -> list[int]:
    """Every page a citation shows (what the panel pages through)."""
    from haiku.rag.citations import cited_pages

    return cited_pages(citation)


def opening_page(citation: Citation) -> int:
    """The page a citation opens on (decided once, in ``haiku.rag.citations``)."""
    from haiku.rag.citations import opening_page

    return opening_page(citation)


def has_authors(record: Bibliographic | None) -> bool:
    return record is not None and any(c.family for c in record.authors)


def source_label(citation: Citation, record: Bibliographic | None, title: str | None = None) -> str:
    """How a source is named where an answer lists it: ``Sørensen et al., 2021, p. 4`` for a
    document with authors (the page of the cited text, exact), else its title (``title``: the
    document's title as stored now, else the one the citation was made with)."""
    if has_authors(record):
        from haiku.rag.bibliography import author_year_citation

        return author_year_citation(record, matched_pages(citation), parentheses=False, labels=citation.page_labels)
    return " ".join(title.split()) if title and title.strip() else citation_title(citation)


def quoted_citation(citation: Citation, record: Bibliographic | None, title: str | None = None) -> str:
    """What "Copy citation" puts on the clipboard: the cited passage in quotation marks (its
    table rows as words), then ``(Sørensen et al., 2021, p. 4)``; a document without authors
    is named by its title."""
    from haiku.rag.citations import tables_as_text

    # a table's rows as "header: value" words: pipes and "|-|-|" mean nothing in a manuscript
    passage = " ".join(tables_as_text(snippet_source(citation)).split())
    if has_authors(record):
        from haiku.rag.bibliography import author_year_citation

        where = author_year_citation(record, matched_pages(citation), labels=citation.page_labels)
    else:
        name = " ".join(title.split()) if title and title.strip() else citation_title(citation)
        where = "(" + ", ".join(p for p in (name, citation_pages(citation)) if p) + ")"
    return f"“{passage}” {where}"


def passage_blocks(text: str) -> list[Any]:
    """``text`` cut into prose (strings) and Markdown tables (``header``, ``rows`` of cells):
    haiku.rag's one reading of the tables its chunks hold, for the views to draw them."""
    from haiku.rag.citations import passage_blocks as blocks

    return list(blocks(text))
