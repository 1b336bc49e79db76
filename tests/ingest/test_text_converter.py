"""Markdown, plain text, source code and the native HTML converter."""

from __future__ import annotations

import pytest
from docling_core.types.doc import (
    CodeItem,
    CodeLanguageLabel,
    DocItemLabel,
    DoclingDocument,
    ListGroup,
    TableItem,
    TextItem,
)

from haiku.rag.errors import EmptyDocumentError, UnsupportedSourceError
from haiku.rag.ingest.office import convert_html
from haiku.rag.ingest.text import (
    CODE_BLOCK_MAX_LINES,
    MAX_ITEM_CHARS,
    convert_code,
    convert_markdown,
    convert_plain_text,
    decode_text,
)

MARKDOWN = b"""---
layout: post
---
# Field Guide to River Otters

Otters groom their **dense fur** for hours, as the [survey](https://example.org/s)
by the Lutra society describes.

## Habitat

- clear rivers with
  overhanging roots
- estuaries
1. dig a holt
2. raise the pups

| Name  | Age |
|-------|----:|
| Ollie | 3   |
| Pip   | 5   |

```python
def swim(otter):
    return otter.speed * 2
```

Diet
----

> Mostly fish, sometimes crayfish.
"""


def _items(doc: DoclingDocument) -> list[tuple[str, str]]:
    out = []
    for item, _ in doc.iterate_items():
        label = item.label.value
        if isinstance(item, TableItem):
            out.append((label, " | ".join(cell.text for row in item.data.grid for cell in row)))
        elif isinstance(item, TextItem):
            out.append((label, item.text))
    return out


def test_markdown_structure():
    conversion = convert_markdown(MARKDOWN, source="otters.md")
    assert conversion.mime_type == "text/markdown"
    assert conversion.title == "Field Guide to River Otters"
    assert _items(conversion.document) == [
        ("title", "Field Guide to River Otters"),
        ("text", "Otters groom their dense fur for hours, as the survey by the Lutra society describes."),
        ("section_header", "Habitat"),
        ("list_item", "clear rivers with overhanging roots"),
        ("list_item", "estuaries"),
        ("list_item", "dig a holt"),
        ("list_item", "raise the pups"),
        ("table", "Name | Age | Ollie | 3 | Pip | 5"),
        ("code", "def swim(otter):\n    return otter.speed * 2"),
        ("section_header", "Diet"),
        ("text", "Mostly fish, sometimes crayfish."),
    ]
    assert conversion.document.pages == {}


def test_markdown_heading_levels_lists_and_code_language():
    doc = convert_markdown(MARKDOWN, source="otters.md").document
    headings = [item for item, _ in doc.iterate_items() if item.label == DocItemLabel.SECTION_HEADER]
    # The single H1 is the title, so "## Habitat" is the first heading level.
    assert [(h.text, h.level) for h in headings] == [("Habitat", 1), ("Diet", 1)]
    items = [item for item, _ in doc.iterate_items() if item.label == DocItemLabel.LIST_ITEM]
    assert [item.enumerated for item in items] == [False, False, True, True]
    groups = [item.parent.resolve(doc) for item in items]
    assert all(isinstance(group, ListGroup) for group in groups)
    assert groups[0] is groups[1] and groups[2] is groups[3] and groups[0] is not groups[2]
    (code,) = [item for item, _ in doc.iterate_items() if isinstance(item, CodeItem)]
    assert code.code_language == CodeLanguageLabel.PYTHON
    (table,) = [item for item, _ in doc.iterate_items() if isinstance(item, TableItem)]
    assert [cell.column_header for cell in table.data.grid[0]] == [True, True]


def test_markdown_with_several_top_level_headings_has_no_title():
    conversion = convert_markdown(b"# One\n\ntext\n\n# Two\n\n## Two.a\n", source="n.md")
    doc = conversion.document
    assert [(i.label.value, getattr(i, "level", None), i.text) for i, _ in doc.iterate_items()] == [
        ("section_header", 1, "One"), ("text", None, "text"),
        ("section_header", 1, "Two"), ("section_header", 2, "Two.a"),
    ]
    assert conversion.title == "One"


def test_markdown_front_matter_title_wins():
    conversion = convert_markdown(b"---\ntitle: 'Otter Notes'\n---\n\nSome text.\n", source="f.md")
    assert conversion.title == "Otter Notes"
    assert _items(conversion.document) == [("text", "Some text.")]


def test_plain_text_paragraphs_and_underlined_headings():
    data = b"Otter Survey\n============\n\nThe survey ran\nfor three weeks.\n\n\nMethods\n-------\nNets were not used.\n"
    conversion = convert_plain_text(data, source="survey.rst")
    assert conversion.mime_type == "text/plain"
    assert conversion.title == "Otter Survey"
    doc = conversion.document
    assert [(i.label.value, getattr(i, "level", None), i.text) for i, _ in doc.iterate_items()] == [
        ("section_header", 1, "Otter Survey"),
        ("text", None, "The survey ran for three weeks."),
        ("section_header", 2, "Methods"),
        ("text", None, "Nets were not used."),
    ]


def test_code_file_is_split_into_top_level_blocks():
    source = b'''import math


def area(r):
    """Circle area."""
    return math.pi * r * r


class Otter:
    def swim(self):
        return 1

    def dive(self):
        return 2
'''
    conversion = convert_code(source, source="geometry.py", extension=".py")
    blocks = [item for item, _ in conversion.document.iterate_items()]
    assert all(isinstance(b, CodeItem) and b.code_language == CodeLanguageLabel.PYTHON for b in blocks)
    assert [b.text.splitlines()[0] for b in blocks] == ["import math", "def area(r):", "class Otter:"]
    assert "def dive(self):" in blocks[2].text


def test_long_code_without_blank_lines_is_cut():
    lines = "\n".join(f"x{i} = {i}" for i in range(200)).encode()
    blocks = [item.text for item, _ in convert_code(lines, source="gen.py", extension=".py").document.iterate_items()]
    assert len(blocks) >= 3
    assert all(len(b.splitlines()) <= CODE_BLOCK_MAX_LINES for b in blocks)
    assert "\n".join(blocks).splitlines() == lines.decode().splitlines()


def test_minified_one_line_file_is_cut_into_pieces():
    data = ("{" + ",".join(f'"k{i}": {i}' for i in range(3000)) + "}").encode()
    blocks = [item.text for item, _ in convert_code(data, source="dump.json", extension=".json").document.iterate_items()]
    assert len(blocks) > 1
    assert all(len(b) <= MAX_ITEM_CHARS for b in blocks)
    assert "".join(blocks) == data.decode()


def test_a_text_file_without_blank_lines_is_cut_into_bounded_paragraphs():
    lines = [f"2026-11-30 12:{i // 60:02d}:{i % 60:02d} otter sighted at weir {i}" for i in range(400)]
    doc = convert_plain_text("\n".join(lines).encode(), source="sightings.log").document
    texts = [item.text for item, _ in doc.iterate_items()]
    assert len(texts) > 1 and all(len(t) <= MAX_ITEM_CHARS for t in texts)
    assert " ".join(texts) == " ".join(lines)


def test_code_language_for_config_files_without_a_docling_label():
    doc = convert_code(b"[tool]\nname = 'x'\n", source="pyproject.toml", extension=".toml").document
    (item,) = [item for item, _ in doc.iterate_items()]
    assert item.code_language == CodeLanguageLabel.UNKNOWN


@pytest.mark.parametrize(
    ("data", "text", "warnings"),
    [
        ("café".encode(), "café", []),
        (b"\xef\xbb\xbfcaf\xc3\xa9", "café", []),
        ("café".encode("utf-16"), "café", []),
        ("café".encode("latin-1"), "café", ["notes.txt: not valid UTF-8; read as Latin-1"]),
        (b"a\r\nb\rc", "a\nb\nc", []),
    ],
    ids=["utf8", "utf8-bom", "utf16-bom", "latin1", "newlines"],
)
def test_decoding(data: bytes, text: str, warnings: list[str]):
    assert decode_text(data, source="notes.txt") == (text, warnings)


def test_binary_file_is_rejected():
    with pytest.raises(UnsupportedSourceError, match=r"^blob\.txt: looks like a binary file"):
        convert_plain_text(b"ELF\x00\x01\x02binary", source="blob.txt")


def test_whitespace_only_file_is_empty():
    with pytest.raises(EmptyDocumentError, match=r"^blank\.md: "):
        convert_markdown(b" \n\t\n", source="blank.md")


def test_native_html():
    html = b"""<html><head><title>Otter Facts</title><style>p {color: red}</style></head>
    <body><nav>Home | About</nav><h1>Otters</h1>
    <p>Otters are <b>playful</b> &amp; clever,<br>and they hold hands.</p>
    <ul><li>Rivers</li><li>Coasts</li></ul>
    <table><tr><th>Name</th><th>Age</th></tr><tr><td>Ollie <i>the</i> otter</td><td>3</td></tr></table>
    <pre>def f():
    return 1</pre><script>alert('x')</script></body></html>"""
    conversion = convert_html(html, source="otters.html")
    assert conversion.title == "Otter Facts"
    assert conversion.mime_type == "text/html"
    assert _items(conversion.document) == [
        ("section_header", "Otters"),
        ("text", "Otters are playful & clever, and they hold hands."),
        ("list_item", "Rivers"),
        ("list_item", "Coasts"),
        ("table", "Name | Age | Ollie the otter | 3"),
        ("code", "def f():\n    return 1"),
    ]
