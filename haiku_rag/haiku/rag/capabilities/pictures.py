"""Pictures shown to vision models: cropped from the stored PDF page, labelled, tagged.

Every image the capabilities add is preceded by a text label carrying ``RETRIEVED_IMAGE_TAG``.
The label tells the model the image came from the knowledge base, not from the user, and the
tag lets compaction remove exactly these images later without touching images the user sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic_ai.messages import BinaryImage

from haiku.rag.mupdf import MUPDF_LOCK, import_pymupdf

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG

RETRIEVED_IMAGE_TAG = "[haiku.rag/retrieved-image]"
PICTURE_DPI = 144  # enough to read a chart's labels; the crop keeps the image small


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
    """The picture item ``self_ref`` cropped from its rendered page, as PNG; None when the
    document has no page to render it from (not a PDF, or the item has no box)."""
    item = await client.get_item(document_id, self_ref)
    box = item.boxes[0] if item is not None and item.boxes else None
    if box is None:
        return None
    pages = await client.visualize(document_id, [box], page_numbers=[box.page], dpi=PICTURE_DPI)
    if not pages:
        return None
    page = pages[0]
    crop = next((b for b in page.boxes if b.kind == "match"), None)
    if crop is None or crop.x1 <= crop.x0 or crop.y1 <= crop.y0:
        return None
    return _png_crop(page.samples, page.width, (crop.x0, crop.y0, crop.x1, crop.y1))


def _png_crop(samples: bytes, width: int, rect: tuple[int, int, int, int]) -> bytes:
    import numpy as np
    pymupdf = import_pymupdf()

    x0, y0, x1, y1 = rect
    rows = np.frombuffer(samples, dtype=np.uint8).reshape(-1, width, 3)
    region = np.ascontiguousarray(rows[y0:y1, x0:x1])
    with MUPDF_LOCK:
        pixmap = pymupdf.Pixmap(pymupdf.csRGB, x1 - x0, y1 - y0, region.tobytes(), 0)
        return pixmap.tobytes("png")
