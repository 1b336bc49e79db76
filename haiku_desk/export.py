"""Export an answer or a whole conversation to Markdown, with its citations and the cited pages.

``<folder>/<name>.md`` holds the questions, answers, grounding and a numbered source list; the
cited pages, rendered from the library's stored originals with the cited passage highlighted
(haiku.rag's grounding renderer, not Qt widgets), go next to it as PNG files in
``<folder>/<name>-pages/``, linked from the Markdown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from haiku_desk.citations import citation_place, snippet_source
from haiku_desk.services.conversations import ConversationRecord, Turn

if TYPE_CHECKING:
    from haiku.rag.citations import Citation
    from haiku.rag.client import HaikuRAG

GROUNDING_LABELS = {
    "grounded": "Grounded: the answer declared evidence from the library",
    "ungrounded": "Ungrounded: the answer declared that nothing in the library supports it",
    "missing": "Missing: the answer declared no evidence",
}
PAGE_DPI = 110
SNIPPET_CHARS = 300


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
) -> Path:
    """Write every answered question of ``record`` to ``<folder>/<name>.md``."""
    return await _export(
        record.turns, record.title, client, Path(folder), name or slug(record.title)
    )


async def _export(
    turns: Sequence[Turn], title: str, client: HaikuRAG, folder: Path, name: str
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pages_dir = folder / f"{name}-pages"
    rendered: dict[tuple[str, int], list[str]] = {}  # (chunk id, index) -> image paths
    for turn in turns:
        for citation in turn.citations:
            key = (citation.chunk_id, citation.index)
            if key not in rendered:
                rendered[key] = await _render_citation(citation, client, pages_dir, folder)
    lines = [f"# {title}", ""]
    for turn in turns:
        lines += turn_markdown(turn, rendered)
    target = folder / f"{name}.md"
    target.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return target


async def _render_citation(
    citation: Citation, client: HaikuRAG, pages_dir: Path, folder: Path
) -> list[str]:
    """Render the cited pages with the passage highlighted; relative paths of the PNGs."""
    if not citation.boxes and not citation.page_numbers:
        return []
    try:
        pages = await client.visualize(
            citation.document_id,
            citation.boxes,
            citation.context_boxes,
            citation.page_numbers,
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


def turn_markdown(
    turn: Turn, rendered: dict[tuple[str, int], list[str]] | None = None
) -> list[str]:
    from haiku_desk.services.chat import citing_text, excerpt

    rendered = rendered or {}
    lines = [f"## {turn.question}", "", turn.answer.strip(), ""]
    lines += [f"*{GROUNDING_LABELS.get(turn.grounding, turn.grounding)}.*", ""]
    if turn.citations:
        lines += ["### Sources", ""]
        for c in turn.citations:
            where = citation_place(c)
            query = citing_text(turn.answer, c.index) or f"{turn.question} {turn.answer}"
            snippet = excerpt(snippet_source(c), query, SNIPPET_CHARS)
            lines += [f"{c.index}. **{where}**", f"   > {snippet}", ""]
            for path in rendered.get((c.chunk_id, c.index), []):
                page = path.rsplit("-page-", 1)[-1].removesuffix(".png")
                lines += [f"   ![Source {c.index}, page {page}]({path})", ""]
    return lines
