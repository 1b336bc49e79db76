"""``haiku-desk --self-test``: the release's smoke test, from the source install or the bundle.

In a temporary library and without a screen, it walks the path a researcher takes: a PDF is
generated with PyMuPDF, ingested through ``HaikuRAG`` (chunks and embeddings from the bundled
MiniLM), searched, its cited page rendered into a ``QImage`` with the highlight painted from the
stored box, and a question answered through ``haiku.rag.answering`` with compaction and the
citation policy on (as the app and ``haiku-rag ask`` answer) by the library's scripted model
(``haiku.rag.answering.ScriptedAnswer``, a ``FunctionModel``: it searches, cites, then answers).
Finally the app's own main window opens over that library (its services, the qasync loop),
shows the citation and is grabbed.

One line per step with its time; exit 0 when every step passed, else 1 with a message naming
the step that failed. No request leaves the machine (``FunctionModel``; model requests are
disabled). Built-in settings only: the user's config file and ``HAIKU_RAG_*`` variables are
ignored, so the test checks what was installed, not how it was configured.

Every import happens inside the functions: ``haiku-desk`` itself must start fast.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TITLE = "Lantern Otters of the Quartz River"
INTRO_HEADING = "Introduction"
INTRO_LINES = [
    "This field report describes the rivers of the quartz valley and the animals that",
    "live along them. The valley floor is crossed by shallow braided channels whose",
    "gravel beds shift with every spring flood, and the banks are lined with willows.",
]
RESULTS_HEADING = "Survey results"
FACT_LINES = [
    "The dawn survey counted 412 lantern otters along the northern bank of the quartz",
    "river. Lantern otters hunt glass eels at dusk and rest in willow roots by day.",
]
FACT_PAGE = 2
QUERY = "lantern otters counted northern bank survey"
QUESTION = "How many lantern otters did the dawn survey count?"
ANSWER = "The dawn survey counted 412 lantern otters on the northern bank."
FACT_WORDS = ("412 lantern otters", "northern bank")
# The Word and EPUB files the self-test writes (python-docx, and an EPUB's own zip layout), each
# with one fact that only it holds, found and cited by a question of its own.
DOCX_HEADING = "Heron census"
DOCX_FACT = "The heron census found 57 grey herons nesting in the alder carr."
DOCX_QUERY = "heron census grey herons alder carr"
EPUB_HEADING = "Chapter 3: The Lighthouse"
EPUB_FACT = "The keeper lit the brass lamp of the Skerry light at nine every evening."
EPUB_QUERY = "keeper brass lamp Skerry light"


def answer_options() -> Any:
    """The toggles the self-test answers with: compaction and the citation policy on."""
    from haiku.rag.answering import AnswerOptions

    return AnswerOptions(evidence_compaction=True, citation_policy=True)


async def ask(client: Any, question: str, conversation: Any, model: Any) -> Any:
    """The self-test's question, answered exactly as its step does (tests compare it with the
    app and ``haiku-rag ask`` for the same scripted model)."""
    from haiku.rag.answering import answer

    return await answer(client, question, conversation, answer_options(), model=model)


class StepFailed(Exception):
    """A check of the self-test did not hold; the message says what was expected."""


def run_self_test(out: Any = None) -> int:
    """Run every step; print one line each; return the process exit code (0 = all passed)."""
    out = out or sys.stdout
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    # Built-in settings, no hub access, no remote model: this tests the installation.
    for name in [n for n in os.environ if n.startswith("HAIKU_RAG_")]:
        del os.environ[name]
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"

    from haiku_desk import __version__

    print(f"haiku-desk {__version__} self-test ({_where()})", file=out, flush=True)
    runner = _Runner(out)
    started = time.perf_counter()
    try:
        runner.run_all()
    except _Abort as abort:
        print(
            f"self-test FAILED at step '{abort.step}': {abort.message}", file=sys.stderr, flush=True
        )
        return 1
    finally:
        runner.cleanup()
    print(
        f"self-test passed: {len(runner.done)} steps in {time.perf_counter() - started:.2f} s",
        file=out,
        flush=True,
    )
    return 0


def _where() -> str:
    if getattr(sys, "frozen", False):
        return f"bundle at {Path(sys.executable).parent}"
    return f"python {sys.version.split()[0]} at {sys.prefix}"


class _Abort(Exception):
    def __init__(self, step: str, message: str) -> None:
        super().__init__(f"{step}: {message}")
        self.step = step
        self.message = message


class _Runner:
    """The steps, in order; each one reads what the earlier steps left on ``self``."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.done: list[str] = []
        self.tmp: Path | None = None
        self.client: Any = None
        self.loop: Any = None
        self.app: Any = None
        self.window: Any = None
        self.config: Any = None
        self.citation: Any = None
        self.services: Any = None
        self.qloop: Any = None

    # --- driver -------------------------------------------------------------------------

    def run_all(self) -> None:
        import asyncio

        self.step("temp library", self.make_temp_library)
        self.step("qt offscreen", self.start_qt)
        self.step("generate pdf", self.generate_pdf)
        self.loop = asyncio.new_event_loop()
        self.step("ingest + embed", lambda: self.loop.run_until_complete(self.ingest()))
        self.step("search", lambda: self.loop.run_until_complete(self.search()))
        self.step("ocr scanned page", lambda: self.loop.run_until_complete(self.ocr_scan()))
        self.step("ocr runtime", self.ocr_runtime)
        self.step("pdf layout model", lambda: self.loop.run_until_complete(self.layout_model()))
        self.step("llama.cpp runtime", self.model_runtime)
        self.step("render highlight", lambda: self.loop.run_until_complete(self.render()))
        self.step("answer with citations", lambda: self.loop.run_until_complete(self.answer()))
        self.step("word file cited", lambda: self.loop.run_until_complete(self.docx_cited()))
        self.step("epub file cited", lambda: self.loop.run_until_complete(self.epub_cited()))
        self.step("mcp server", lambda: self.loop.run_until_complete(self.mcp_answers()))
        self.loop.close()
        self.loop = None
        self.step("main window", self.show_window)

    def step(self, name: str, action: Callable[[], str | None]) -> None:
        started = time.perf_counter()
        try:
            detail = action()
        except _Abort:
            raise
        except StepFailed as exc:
            raise _Abort(name, str(exc)) from None
        except BaseException as exc:  # noqa: BLE001 - any failure must name its step
            message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise _Abort(name, message) from None
        elapsed = time.perf_counter() - started
        self.done.append(name)
        suffix = f"  ({detail})" if detail else ""
        print(f"  ok  {name:<22} {elapsed:7.2f} s{suffix}", file=self.out, flush=True)

    def cleanup(self) -> None:
        import shutil

        if self.window is not None:
            self.window.close()
            self.window.deleteLater()
            self.window = None
        if self.services is not None:
            for service in (self.services.library, self.services.pages):
                try:
                    service.close()
                except Exception:  # noqa: BLE001 - cleanup must not hide the step's own error
                    pass
            self.services = None
        if self.qloop is not None and not self.qloop.is_closed():
            try:
                self._run_qt_for(0.1)
                self.qloop.close()  # stops qasync's executor threads (QThreads)
            except Exception:  # noqa: BLE001 - cleanup must not hide the step's own error
                pass
        if self.client is not None:
            try:
                self.client.close()
            except Exception:  # noqa: BLE001 - cleanup must not hide the step's own error
                pass
            self.client = None
        if self.loop is not None:
            self.loop.close()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # --- steps --------------------------------------------------------------------------

    def make_temp_library(self) -> str:
        import tempfile

        # $TMPDIR when set, strictly: a temp dir the user named but cannot use is a failure to
        # report, not something to route around silently.
        parent = os.environ.get("TMPDIR") or None
        self.tmp = Path(tempfile.mkdtemp(prefix="haiku-desk-self-test-", dir=parent))
        (self.tmp / "data").mkdir()
        probe = self.tmp / "data" / "probe"
        probe.write_bytes(b"ok")
        probe.unlink()
        return str(self.tmp)

    def start_qt(self) -> str:
        from PySide6.QtWidgets import QApplication

        self.app = QApplication.instance() or QApplication(sys.argv[:1])
        return f"platform {self.app.platformName()}"

    def generate_pdf(self) -> str:
        import pymupdf

        assert self.tmp is not None
        path = self.tmp / "otters.pdf"
        doc = pymupdf.open()
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 100), TITLE, fontname="hebo", fontsize=22)
        page.insert_text((72, 150), INTRO_HEADING, fontname="hebo", fontsize=16)
        for i, line in enumerate(INTRO_LINES):
            page.insert_text((72, 180 + i * 15), line, fontname="helv", fontsize=11)
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 100), RESULTS_HEADING, fontname="hebo", fontsize=16)
        for i, line in enumerate(FACT_LINES):
            page.insert_text((72, 130 + i * 15), line, fontname="helv", fontsize=11)
        doc.set_metadata({"title": TITLE})
        doc.save(path)
        doc.close()
        self.pdf = path
        return f"{path.stat().st_size} bytes, 2 pages"

    async def ingest(self) -> str:
        from haiku.rag.client import HaikuRAG
        from haiku.rag.config import load_config

        assert self.tmp is not None
        empty = self.tmp / "haiku.rag.yaml"
        empty.write_text("{}\n", encoding="utf-8")
        config = load_config(empty)  # built-in defaults: the local MiniLM embedder
        config.storage.data_dir = self.tmp / "data"
        self.config = config
        self.client = HaikuRAG(self.tmp / "library.lancedb", config, create=True)
        outcome = await self.client.ingest_file(self.pdf)
        if outcome.status != "ingested" or outcome.document is None:
            raise StepFailed(f"the PDF was not ingested: {outcome.status} ({outcome.reason})")
        document = outcome.document
        if document.index_state != "hybrid":
            raise StepFailed(f"the document has no vectors (index state {document.index_state!r})")
        info = await self.client.info()
        if not info["vectors"] or info["vectors"] != info["chunks"]:
            raise StepFailed(f"{info['chunks']} chunks but {info['vectors']} vectors")
        self.document = document
        embedder = "{provider}/{model}".format(**info["embedder"])
        return f"{info['chunks']} chunks, {info['vectors']} vectors, embedder {embedder}"

    async def search(self) -> str:
        results = await self.client.search(QUERY, limit=5, search_type="hybrid")
        if not results:
            raise StepFailed(f"hybrid search for {QUERY!r} found nothing")
        top = results[0]
        if not all(word in top.content for word in FACT_WORDS):
            raise StepFailed(f"the top result is not the survey passage: {top.content[:120]!r}")
        if FACT_PAGE not in top.page_numbers or not any(b.page == FACT_PAGE for b in top.boxes):
            raise StepFailed(f"the top result has no box on page {FACT_PAGE}: {top.boxes}")
        vector_only = await self.client.search(QUESTION, limit=3, search_type="vector")
        if not vector_only or vector_only[0].chunk_id != top.chunk_id:
            raise StepFailed("vector search does not find the survey passage first")
        self.top = top
        return f"{len(results)} results, top on page {FACT_PAGE}, vector search agrees"

    def ocr_runtime(self) -> str:
        """The runtime the OCR models load on here. Where OpenVINO is bundled it must be the
        one that loads them: a bundle without its CPU plugin or ONNX reader falls back to
        onnxruntime, reads the page right and is ~1.6x slower, which no other step would see."""
        import importlib.util

        from haiku.rag.ocr import runtime

        loaded = runtime()
        if importlib.util.find_spec("openvino") is not None and loaded != "openvino":
            raise StepFailed(
                f"OpenVINO is bundled but the OCR models loaded on {loaded} (see the log)"
            )
        return f"{loaded}, detector and recogniser"

    async def layout_model(self) -> str:
        """``processing.pdf_layout: layout``: PyMuPDF's ONNX layout analyser (the bundle keeps
        only the models it loads by default) reads the generated PDF without falling back to
        the fast heuristics."""
        from haiku.rag.client import HaikuRAG

        assert self.tmp is not None
        config = self.config.model_copy(deep=True)
        config.processing.pdf_layout = "layout"
        async with HaikuRAG(self.tmp / "layout.lancedb", config, create=True) as client:
            outcome = await client.ingest_file(self.pdf, embed=False)
        if outcome.status != "ingested" or outcome.document is None:
            raise StepFailed(f"the PDF was not ingested: {outcome.status} ({outcome.reason})")
        warnings = (outcome.document.metadata or {}).get("warnings") or []
        failed = [w for w in warnings if "layout model" in w]
        if failed:
            raise StepFailed(f"the layout model did not run: {failed[0]}")
        return f"{outcome.document.title!r} read with the layout model"

    def model_runtime(self) -> str:
        """The built-in llama.cpp runtime (``xllamacpp``, where the platform has its wheel)
        loads and lists its CPU backend; no model is loaded."""
        import importlib.util

        if importlib.util.find_spec("xllamacpp") is None:
            return "not installed on this platform (the provider says so in the app)"
        import xllamacpp

        devices = xllamacpp.get_device_info()
        if not devices:
            raise StepFailed("llama.cpp found no device, not even the CPU")
        names = ", ".join(str(d.get("name", d)) if isinstance(d, dict) else str(d) for d in devices)
        return f"xllamacpp {xllamacpp.__version__}: {names[:60]}"

    async def ocr_scan(self) -> str:
        """A page that is only an image of text (a scan) is recognised by the bundled OCR
        models in the parse worker and found by full-text search, with its box."""
        import pymupdf

        assert self.tmp is not None
        phrase = "Sea otters hold hands while sleeping"
        drawn = pymupdf.open()
        page = drawn.new_page(width=360, height=120)
        page.insert_text((24, 60), phrase, fontname="helv", fontsize=18)
        png = page.get_pixmap(dpi=150).tobytes("png")
        drawn.close()
        scan = pymupdf.open()
        scan.new_page(width=360, height=120).insert_image(pymupdf.Rect(0, 0, 360, 120), stream=png)
        path = self.tmp / "scan.pdf"
        scan.save(path)
        scan.close()
        outcome = await self.client.ingest_file(path, embed=False)
        if outcome.status != "ingested" or outcome.document is None:
            raise StepFailed(
                f"the scanned page was not ingested: {outcome.status} ({outcome.reason})"
            )
        results = await self.client.search("otters hold hands", limit=3, search_type="fts")
        hits = [r for r in results if r.document_id == outcome.document.id]
        if not hits or not any(b.page == 1 for b in hits[0].boxes):
            raise StepFailed("full-text search does not find the recognised text with a box")
        await self.client.delete_document(outcome.document.id)
        return f"recognised {hits[0].content[:40]!r}"

    async def render(self) -> str:
        from PySide6.QtGui import QColor, QImage, QPainter

        pages = await self.client.visualize_chunk(self.top, dpi=120)
        page = next((p for p in pages if p.page == FACT_PAGE), None)
        if page is None:
            raise StepFailed(f"no render of page {FACT_PAGE} (got pages {[p.page for p in pages]})")
        matches = [b for b in page.boxes if b.kind == "match"]
        if not matches:
            raise StepFailed("the rendered page carries no highlight box")
        image = QImage(
            page.samples, page.width, page.height, page.width * 3, QImage.Format.Format_RGB888
        ).copy()
        if image.isNull():
            raise StepFailed("PyMuPDF samples did not make a QImage")
        highlight = QColor(255, 170, 0, 110)
        painter = QPainter(image)
        for box in matches:
            painter.fillRect(box.x0, box.y0, box.x1 - box.x0, box.y1 - box.y0, highlight)
        painter.end()
        box = matches[0]
        # A pixel inside the box that was paper white before painting must now be tinted,
        # and paper outside every box must still be white.
        inside = _paper_pixel(page, box.x0, box.y0, box.x1, box.y1)
        if inside is None:
            raise StepFailed(f"no paper pixel inside the highlight box {box}")
        tinted = image.pixelColor(*inside)
        if not (tinted.red() > 200 and tinted.blue() < 200 and tinted.red() - tinted.blue() > 60):
            raise StepFailed(f"pixel {inside} inside the box is not highlighted: {tinted.name()}")
        outside = (box.x0 // 2, box.y0 // 2)
        if image.pixelColor(*outside).name() != "#ffffff":
            raise StepFailed(f"pixel {outside} outside every box is not white")
        self.image = image
        return f"{page.width}x{page.height} px, {len(matches)} box(es), pixel {inside} is {tinted.name()}"

    async def answer(self) -> str:
        """A question through ``haiku.rag.answering`` with compaction and the citation policy
        on, as the app and ``haiku-rag ask`` answer it, then a follow-up whose wire compaction
        must shrink. The model is the library's scripted one: it searches and cites through
        the tools the capabilities offer (the app never names a tool)."""
        import pydantic_ai.models

        from haiku.rag.answering import Conversation, ScriptedAnswer

        pydantic_ai.models.ALLOW_MODEL_REQUESTS = False  # FunctionModel only: nothing leaves
        script = ScriptedAnswer(ANSWER, query=QUERY)
        conversation = Conversation()
        done = await ask(self.client, QUESTION, conversation, script.model)
        if done.text != ANSWER:
            raise StepFailed(f"unexpected answer {done.text!r}")
        if not script.offered_evidence_tools:
            raise StepFailed(
                f"the model was not offered the search and cite tools: {script.offered}"
            )
        if len(done.citations) != 1:
            raise StepFailed(f"expected one citation, got {len(done.citations)}")
        citation = done.citations[0]
        if citation.document_id != self.document.id or FACT_PAGE not in citation.page_numbers:
            raise StepFailed(f"the citation does not point at page {FACT_PAGE} of the PDF")
        if not any(word in citation.content for word in FACT_WORDS) or not citation.boxes:
            raise StepFailed("the citation lacks the survey passage or its boxes")
        if done.grounding != "grounded" or done.basis != "cited":
            raise StepFailed(f"the answer's grounding is {done.grounding!r}, not 'grounded'")
        expected = ("haiku-rag", "haiku-rag-evidence-compaction", "haiku-rag-citation-policy")
        if done.capability_ids != expected:
            raise StepFailed(f"the agent ran with {done.capability_ids}, not {expected}")
        self.citation = citation

        # A second turn: compaction must shrink the first question's search to what was cited.
        follow_up = ScriptedAnswer("You're welcome.")
        thanks = await ask(self.client, "Thanks!", conversation, follow_up.model)
        if not follow_up.shown or not follow_up.shown[0].startswith("[Evidence cited earlier"):
            raise StepFailed("compaction did not rewrite the earlier search into its citations")
        saved = thanks.tokens.compaction_saved
        if saved is None:  # (0 is honest here: the one cited passage is the whole search)
            raise StepFailed("the follow-up reports no compaction figure")
        return (
            f"cited [{citation.index}] page {FACT_PAGE}, grounded, compaction and policy ran"
            f" (about {saved} tokens saved)"
        )

    async def docx_cited(self) -> str:
        """A Word file written with python-docx: ingested (heading and paragraphs kept), found,
        and cited through the same answering path as the PDF."""
        import docx

        assert self.tmp is not None
        path = self.tmp / "herons.docx"
        document = docx.Document()
        document.add_heading("Wetland birds", level=1)
        document.add_paragraph("Notes from the spring survey of the marsh and its reed beds.")
        document.add_heading(DOCX_HEADING, level=2)
        document.add_paragraph(DOCX_FACT)
        table = document.add_table(rows=2, cols=2)
        for row, texts in enumerate((("Species", "Nests"), ("Grey heron", "57"))):
            for column, text in enumerate(texts):
                table.cell(row, column).text = text
        document.save(str(path))
        return await self._ingest_and_cite(path, DOCX_QUERY, DOCX_FACT, DOCX_HEADING)

    async def epub_cited(self) -> str:
        """An EPUB (its container, package document and XHTML chapter, as the format lays them
        out in a zip): ingested, found and cited."""
        import zipfile

        assert self.tmp is not None
        path = self.tmp / "lighthouse.epub"
        chapter = (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Lighthouse</title></head>'
            f"<body><h1>{EPUB_HEADING}</h1><p>{EPUB_FACT}</p>"
            "<p>Gales closed the harbour for eleven days that winter.</p></body></html>"
        )
        opf = (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            '<dc:identifier id="id">self-test-epub</dc:identifier>'
            "<dc:title>The Skerry Light</dc:title><dc:language>en</dc:language></metadata>"
            '<manifest><item id="c3" href="chapter3.xhtml" media-type="application/xhtml+xml"/>'
            '</manifest><spine><itemref idref="c3"/></spine></package>'
        )
        container = (
            '<?xml version="1.0"?>\n'
            '<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>'
        )
        with zipfile.ZipFile(path, "w") as package:
            package.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
            package.writestr("META-INF/container.xml", container, zipfile.ZIP_DEFLATED)
            package.writestr("OEBPS/content.opf", opf, zipfile.ZIP_DEFLATED)
            package.writestr("OEBPS/chapter3.xhtml", chapter, zipfile.ZIP_DEFLATED)
        return await self._ingest_and_cite(path, EPUB_QUERY, EPUB_FACT, EPUB_HEADING)

    async def _ingest_and_cite(self, path: Path, query: str, fact: str, heading: str) -> str:
        from haiku.rag.answering import Conversation, ScriptedAnswer

        outcome = await self.client.ingest_file(path)
        if outcome.status != "ingested" or outcome.document is None:
            raise StepFailed(f"{path.name} was not ingested: {outcome.status} ({outcome.reason})")
        document = outcome.document
        if document.index_state != "hybrid":
            raise StepFailed(f"{path.name} has no vectors (index state {document.index_state!r})")
        reply = f"As the file says: {fact}"
        script = ScriptedAnswer(reply, query=query)
        done = await ask(self.client, query, Conversation(), script.model)
        if done.text != reply or len(done.citations) != 1:
            raise StepFailed(
                f"unexpected answer {done.text!r} with {len(done.citations)} citations"
            )
        citation = done.citations[0]
        if citation.document_id != document.id:
            raise StepFailed(f"the citation names {citation.document_uri}, not {path.name}")
        if fact not in citation.content:
            raise StepFailed(f"the cited passage lacks the fact: {citation.content[:120]!r}")
        if heading not in citation.headings:
            raise StepFailed(f"the citation's headings {citation.headings} lack {heading!r}")
        if done.grounding != "grounded":
            raise StepFailed(f"the answer's grounding is {done.grounding!r}, not 'grounded'")
        return f"{path.name}: cited [{citation.index}] under {' > '.join(citation.headings)!r}"

    async def mcp_answers(self) -> str:
        """``haiku-rag mcp`` started exactly as the Help dialog tells an MCP client to start it
        (``client_config``: in the bundle its own ``haiku-rag``), answering a real MCP client
        session over stdio: it lists its tools and finds the survey passage."""
        from mcp import Client, StdioServerParameters

        from haiku.rag.mcp_server import client_config

        assert self.tmp is not None
        entry = next(iter(client_config(str(self.tmp / "library.lancedb"))["mcpServers"].values()))
        home = self.tmp / "mcp-home"
        home.mkdir(exist_ok=True)
        env = {  # the server's own settings: built-in, like this test's (no user config)
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(self.tmp / "data"),
            "HF_HUB_OFFLINE": "1",
            "LC_CTYPE": os.environ.get("LC_CTYPE", "C.UTF-8"),
        }
        if os.environ.get("SYSTEMROOT"):  # Windows needs it to start any process
            env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
        async with Client(params, read_timeout_seconds=120) as session:
            tools = {t.name for t in (await session.list_tools()).tools}
            if "search" not in tools:
                raise StepFailed(f"the MCP server offers no search tool: {sorted(tools)}")
            result = await session.call_tool(
                "search", {"query": QUERY, "search_type": "fts", "limit": 3}
            )
            if result.is_error:
                raise StepFailed(f"the MCP search failed: {result.content}")
            data = result.structured_content
            hits = data["result"] if isinstance(data, dict) and set(data) == {"result"} else data
            if not hits or not all(word in hits[0]["text"] for word in FACT_WORDS):
                raise StepFailed(f"the MCP search did not find the survey passage: {hits!r:.200}")
        return f"{Path(entry['command']).name} {' '.join(entry['args'][-1:])}: {len(tools)} tools, search found page {hits[0]['pages']}"

    def show_window(self) -> str:
        """The app's own window over the self-test's library, as ``haiku-desk`` opens it."""
        from PySide6.QtCore import QSettings

        from haiku_desk.bridge import install_event_loop
        from haiku_desk.services import create_services
        from haiku_desk.views.main_window import MainWindow

        assert self.tmp is not None
        # Window state goes to the temporary folder, never to the user's own settings.
        QSettings.setDefaultFormat(QSettings.Format.IniFormat)
        QSettings.setPath(
            QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(self.tmp / "settings")
        )
        self.client.close()  # the app's library service is the one writer from here on
        self.client = None
        self.qloop = install_event_loop(self.app)
        self.services = create_services(self.tmp / "library.lancedb", self.config)
        opened: list[bool] = []
        self.services.library.opened.connect(lambda: opened.append(True))
        self.services.library.start()
        self._run_qt_until(lambda: bool(opened), 120, "the library did not open in the app")
        documents = [e for e in self.services.library.entries if e.searchable]
        if len(documents) != 3:  # the PDF, the Word file and the EPUB
            raise StepFailed(f"the app lists {len(documents)} searchable documents, not 3")
        self.window = MainWindow(self.services)
        self.window.show()
        self._run_qt_until(self.window.isVisible, 30, "the main window did not become visible")
        shown = "window"
        panel = getattr(self.window, "citation_panel", None)
        if self.citation is not None and panel is not None and hasattr(panel, "show_citation"):
            panel.open_in_system_viewer = False
            panel.show_citation(self.citation)
            shown = "window with the citation"
        self._run_qt_for(0.5)
        grab = self.window.grab()
        if grab.isNull() or grab.width() < 100:
            raise StepFailed("grabbing the main window gave no image")
        return f"{shown}, {grab.width()}x{grab.height()} grabbed"

    def _run_qt_until(self, predicate: Callable[[], bool], timeout: float, message: str) -> None:
        import asyncio

        async def poll() -> None:
            deadline = time.monotonic() + timeout
            while not predicate():
                if time.monotonic() > deadline:
                    raise StepFailed(f"{message} within {timeout:.0f} s")
                await asyncio.sleep(0.02)

        self.qloop.run_until_complete(poll())

    def _run_qt_for(self, seconds: float) -> None:
        import asyncio

        self.qloop.run_until_complete(asyncio.sleep(seconds))


def _paper_pixel(page: Any, x0: int, y0: int, x1: int, y1: int) -> tuple[int, int] | None:
    """A pixel inside the box that is white on the unpainted render."""
    stride = page.width * 3
    samples = page.samples
    for y in range(y0, y1):
        for x in range(x0, x1):
            i = y * stride + x * 3
            if samples[i] == samples[i + 1] == samples[i + 2] == 255:
                return x, y
    return None
