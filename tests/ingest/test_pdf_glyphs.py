"""Glyphs stored as the page shows them (generated PDFs, real conversion and chunking):

- a spacing accent that TeX (or a typesetter) draws as a glyph of its own over or under its
  letter is composed with that letter ("Jim´enez" -> "Jiménez"), in either drawing order;
  one standing on its own ("Rˆ3", a prime) is left where it is;
- ZapfDingbats without a Unicode map: MuPDF extracts glyph ``a19`` (✓) as U+0013, which was
  dropped, emptying a comparison table's ✓/✗ column;
- a symbol font's bullet extracted as a C1 control character (U+0084) becomes "•", each
  list item staying an item of its own.
"""

from __future__ import annotations

import unicodedata

import pymupdf
import pytest

from haiku.rag.ingest.chunker import chunk_document
from haiku.rag.ingest.items import ItemTexts
from haiku.rag.ingest.pdf import convert_pdf

SIZE = 11.0
# the builtin Times embedded as a font with a Unicode map: its spacing accents extract as
# the characters they are (U+00B4, U+02DC, ...), as TeX's Type 1 fonts do
TIMES = pymupdf.Font("tiro")


def _width(text: str) -> float:
    return TIMES.text_length(text, SIZE)


class _TexPage:
    """Writes text the way TeX sets an accented letter: the letter and a spacing accent
    glyph, the accent centred over the letter (raised over a capital), drawn before the
    letter (TeX's ``\\accent``) or after it (other typesetters, and TeX's cedilla)."""

    def __init__(self, page: pymupdf.Page, y: float, x: float = 72.0) -> None:
        self.page, self.y, self.x = page, y, x
        page.insert_font(fontname="tex", fontbuffer=TIMES.buffer)

    def text(self, text: str, fontname: str = "tex") -> None:
        self.page.insert_text((self.x, self.y), text, fontname=fontname, fontsize=SIZE)
        self.x += _width(text) if fontname == "tex" else pymupdf.get_text_length(text, fontname, SIZE)

    def accented(self, letter: str, accent: str, *, after: bool = False, raise_by: float = 0.0, fontname: str = "tex") -> None:
        letter_width = _width(letter) if fontname == "tex" else pymupdf.get_text_length(letter, fontname, SIZE)
        accent_x = self.x + (letter_width - _width(accent)) / 2
        if not after:
            self.page.insert_text((accent_x, self.y - raise_by), accent, fontname="tex", fontsize=SIZE)
        self.page.insert_text((self.x, self.y), letter, fontname=fontname, fontsize=SIZE)
        if after:
            self.page.insert_text((accent_x, self.y - raise_by), accent, fontname="tex", fontsize=SIZE)
        self.x += letter_width


def _tex_line(y: float = 100) -> tuple[pymupdf.Document, _TexPage]:
    """A new PDF and a line written TeX's way on its page, at height ``y``."""
    doc = pymupdf.open()
    return doc, _TexPage(doc.new_page(), y)


def _accents_pdf() -> bytes:
    doc, first = _tex_line()
    page = first.page
    first.text("The study by Jim")
    first.accented("e", "\u00b4")
    first.text("nez and M")
    first.accented("u", "\u00a8")
    first.text("ller was cited by Fran")
    first.accented("c", "\u00b8", after=True)
    first.text("ois.")
    second = _TexPage(page, 114)
    second.text("It names the Ag")
    second.accented("e", "\u02c6")
    second.text("ncia Nacional de Avia")
    second.accented("c", "\u00b8", after=True)
    second.accented("a", "\u02dc", after=True)
    second.text("o Civil, a na")
    second.accented("\u0131", "\u00a8")  # TeX's \"\i: a dieresis over a dotless i
    second.text("ve model and ")
    second.accented("S", "\u02c7", raise_by=2.5)  # over a capital, raised
    second.text("trumbelj.")
    data = doc.tobytes()
    doc.close()
    return data


def _markdown(data: bytes) -> str:
    return ItemTexts(convert_pdf(data, source="accents.pdf").document).document_markdown()


def test_spacing_accents_over_their_letters_are_composed():
    data = _accents_pdf()
    with pymupdf.open(stream=data) as doc:  # the trap is real: MuPDF extracts them apart
        layer = doc[0].get_text()
        assert "Jim\u00b4enez" in layer and "M\u00a8uller" in layer and "Aviac\u00b8a\u02dco" in layer
    conversion = convert_pdf(data, source="accents.pdf")
    text = ItemTexts(conversion.document).document_markdown()
    expected = (
        "The study by Jiménez and Müller was cited by François. It names the Agência Nacional "
        "de Aviação Civil, a naïve model and Štrumbelj."
    )
    assert text == unicodedata.normalize("NFC", expected)
    assert unicodedata.is_normalized("NFC", text)
    # stored, quoted and highlighted so: one chunk with that text, each line's provenance
    # slicing exactly its printed words, its box the printed line's
    chunks = chunk_document(conversion.document, max_tokens=256)
    assert [c.text for c in chunks] == [text]
    item = conversion.document.texts[0]
    first, second = item.prov
    assert item.text[first.charspan[0] : first.charspan[1]] == "The study by Jiménez and Müller was cited by François."
    assert item.text[second.charspan[0] : second.charspan[1]].endswith("naïve model and Štrumbelj.")
    assert first.bbox.l == pytest.approx(72.0, abs=0.5)
    assert first.bbox.r == pytest.approx(72.0 + _width("The study by Jiménez and Müller was cited by François."), abs=1.0)


def test_a_math_accent_in_another_font_than_its_letter_is_composed():
    """TeX's math: the tilde from the roman font over an italic m (two spans)."""
    doc, line = _tex_line()
    line.text("We use ")
    line.accented("m", "\u02dc", fontname="tiit")
    line.text(" = 24 negative passages in all of the experiments.")
    text = _markdown(doc.tobytes())
    assert text == "We use m\u0303 = 24 negative passages in all of the experiments."


def test_accents_standing_on_their_own_are_left_alone():
    """An accent with its own advance between two glyphs ("Rˆ3", "f´") is not over a letter;
    nor is one over a digit or a sign."""
    doc, line = _tex_line()
    line.text("The method R\u02c63 and the value f\u00b4 with x\u02dc stay as printed, and ")
    line.accented("3", "\u02c6")
    line.text(" too.")
    text = _markdown(doc.tobytes())
    assert text == "The method R\u02c63 and the value f\u00b4 with x\u02dc stay as printed, and \u02c63 too."


def _font(doc: pymupdf.Document, base: str, to_unicode: dict[int, str] | None = None) -> int:
    """A simple Type 1 font object by name, not embedded (MuPDF uses its own base-14 or
    substitute font), with a ToUnicode map when given."""
    xref = doc.get_new_xref()
    extra = ""
    if to_unicode is not None:
        cmap = doc.get_new_xref()
        doc.update_object(cmap, "<<>>")
        pairs = "\n".join(f"<{code:02X}> <{ord(ch):04X}>" for code, ch in to_unicode.items())
        doc.update_stream(
            cmap,
            (
                "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
                "/CMapName /Custom def /CMapType 2 def\n"
                "1 begincodespacerange <00> <FF> endcodespacerange\n"
                f"{len(to_unicode)} beginbfchar\n{pairs}\nendbfchar\n"
                "endcmap CMapName currentdict /CMap defineresource pop end end"
            ).encode(),
        )
        extra = f"/ToUnicode {cmap} 0 R"
    doc.update_object(xref, f"<</Type/Font/Subtype/Type1/BaseFont/{base}{extra}>>")
    return xref


def _page_with_stream(doc: pymupdf.Document, fonts: dict[str, int], stream: str) -> None:
    page = doc.new_page(width=595, height=842)
    entries = "".join(f"/{name} {xref} 0 R" for name, xref in fonts.items())
    doc.xref_set_key(page.xref, "Resources", f"<</Font<<{entries}>>>>")
    content = doc.get_new_xref()
    doc.update_object(content, "<<>>")
    doc.update_stream(content, stream.encode("latin-1"))
    doc.xref_set_key(page.xref, "Contents", f"{content} 0 R")


def _actual(code: str, font: str, x: float, y: float, shown: str) -> str:
    """``shown`` drawn with the actual text U+``code`` (what the text layer then gives)."""
    return f"/Span<</ActualText<FEFF{code}>>> BDC\n" + _show(font, x, y, shown) + "EMC\n"


def _helvetica_pdf(stream: str) -> bytes:
    """One page drawn by ``stream`` in Helvetica (font /F1)."""
    doc = pymupdf.open()
    _page_with_stream(doc, {"F1": _font(doc, "Helvetica")}, stream)
    return doc.tobytes()


def _show(font: str, x: float, y: float, text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"BT /{font} 10 Tf {x:.2f} {y:.2f} Td ({escaped}) Tj ET\n"


ROWS = [("Random", "7", "7", "47.0"), ("BM25", "7", "7", "50.0"), ("Gold", "7", "3", "51.1"), ("Gold", "31", "3", "52.1")]


def _dingbat_table_pdf(*, to_unicode: bool = False) -> bytes:
    """A results table whose IB column marks in-batch training with pifont's \\ding{51} ✓
    and \\ding{55} ✗ (ZapfDingbats codes "3" and "7"), the font without a Unicode map."""
    doc = pymupdf.open()
    zapf = _font(doc, "ZapfDingbats", {0x33: "3", 0x37: "7"} if to_unicode else None)
    helv = _font(doc, "Helvetica")
    stream = _show("F1", 72, 760, "Table 3: Comparison of training schemes on the development set.")
    header = ["Type", "#N", "IB", "Top-5"]
    xs = [72, 160, 230, 300]
    stream += "".join(_show("F1", x, 730, h) for x, h in zip(xs, header, strict=True))
    for r, (kind, n, mark, top) in enumerate(ROWS):
        y = 712 - 16 * r
        stream += _show("F1", xs[0], y, kind) + _show("F1", xs[1], y, n)
        stream += _show("ZD", xs[2], y, mark) + _show("F1", xs[3], y, top)
    stream += _show("F1", 72, 600, "In-batch training improves the results substantially on every measure.")
    _page_with_stream(doc, {"F1": helv, "ZD": zapf}, stream)
    return doc.tobytes()


def test_zapf_dingbats_check_marks_in_a_table_are_kept():
    data = _dingbat_table_pdf()
    with pymupdf.open(stream=data) as doc:  # the trap is real: glyph a19 extracts as U+0013
        assert "\x13" in doc[0].get_text() and "\x17" in doc[0].get_text()
    document = convert_pdf(data, source="dpr.pdf").document
    assert len(document.tables) == 1
    grid = [[cell.text for cell in row] for row in document.tables[0].data.grid]
    column = [row[2] for row in grid]
    assert column == ["IB", "\u2717", "\u2717", "\u2713", "\u2713"]
    text = ItemTexts(document).document_markdown()
    assert "| Gold | 31 | \u2713 | 52.1 |" in text


def test_a_dingbat_font_with_a_unicode_map_is_read_by_its_map():
    """A font that says what its glyphs are is believed: only control characters, which a
    Unicode map cannot mean, are glyph numbers."""
    data = _dingbat_table_pdf(to_unicode=True)
    grid = [[cell.text for cell in row] for row in convert_pdf(data, source="dpr.pdf").document.tables[0].data.grid]
    assert [row[2] for row in grid] == ["IB", "7", "7", "3", "3"]


def test_zapf_dingbats_bullets_without_a_unicode_map_make_a_list():
    """\\ding{108} (●, glyph a71, code "l") extracts as "G": each item began "G ..."."""
    doc = pymupdf.open()
    zapf = _font(doc, "ZapfDingbats")
    helv = _font(doc, "Helvetica")
    items = ["Parse the PDF with its fonts", "Chunk the text by headings", "Embed every chunk offline"]
    stream = _show("F1", 72, 760, "The pipeline has three steps:")
    for i, item in enumerate(items):
        y = 740 - 16 * i
        stream += _show("ZD", 80, y, "l") + _show("F1", 92, y, item)
    _page_with_stream(doc, {"F1": helv, "ZD": zapf}, stream)
    data = doc.tobytes()
    assert "G" in pymupdf.open(stream=data)[0].get_text().split()  # the trap
    document = convert_pdf(data, source="steps.pdf").document
    assert [t.text for t in document.texts if t.label == "list_item"] == items
    assert "G" not in ItemTexts(document).document_markdown()


def test_symbol_font_bullets_extracted_as_c1_controls_become_bullets_and_stay_items():
    """A symbol font's bullet whose text is U+0084 (as in a real questionnaire: its actual text
    says U+0084): stored as "•" list marks, each item its own list item, none merged into a
    paragraph."""
    doc = pymupdf.open()
    wing = _font(doc, "Wingdings")
    helv = _font(doc, "Helvetica")
    items = [
        "They work in parallel to State funded private practitioners",
        "They coordinate appointments of private practitioners",
        "They supervise, coach or mentor private practitioners",
    ]
    stream = _show("F1", 72, 760, "What do institutional legal aid providers do?")
    for i, item in enumerate(items):
        y = 740 - 16 * i
        stream += _actual("0084", "WD", 80, y, "l")
        stream += _show("F1", 92, y, item)
    _page_with_stream(doc, {"F1": helv, "WD": wing}, stream)
    data = doc.tobytes()
    assert "\x84" in pymupdf.open(stream=data)[0].get_text()  # the trap
    document = convert_pdf(data, source="survey.pdf").document
    assert [t.text for t in document.texts if t.label == "list_item"] == items
    text = ItemTexts(document).document_markdown()
    assert "\x84" not in text and "•" not in text.replace("- ", "")


def test_c1_controls_in_a_text_font_are_not_made_bullets():
    """Only a symbol font's control character is taken for a bullet."""
    stream = _show("F1", 72, 760, "A line with an odd ") + _actual("0084", "F1", 160, 760, "x")
    data = _helvetica_pdf(stream + _show("F1", 166, 760, " character in its running text."))
    assert "\x84" in pymupdf.open(stream=data)[0].get_text()
    text = ItemTexts(convert_pdf(data, source="odd.pdf").document).document_markdown()
    assert "\u2022" not in text and "\x84" in text


def test_a_control_character_beside_readable_text_is_not_stored():
    """InDesign's "indent to here" (U+0007) before a reference's first word: a real report's
    list was stored as "1. \\x07E Senkus et al."."""
    stream = _show("F1", 72, 760, "1. ") + _actual("0007", "F1", 85, 760, " ")
    data = _helvetica_pdf(stream + _show("F1", 85, 760, "E Senkus et al., Primary breast cancer: guidelines for diagnosis."))
    assert "\x07" in pymupdf.open(stream=data)[0].get_text()  # the trap
    text = ItemTexts(convert_pdf(data, source="report.pdf").document).document_markdown()
    assert "\x07" not in text
    assert text.endswith("E Senkus et al., Primary breast cancer: guidelines for diagnosis.")


def test_pieces_of_a_big_delimiter_are_stored_as_their_unicode_characters():
    """cmex10's "parenlefttp"/"parenleftbt" glyphs: the Adobe Glyph List's private-use code
    points (U+F8EB, U+F8ED), which no font shows, become U+239B/U+239D."""
    stream = _show("F1", 72, 760, "The matrix A = ") + _actual("F8EB", "F1", 150, 760, "(") + _actual("F8ED", "F1", 150, 760, "(")
    data = _helvetica_pdf(stream + _show("F1", 160, 760, "a b c d ) is invertible when its determinant is not zero."))
    assert "\uf8eb" in pymupdf.open(stream=data)[0].get_text()  # the trap
    text = ItemTexts(convert_pdf(data, source="matrix.pdf").document).document_markdown()
    assert "\u239b" in text and "\u239d" in text
    assert not any("\ue000" <= ch <= "\uf8ff" for ch in text)


def _arabic_pdf() -> bytes:
    """Arabic drawn as an RTL PDF draws it (glyphs left to right, the last letter first) in
    an embedded font whose Unicode map gives the lam-alef ligature glyph its two letters in
    logical order, lam first (as Word writes it): "الإنتاج" on the first line, "الج" (a
    plain alef then lam, two glyphs) on the second, "الخط" (a lam-kha ligature) on the third."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="ar", fontbuffer=TIMES.buffer)
    page.insert_text((72, 100), "abcdefgh", fontname="ar", fontsize=14)  # the font and its glyph ids
    doc = pymupdf.open("pdf", doc.tobytes())
    page = doc[0]
    xref = page.get_fonts()[0][0]
    gid = {"a": 0x42, "b": 0x43, "c": 0x44, "d": 0x45, "e": 0x46, "f": 0x47, "g": 0x48, "h": 0x49}
    letters = {
        "a": "\u062c", "b": "\u0627", "c": "\u062a", "d": "\u0646", "e": "\u0644\u0625", "f": "\u0644",
        "g": "\u0644\u062e", "h": "\u0637",
    }
    pairs = "\n".join(f"<{gid[k]:04X}> <{''.join(f'{ord(ch):04X}' for ch in v)}>" for k, v in letters.items())
    cmap = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n/CMapName /Custom def /CMapType 2 def\n"
        "1 begincodespacerange <0000> <FFFF> endcodespacerange\n"
        f"{len(letters)} beginbfchar\n{pairs}\nendbfchar\nendcmap CMapName currentdict /CMap defineresource pop end end"
    )
    doc.update_stream(int(doc.xref_get_key(xref, "ToUnicode")[1].split()[0]), cmap.encode())

    def glyphs(visual: str) -> str:
        return "".join(f"{gid[k]:04X}" for k in visual)

    stream = f"BT /ar 14 Tf 300 700 Td <{glyphs('abcdeb')}> Tj ET BT /ar 14 Tf 300 670 Td <{glyphs('afb')}> Tj ET"
    stream += f" BT /ar 14 Tf 300 640 Td <{glyphs('hgb')}> Tj ET"
    doc.update_stream(page.get_contents()[0], stream.encode())
    return doc.tobytes()


def test_arabic_ligatures_keep_their_letters_in_order():
    """MuPDF gives a ligature's two letters in reverse (the first without width): real Arabic
    PDFs' "الإنتاجية", "المشكلات" and "الخطوط" were stored "اإلنتاجية", "المشكالت", "اخلطوط"."""
    data = _arabic_pdf()
    assert pymupdf.open(stream=data)[0].get_text().split() == [
        "\u0627\u0625\u0644\u0646\u062a\u0627\u062c", "\u0627\u0644\u062c", "\u0627\u062e\u0644\u0637",
    ]
    text = ItemTexts(convert_pdf(data, source="arabic.pdf").document).document_markdown()
    assert text.split() == ["\u0627\u0644\u0625\u0646\u062a\u0627\u062c", "\u0627\u0644\u062c", "\u0627\u0644\u062e\u0637"]
