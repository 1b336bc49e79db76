"""Image files (PNG, JPEG, TIFF, WebP) as documents: each image (each frame of a multi-page
TIFF) is wrapped as one PDF page of the image's physical size, and that PDF goes through the
PDF converter, whose OCR reads it. The wrapped PDF is what the store keeps as the
document's source, so a cited image page renders and highlights like any PDF page."""

from __future__ import annotations

import io
from typing import Any

from haiku.rag.errors import DamagedDocumentError
from haiku.rag.ingest.records import Conversion
from haiku.rag.operations import CancelToken, ProgressCallback

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"})
IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")
# Without a resolution in the file, an image is taken to be a 150 dpi scan (what scanners
# and phone-scan apps commonly write); only the page's size in points depends on it.
DEFAULT_IMAGE_DPI = 150.0
MAX_FRAMES = 500
MAX_PIXELS = 200_000_000  # past this the file is refused rather than decoded


def looks_like_image(head: bytes) -> bool:
    return head.startswith(IMAGE_MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def image_to_pdf(data: bytes, *, source: str) -> bytes:
    """The image's frames as the pages of a PDF (PNG-encoded, lossless; EXIF orientation
    applied so the page shows what a photo viewer shows)."""
    import pymupdf
    from PIL import Image, ImageOps, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    try:
        image = Image.open(io.BytesIO(data))
        frames = getattr(image, "n_frames", 1)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise DamagedDocumentError(f"{source}: not a readable image ({exc})", source=source) from exc
    pdf = pymupdf.open()
    try:
        for index in range(min(frames, MAX_FRAMES)):
            try:
                image.seek(index)
                frame = ImageOps.exif_transpose(image.copy())
                if frame.mode not in ("RGB", "L"):
                    frame = frame.convert("RGB")
                encoded = io.BytesIO()
                frame.save(encoded, format="PNG")
            except (OSError, ValueError, EOFError) as exc:
                raise DamagedDocumentError(
                    f"{source}: frame {index + 1} of the image cannot be decoded ({exc})",
                    source=source,
                ) from exc
            dpi_x, dpi_y = _resolution(image)
            width = frame.width * 72.0 / dpi_x
            height = frame.height * 72.0 / dpi_y
            page = pdf.new_page(width=width, height=height)
            page.insert_image(page.rect, stream=encoded.getvalue())
        return pdf.tobytes(garbage=1, deflate=True)
    finally:
        pdf.close()


def _resolution(image: object) -> tuple[float, float]:
    dpi: Any = getattr(image, "info", {}).get("dpi")
    try:
        x, y = float(dpi[0]), float(dpi[1])
    except (TypeError, ValueError, IndexError):
        return DEFAULT_IMAGE_DPI, DEFAULT_IMAGE_DPI
    # Files often say 1 or 72 "dpi" meaning nothing; a page would come out metres wide.
    if not (50 <= x <= 1200 and 50 <= y <= 1200):
        return DEFAULT_IMAGE_DPI, DEFAULT_IMAGE_DPI
    return x, y


def convert_image(
    data: bytes,
    *,
    source: str,
    layout: str = "fast",
    ocr: object | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> Conversion:
    """An image file as a document of its frames, read by OCR (see the module docstring)."""
    from haiku.rag.ingest.pdf import convert_pdf

    wrapped = image_to_pdf(data, source=source)
    conversion = convert_pdf(
        wrapped,
        source=source,
        layout="layout" if layout == "layout" else "fast",
        ocr=ocr,  # type: ignore[arg-type]
        progress=progress,
        cancel=cancel,
    )
    conversion.stored_bytes = wrapped
    return conversion
