"""Word, PowerPoint, Excel, OpenDocument text and EPUB files made for tests: the Office files
with the libraries made to write them (python-docx, python-pptx, openpyxl), ODT and EPUB by
writing their ZIP and XML by hand (their layouts are published standards).

Each holds a heading or place, a paragraph with words found nowhere else, a list and a table
(header row + body rows), so a test can search for a passage and check its location.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def make_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.core_properties.title = "Otter field notes"
    document.add_heading("Otter field notes", 0)  # the Title style
    document.add_heading("Habitat", 1)
    document.add_paragraph("Riverbank otters hunt crayfish beneath willow roots at dusk.")
    document.add_heading("Diet", 2)
    document.add_paragraph("Fish in spring", style="List Bullet")
    document.add_paragraph("Frogs in summer", style="List Bullet")
    table = document.add_table(rows=3, cols=2)
    for r, (name, age) in enumerate([("Name", "Age"), ("Ollie", "4"), ("Wren", "7")]):
        table.cell(r, 0).text, table.cell(r, 1).text = name, age
    document.save(path)
    return path


def make_pptx(path: Path) -> Path:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    cover = deck.slides.add_slide(deck.slide_layouts[0])
    cover.shapes.title.text = "Estuary survey"
    cover.placeholders[1].text = "Spring season"
    results = deck.slides.add_slide(deck.slide_layouts[1])
    results.shapes.title.text = "Results"
    body = results.placeholders[1].text_frame
    body.text = "Kelp forests sheltered seventeen harbour seals"
    body.add_paragraph().text = "Tides peaked in April"
    results.notes_slide.notes_text_frame.text = "Mention the drone counts."
    counts = deck.slides.add_slide(deck.slide_layouts[5])
    counts.shapes.title.text = "Counts"
    table = counts.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for r, (site, seals) in enumerate([("Site", "Seals"), ("North cove", "11"), ("South spit", "6")]):
        table.cell(r, 0).text, table.cell(r, 1).text = site, seals
    deck.save(path)
    return path


def make_xlsx(path: Path) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    budget = book.active
    budget.title = "Budget"
    for row in [("Item", "Cost", "Supplier"), ("Inflatable boat", 1250.5, "Marlin Marine"), ("Hydrophone", 380, "Acoustica")]:
        budget.append(row)
    staff = book.create_sheet("Staff")
    staff.append(("Name", "Role"))
    staff.append(("Ingrid", "Skipper"))
    book.save(path)
    return path


ODT_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
  xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
  xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" office:version="1.3">
 <office:automatic-styles>
  <text:list-style style:name="L1"><text:list-level-style-number text:level="1"/></text:list-style>
 </office:automatic-styles>
 <office:body><office:text>
  <text:h text:outline-level="1">Glacier retreat</text:h>
  <text:p>Meltwater<text:s/>lakes doubled along the Vatnajökull margin<text:note text:note-class="footnote"><text:note-body><text:p>footnote text</text:p></text:note-body></text:note> since 1990.</text:p>
  <text:h text:outline-level="2">Method</text:h>
  <text:list text:style-name="L1">
   <text:list-item><text:p>Survey the moraine</text:p></text:list-item>
   <text:list-item><text:p>Photograph the terminus</text:p></text:list-item>
  </text:list>
  <table:table table:name="Lakes">
   <table:table-column table:number-columns-repeated="2"/>
   <table:table-header-rows>
    <table:table-row><table:table-cell><text:p>Lake</text:p></table:table-cell><table:table-cell><text:p>Area</text:p></table:table-cell></table:table-row>
   </table:table-header-rows>
   <table:table-row><table:table-cell><text:p>Jökulsárlón</text:p></table:table-cell><table:table-cell><text:p>27 km2</text:p></table:table-cell></table:table-row>
   <table:table-row><table:table-cell><text:p>Fjallsárlón</text:p></table:table-cell><table:table-cell><text:p>4 km2</text:p></table:table-cell></table:table-row>
  </table:table>
 </office:text></office:body>
</office:document-content>
"""

ODT_META = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="1.3">
 <office:meta><dc:title>Ice report</dc:title></office:meta>
</office:document-meta>
"""

ODT_MANIFEST = """<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">
 <manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>
 <manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>
 <manifest:file-entry manifest:full-path="meta.xml" manifest:media-type="text/xml"/>
</manifest:manifest>
"""


def make_odt(path: Path, content: str = ODT_CONTENT) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        package.writestr("mimetype", "application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED)
        package.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
        package.writestr("meta.xml", ODT_META, compress_type=zipfile.ZIP_DEFLATED)
        package.writestr("META-INF/manifest.xml", ODT_MANIFEST, compress_type=zipfile.ZIP_DEFLATED)
    path.write_bytes(buffer.getvalue())
    return path


EPUB_CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
 <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>
"""

EPUB_OPF = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
 <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
  <dc:identifier id="id">urn:uuid:0f0e0d0c</dc:identifier>
  <dc:title>The Lighthouse Keepers</dc:title>
  <dc:language>en</dc:language>
 </metadata>
 <manifest>
  <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
  <item id="c1" href="text/chapter%201.xhtml" media-type="application/xhtml+xml"/>
  <item id="c2" href="text/chapter2.xhtml" media-type="application/xhtml+xml"/>
  <item id="css" href="style.css" media-type="text/css"/>
 </manifest>
 <spine><itemref idref="c1"/><itemref idref="c2"/></spine>
</package>
"""

CHAPTER = """<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title></head>
<body><h1>{title}</h1>{body}</body></html>
"""


def make_epub(path: Path) -> Path:
    chapter1 = CHAPTER.format(
        title="Chapter 1: The Lamp",
        body="<p>The keeper trimmed the paraffin wick every midnight through the gale.</p>"
        "<ul><li>Brass polish</li><li>Spare mantles</li></ul>",
    )
    chapter2 = CHAPTER.format(
        title="Chapter 2: The Log",
        body="<p>Entries record passing schooners.</p>"
        "<table><tr><th>Ship</th><th>Year</th></tr><tr><td>Marigold</td><td>1887</td></tr>"
        "<tr><td>Petrel</td><td>1891</td></tr></table>",
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        package.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        package.writestr("META-INF/container.xml", EPUB_CONTAINER, compress_type=zipfile.ZIP_DEFLATED)
        package.writestr("OEBPS/content.opf", EPUB_OPF, compress_type=zipfile.ZIP_DEFLATED)
        package.writestr("OEBPS/nav.xhtml", CHAPTER.format(title="Contents", body="<p>not in the spine</p>"))
        package.writestr("OEBPS/text/chapter 1.xhtml", chapter1, compress_type=zipfile.ZIP_DEFLATED)
        package.writestr("OEBPS/text/chapter2.xhtml", chapter2, compress_type=zipfile.ZIP_DEFLATED)
        package.writestr("OEBPS/style.css", "p { margin: 0 }")
    path.write_bytes(buffer.getvalue())
    return path
