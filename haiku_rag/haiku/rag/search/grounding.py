"""Visual grounding: which pages of a citation to render. The rendering itself, and the
highlight colours, live in ``haiku.rag.pages`` (the one page renderer, shared with the app);
its names are re-exported here for the callers that import them from search."""

from __future__ import annotations

from haiku.rag.ingest.records import Box
from haiku.rag.pages import HIGHLIGHT_STYLE, PageImage, PixelBox, render_page, to_pixels

__all__ = ["HIGHLIGHT_STYLE", "PageImage", "PixelBox", "pages_to_render", "render_page", "to_pixels"]


def pages_to_render(matched: list[Box], context: list[Box], page_numbers: list[int]) -> list[int]:
    pages = sorted({b.page for b in matched} | {b.page for b in context})
    return pages or sorted(set(page_numbers))
