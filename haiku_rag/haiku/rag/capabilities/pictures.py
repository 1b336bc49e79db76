"""Pictures shown to vision models: cropped from the stored PDF page, labelled, tagged.

Every image the capabilities add is preceded by a text label carrying ``RETRIEVED_IMAGE_TAG``.
The label tells the model the image came from the knowledge base, not from the user, and the
tag lets compaction remove exactly these images later without touching images the user sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic_ai.messages import BinaryImage

from haiku.rag.ingest.records import Box, ItemRecord
from haiku.rag.mupdf import MUPDF_LOCK, import_pymupdf

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG

RETRIEVED_IMAGE_TAG = "[haiku.rag/retrieved-image]"
# The crop is rendered at this resolution at least (enough to read a chart's labels), and
# more for a small figure, so that the crop's longer side reaches ``MIN_CROP_PX``, up to
# ``MAX_PICTURE_DPI`` and ``MAX_CROP_PX`` (the image stays small enough for a model).
PICTURE_DPI = 144
MAX_PICTURE_DPI = 300
MIN_CROP_PX = 1000
MAX_CROP_PX = 2000
# The crop is the figure with its caption: a caption item on the figure's page, lying
# within this many points above or below it (``ingest/figures.CAPTION_GAP``), is included;
# items read from the store around the picture's position, this many each side.
CAPTION_GAP = 60.0
CAPTION_WINDOW = 60


def search_image_label(position: int, total: int, chunk_id: str, ref: str) -> str:
    return (
        f"Page image {position} of {total}, retrieved from the knowledge base for search result "
        f"[{chunk_id}] ({ref}). Not provided by the user. {RETRIEVED_IMAGE_TAG}"
    )


def cited_image_label(chunk_id: str, ref: str) -> str:
    return (
        f"Page image retrieved from the knowledge base for cited evidence [{chunk_id}] ({ref}). "
        f"Not provided by the user. {RETRIEVED_IMAGE_TAG}"
    )


def png_image(data: bytes) -> BinaryImage | None:
    """The image if it decodes, else None: a broken image would fail the whole model request."""
    pymupdf = import_pymupdf()

    try:
        with MUPDF_LOCK:
            pymupdf.Pixmap(data)
    except Exception:  # pymupdf raises plain RuntimeError/ValueError for undecodable data
        return None
    return BinaryImage(data=data, media_type="image/png")


async def render_picture(client: HaikuRAG, document_id: str, self_ref: str) -> bytes | None:
    """The picture item ``self_ref`` with its caption, cropped from its rendered page at a
    readable resolution (``crop_dpi``), as PNG; None when the document has no page to render
    it from (not a PDF, or the item has no box)."""
    items = await client.get_items_near(document_id, self_ref, CAPTION_WINDOW)
    box = picture_box(items, self_ref)
    if box is None:
        return None
    dpi = crop_dpi(box)
    pages = await client.visualize(document_id, [box], page_numbers=[box.page], dpi=dpi)
    if not pages:
        return None
    page = pages[0]
    crop = next((b for b in page.boxes if b.kind == "match"), None)
    if crop is None or crop.x1 <= crop.x0 or crop.y1 <= crop.y0:
        return None
    return _png_crop(page.samples, page.width, (crop.x0, crop.y0, crop.x1, crop.y1))


def crop_dpi(box: Box) -> float:
    """The resolution a figure of ``box`` (points) is cropped at: ``PICTURE_DPI``, raised
    until its longer side is ``MIN_CROP_PX`` (a small chart's tick labels are then ~10 px
    high, not 5), within ``MAX_PICTURE_DPI`` and ``MAX_CROP_PX``."""
    longest = max(box.x1 - box.x0, box.y1 - box.y0, 1.0)
    dpi = max(PICTURE_DPI, MIN_CROP_PX * 72 / longest)
    return max(36.0, min(dpi, MAX_PICTURE_DPI, MAX_CROP_PX * 72 / longest))


def picture_box(items: Sequence[ItemRecord], self_ref: str) -> Box | None:
    """The box of picture ``self_ref`` among ``items`` joined with its caption's (the nearest
    caption item on its page within ``CAPTION_GAP`` above or below it, overlapping it
    horizontally)."""
    picture = next((item for item in items if item.self_ref == self_ref), None)
    if picture is None or not picture.boxes:
        return None
    area = picture.boxes[0]
    best: tuple[float, list[Box]] | None = None
    for item in items:
        if item.label != "caption" or not item.boxes:
            continue
        lines = [b for b in item.boxes if b.page == area.page]
        if not lines:
            continue
        x0, y0 = min(b.x0 for b in lines), min(b.y0 for b in lines)
        x1, y1 = max(b.x1 for b in lines), max(b.y1 for b in lines)
        if min(x1, area.x1) <= max(x0, area.x0):
            continue
        gap = y0 - area.y1 if y0 >= area.y1 else area.y0 - y1
        if -2 <= gap <= CAPTION_GAP and (best is None or gap < best[0]):
            best = (gap, lines)
    if best is None:
        return area
    every = [area, *best[1]]
    return Box(
        area.page,
        min(b.x0 for b in every),
        min(b.y0 for b in every),
        max(b.x1 for b in every),
        max(b.y1 for b in every),
    )


def _png_crop(samples: bytes, width: int, rect: tuple[int, int, int, int]) -> bytes:
    import numpy as np
    pymupdf = import_pymupdf()

    x0, y0, x1, y1 = rect
    rows = np.frombuffer(samples, dtype=np.uint8).reshape(-1, width, 3)
    region = np.ascontiguousarray(rows[y0:y1, x0:x1])
    with MUPDF_LOCK:
        pixmap = pymupdf.Pixmap(pymupdf.csRGB, x1 - x0, y1 - y0, region.tobytes(), 0)
        return pixmap.tobytes("png")
