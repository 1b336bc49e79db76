"""The OCR pipeline without OpenCV (ingest/ocr_pipeline.py): reading a page imports neither
OpenCV nor RapidOCR; the detection's post-processing finds the regions of a probability map
as OpenCV's contours and rectangles did; resizing and line crops give the pixels OpenCV gave
(checked against OpenCV itself where it is installed, since the models were measured with
its pixels)."""

from __future__ import annotations

import io
import math
import subprocess
import sys

import numpy as np
import pymupdf
import pytest
from PIL import Image, ImageDraw

from haiku.rag.ingest import ocr_pipeline as pipeline

DPI = 150


def _rendered_line(text: str, *, font_size: float = 20, width: float = 360, height: float = 80):
    """``text`` drawn by PyMuPDF at (20, 45) points, rendered at DPI: the RGB pixels and the
    text's rectangle in pixels."""
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    page.insert_text((20, 45), text, fontsize=font_size, fontname="helv")
    drawn = page.search_for(text)[0]
    image = Image.open(io.BytesIO(page.get_pixmap(dpi=DPI).tobytes("png"))).convert("RGB")
    doc.close()
    scale = DPI / 72
    return np.asarray(image), tuple(v * scale for v in (drawn.x0, drawn.y0, drawn.x1, drawn.y1))


def test_reading_a_page_imports_neither_opencv_nor_rapidocr():
    """In a fresh interpreter: a page recognised (its text read), and ``cv2`` and
    ``rapidocr_onnxruntime`` never imported (RapidOCR imports OpenCV: its model files are read
    as files)."""
    code = (
        "import sys, io\n"
        "import numpy as np, pymupdf\n"
        "from PIL import Image\n"
        "from haiku.rag.ingest import ocr\n"
        "doc = pymupdf.open(); page = doc.new_page(width=360, height=120)\n"
        "page.insert_text((20, 50), 'Otters juggle pebbles', fontsize=22)\n"
        "pix = page.get_pixmap(dpi=150)\n"
        "image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n)\n"
        "result = ocr.recognise(np.ascontiguousarray(image[:, :, :3]))\n"
        "print([line.text for line in result.lines])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cv2', 'rapidocr_onnxruntime')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    texts, imported = out.stdout.strip().splitlines()[-2:]
    assert texts == "['Otters juggle pebbles']"
    assert imported == "[]"


def test_the_detector_boxes_a_rendered_line_where_it_was_drawn():
    from haiku.rag.ingest import ocr

    image, drawn = _rendered_line("Harbour seals bask on warm rocks")
    boxes = ocr._load_engine().text_det(np.ascontiguousarray(image[..., ::-1]))
    assert boxes.shape == (1, 4, 2)
    x0, y0 = boxes[0].min(axis=0)
    x1, y1 = boxes[0].max(axis=0)
    # the box spans the drawn words, with a margin of a few pixels (the unclip), no more;
    # across, it lies on the line (PyMuPDF's rectangle is the font's full line height,
    # taller than the ink)
    assert x0 <= drawn[0] + 2 and x1 >= drawn[2] - 2
    assert drawn[0] - x0 < 12 and x1 - drawn[2] < 12
    assert drawn[1] - 6 <= y0 < y1 <= drawn[3] + 6 and y1 - y0 > 0.5 * (drawn[3] - drawn[1])


def _probability_map(shape, polygons, value=0.9):
    """A probability map of ``shape`` with ``value`` inside each polygon, 0.05 elsewhere."""
    canvas = Image.new("L", (shape[1], shape[0]), 0)
    draw = ImageDraw.Draw(canvas)
    for polygon in polygons:
        draw.polygon([tuple(p) for p in polygon], fill=255)
    inside = np.asarray(canvas) > 0
    return np.where(inside, value, 0.05).astype(np.float32)


def test_a_text_region_becomes_one_box_grown_by_the_unclip_distance():
    probability = _probability_map((100, 200), [[(30, 20), (129, 20), (129, 39), (30, 39)]])
    boxes = pipeline.boxes_from_map(probability, 200, 100)
    assert len(boxes) == 1
    box = boxes[0]
    # RapidOCR's distance: area x 1.6 / perimeter of the region's rectangle (pixel centres
    # 30..129 x 20..39 after the 2 x 2 dilation: 100 x 20)
    distance = 100 * 20 * 1.6 / (2 * (100 + 20))
    assert box[:, 0].min() == pytest.approx(30 - distance, abs=1.5)
    assert box[:, 0].max() == pytest.approx(130 + distance, abs=1.5)
    assert box[:, 1].min() == pytest.approx(20 - distance, abs=1.5)
    assert box[:, 1].max() == pytest.approx(40 + distance, abs=1.5)
    # top-left, top-right, bottom-right, bottom-left
    assert box[0][0] < box[1][0] and box[3][1] > box[0][1] and box[2][1] > box[1][1]


def test_a_tilted_region_gets_a_box_along_its_tilt():
    angle = math.radians(8)
    cx, cy, half_w, half_h = 150, 80, 100, 12
    corners = [
        (cx + x * math.cos(angle) - y * math.sin(angle), cy + x * math.sin(angle) + y * math.cos(angle))
        for x, y in ((-half_w, -half_h), (half_w, -half_h), (half_w, half_h), (-half_w, half_h))
    ]
    boxes = pipeline.boxes_from_map(_probability_map((160, 300), [corners]), 300, 160)
    assert len(boxes) == 1
    top = boxes[0][1] - boxes[0][0]
    assert math.degrees(math.atan2(top[1], top[0])) == pytest.approx(8, abs=1)


def test_regions_touching_diagonally_are_one_and_separated_ones_are_two():
    """8-connected regions, as OpenCV's contours: two blocks meeting at a corner are one
    region, a one-pixel gap keeps them apart; in the detection, the 2 x 2 dilation closes a
    one-pixel gap between two words, and a wider one leaves two boxes."""
    mask = np.zeros((60, 120), dtype=bool)
    mask[10:25, 10:50] = True
    mask[25:40, 50:90] = True  # touches the first only at its corner
    assert len(pipeline._regions(mask)) == 1
    mask[25:40, 50] = False  # now a pixel apart
    assert len(pipeline._regions(mask)) == 2
    for gap, boxes in ((1, 1), (4, 2)):
        probability = np.full((60, 140), 0.05, dtype=np.float32)
        probability[10:30, 10:50] = 0.9
        probability[10:30, 50 + gap : 100] = 0.9
        assert len(pipeline.boxes_from_map(probability, 140, 60)) == boxes, gap


def test_faint_and_tiny_regions_are_dropped():
    probability = np.full((60, 120), 0.05, dtype=np.float32)
    probability[10:30, 10:80] = 0.4  # over the text threshold (0.3), under the box score (0.5)
    probability[45:47, 100:110] = 0.9  # two pixels thick
    assert pipeline.boxes_from_map(probability, 120, 60) == []


def test_the_minimum_area_rectangle_holds_every_point_with_the_least_area():
    """Against a brute force over angles, on random point clouds."""
    rng = np.random.default_rng(5)
    for _ in range(40):
        points = rng.normal(size=(int(rng.integers(3, 40)), 2)) * rng.uniform(1, 50, 2)
        points = points @ np.array([[math.cos(1.0), -math.sin(1.0)], [math.sin(1.0), math.cos(1.0)]])
        corners, width, height = pipeline.min_area_rect(points)
        best = min(
            (np.ptp(points @ (u := np.array([math.cos(t), math.sin(t)]))))
            * np.ptp(points @ np.array([-u[1], u[0]]))
            for t in np.linspace(0, math.pi / 2, 20001)
        )
        assert width * height <= best + 1e-6 * max(1.0, best)
        # every point inside (or on) the rectangle
        u = (corners[1] - corners[0]) / max(width, 1e-12)
        n = (corners[3] - corners[0]) / max(height, 1e-12)
        along = (points - corners[0]) @ u
        across = (points - corners[0]) @ n
        assert along.min() > -1e-6 and along.max() < width + 1e-6
        assert across.min() > -1e-6 and across.max() < height + 1e-6


def test_reading_order_is_top_to_bottom_then_left_to_right_within_a_row():
    def box(x, y):
        return np.array([[x, y], [x + 50, y], [x + 50, y + 20], [x, y + 20]], dtype=np.float32)

    boxes = [box(300, 104), box(10, 100), box(10, 200), box(300, 40)]
    ordered = pipeline.sorted_boxes(boxes)
    assert [tuple(b[0]) for b in ordered] == [(300, 40), (10, 100), (300, 104), (10, 200)]


def test_rotate_turns_clockwise():
    image = np.arange(6, dtype=np.uint8).reshape(2, 3)
    assert pipeline.rotate(image, 90).tolist() == [[3, 0], [4, 1], [5, 2]]
    assert pipeline.rotate(image, 180).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert pipeline.rotate(image, 270).tolist() == [[2, 5], [1, 4], [0, 3]]


def test_a_straight_line_crop_is_the_pixels_inside_its_box():
    rng = np.random.default_rng(2)
    image = rng.integers(0, 256, (60, 100, 3), dtype=np.uint8)
    quad = np.array([[10, 5], [70, 5], [70, 25], [10, 25]], dtype=np.float32)
    assert np.array_equal(pipeline.crop_line(image, quad), image[5:25, 10:70])
    tall = np.array([[10, 5], [30, 5], [30, 55], [10, 55]], dtype=np.float32)
    assert np.array_equal(pipeline.crop_line(image, tall), np.rot90(image[5:55, 10:30]))


# -- against OpenCV, where it is installed --------------------------------------------------


def test_resizing_gives_opencvs_pixels_bit_for_bit():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(1)
    for case in range(60):
        height, width = (int(v) for v in rng.integers(2, 300, 2))
        image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        if case % 3 == 0:
            target = (width * 2, height * 3)
        elif case % 3 == 1:
            target = (max(1, width // 2), max(1, height // 2))
        else:
            target = (int(rng.integers(1, 500)), int(rng.integers(1, 500)))
        assert np.array_equal(pipeline.resize_linear(image, *target), cv2.resize(image, target)), (
            (height, width),
            target,
        )


def _opencv_crop(cv2, image, quad):
    """RapidOCR's ``get_rotate_crop_image``."""
    width = int(max(np.linalg.norm(quad[0] - quad[1]), np.linalg.norm(quad[2] - quad[3])))
    height = int(max(np.linalg.norm(quad[0] - quad[3]), np.linalg.norm(quad[1] - quad[2])))
    target = np.array([[0, 0], [width, 0], [width, height], [0, height]], dtype=np.float32)
    matrix = cv2.getPerspectiveTransform(quad, target)
    crop = cv2.warpPerspective(
        image, matrix, (width, height), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_CUBIC
    )
    return np.rot90(crop) if crop.shape[0] * 1.0 / crop.shape[1] >= 1.5 else crop


def test_line_crops_along_tilted_boxes_are_opencvs_within_a_grey_level():
    """On a textured image (the hardest case for a sampling difference): every pixel within
    one grey level of OpenCV's, nearly all equal."""
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(4)
    image = np.asarray(
        Image.fromarray(rng.integers(0, 256, (200, 300, 3), dtype=np.uint8)).resize((600, 400))
    )
    for _ in range(30):
        angle = math.radians(float(rng.uniform(-10, 10)))
        cx, cy = rng.uniform(100, 500), rng.uniform(80, 320)
        half_w, half_h = rng.uniform(20, 90), rng.uniform(6, 20)
        quad = np.array(
            [
                (
                    round(cx + x * math.cos(angle) - y * math.sin(angle)),
                    round(cy + x * math.sin(angle) + y * math.cos(angle)),
                )
                for x, y in ((-half_w, -half_h), (half_w, -half_h), (half_w, half_h), (-half_w, half_h))
            ],
            dtype=np.float32,
        )
        ours = pipeline.crop_line(image, quad)
        theirs = _opencv_crop(cv2, image, quad)
        assert ours.shape == theirs.shape
        difference = np.abs(ours.astype(int) - theirs)
        assert difference.max() <= 1 and (difference > 0).mean() < 0.01
    # a tilted box against the image's edges: the taps beyond it repeat the edge pixels
    for quad in ([[0, 2], [120, 9], [119, 30], [0, 23]], [[480, 370], [599, 380], [599, 399], [479, 392]]):
        quad = np.array(quad, dtype=np.float32)
        difference = np.abs(pipeline.crop_line(image, quad).astype(int) - _opencv_crop(cv2, image, quad))
        assert difference.max() <= 1 and (difference > 0).mean() < 0.01


def test_the_detection_post_processing_gives_rapidocrs_boxes_on_real_maps():
    """The detector's own probability maps of rendered pages (upright and skewed lines):
    the same boxes as RapidOCR's post-processing (OpenCV contours, Shapely, pyclipper), each
    corner within a pixel."""
    pytest.importorskip("cv2")
    from rapidocr_onnxruntime.ch_ppocr_det.utils import DBPostProcess

    from haiku.rag.ingest import ocr

    reference = DBPostProcess(
        thresh=0.3, box_thresh=0.5, max_candidates=1000, unclip_ratio=1.6,
        score_mode="fast", use_dilation=True,
    )
    detector = ocr._load_engine().text_det
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=300)
    for i in range(10):
        page.insert_text((20 + 7 * (i % 3), 30 + 26 * i), f"Line {i}: kelp, otters and pebbles", fontsize=10 + i)
    image = Image.open(io.BytesIO(page.get_pixmap(dpi=DPI).tobytes("png"))).convert("RGB")
    for angle in (0, 3, -6):
        pixels = np.asarray(image.rotate(angle, fillcolor="white", resample=Image.Resampling.BICUBIC))
        bgr = np.ascontiguousarray(pixels[..., ::-1])
        height, width = bgr.shape[:2]
        ratio = max(1.0, pipeline.DET_LIMIT_SIDE / min(height, width))
        target = (int(round(int(width * ratio) / 32) * 32), int(round(int(height * ratio) / 32) * 32))
        batch = pipeline.resize_linear(bgr, *target).astype(np.float32) * np.float32(2 / 255) - 1
        prediction = detector.infer(np.ascontiguousarray(batch.transpose(2, 0, 1)[None]))[0]
        theirs, _ = reference(prediction, (height, width))
        ours = pipeline.boxes_from_map(prediction[0, 0], width, height)
        assert len(ours) == len(theirs) >= 10, angle
        key = lambda b: (int(b[0][1]), int(b[0][0]))  # noqa: E731
        for mine, expected in zip(sorted(ours, key=key), sorted(theirs, key=key), strict=True):
            assert np.abs(mine.astype(int) - expected.astype(int)).max() <= 1, (angle, mine, expected)
