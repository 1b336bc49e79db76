"""Markdown, plain text and source code -> DoclingDocument, natively (no docling backend).

These documents have no pages, so their items carry no provenance; citations point at the
item text. Markdown keeps its structure (headings, lists, pipe tables, fenced code); plain
text becomes paragraphs; a code file becomes one CODE item per top-level block.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from docling_core.types.doc import (
    CodeLanguageLabel,
    DocItemLabel,
    DoclingDocument,
    GroupItem,
    TableCell,
    TableData,
)

from haiku.rag.errors import EmptyDocumentError, UnsupportedSourceError
from haiku.rag.ingest.records import Conversion

MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown", ".mdown", ".mkd"})
PLAIN_TEXT_EXTENSIONS = frozenset({".txt", ".text", ".rst", ".log", ".csv", ".tsv", ".org", ".adoc"})
# Extension -> docling's language label (None: a code-like file docling has no label for).
CODE_LANGUAGES: dict[str, CodeLanguageLabel | None] = {
    ".py": CodeLanguageLabel.PYTHON,
    ".pyi": CodeLanguageLabel.PYTHON,
    ".js": CodeLanguageLabel.JAVASCRIPT,
    ".mjs": CodeLanguageLabel.JAVASCRIPT,
    ".jsx": CodeLanguageLabel.JAVASCRIPT,
    ".ts": CodeLanguageLabel.TYPESCRIPT,
    ".tsx": CodeLanguageLabel.TYPESCRIPT,
    ".go": CodeLanguageLabel.GO,
    ".rs": CodeLanguageLabel.RUST,
    ".java": CodeLanguageLabel.JAVA,
    ".kt": CodeLanguageLabel.KOTLIN,
    ".scala": CodeLanguageLabel.SCALA,
    ".c": CodeLanguageLabel.C,
    ".h": CodeLanguageLabel.C,
    ".cpp": CodeLanguageLabel.C_PLUS_PLUS,
    ".cc": CodeLanguageLabel.C_PLUS_PLUS,
    ".cxx": CodeLanguageLabel.C_PLUS_PLUS,
    ".hpp": CodeLanguageLabel.C_PLUS_PLUS,
    ".cs": CodeLanguageLabel.C_SHARP,
    ".swift": CodeLanguageLabel.SWIFT,
    ".rb": CodeLanguageLabel.RUBY,
    ".php": CodeLanguageLabel.PHP,
    ".lua": CodeLanguageLabel.LUA,
    ".pl": CodeLanguageLabel.PERL,
    ".jl": CodeLanguageLabel.JULIA,
    ".hs": CodeLanguageLabel.HASKELL,
    ".ex": CodeLanguageLabel.ELIXIR,
    ".exs": CodeLanguageLabel.ELIXIR,
    ".erl": CodeLanguageLabel.ERLANG,
    ".dart": CodeLanguageLabel.DART,
    ".sql": CodeLanguageLabel.SQL,
    ".sh": CodeLanguageLabel.BASH,
    ".bash": CodeLanguageLabel.BASH,
    ".zsh": CodeLanguageLabel.BASH,
    ".css": CodeLanguageLabel.CSS,
    ".xml": CodeLanguageLabel.XML,
    ".tex": CodeLanguageLabel.LATEX,
    ".json": CodeLanguageLabel.JSON,
    ".yaml": CodeLanguageLabel.YAML,
    ".yml": CodeLanguageLabel.YAML,
    ".toml": None,
    ".ini": None,
    ".cfg": None,
}
CODE_EXTENSIONS = frozenset(CODE_LANGUAGES)

# Code blocks: cut at a top-level line once a block has this many lines, and never let a
# block grow past the hard limit (minified or generated files have no blank lines).
CODE_BLOCK_TARGET_LINES = 40
CODE_BLOCK_MAX_LINES = 80
# No item (code block, paragraph) grows past this many characters: a minified bundle is one
# enormous line, a log or CSV file one enormous "paragraph".
MAX_ITEM_CHARS = 4000

MIME_TYPES = {"markdown": "text/markdown", "text": "text/plain", "code": "text/x-source"}
BINARY_SNIFF_BYTES = 8192


# --- decoding -----------------------------------------------------------------------------


def decode_text(data: bytes, *, source: str) -> tuple[str, list[str]]:
    """Bytes -> text with ``\\n`` newlines, plus warnings. UTF-8 (BOM allowed) and UTF-16
    with a BOM are read as such; anything else falls back to Latin-1 with a warning.
    NUL bytes (outside UTF-16) mean a binary file: UnsupportedSourceError."""
    warnings: list[str] = []
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise UnsupportedSourceError(
                f"{source}: starts with a UTF-16 mark but does not decode as UTF-16 ({exc.reason})",
                source=source,
            ) from exc
    else:
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            raise UnsupportedSourceError(
                f"{source}: looks like a binary file (it contains NUL bytes), not text",
                source=source,
            )
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
            warnings.append(f"{source}: not valid UTF-8; read as Latin-1")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise EmptyDocumentError(f"{source}: the file contains only whitespace", source=source)
    return text, warnings


# --- plain text ---------------------------------------------------------------------------


def convert_plain_text(data: bytes, *, source: str) -> Conversion:
    """Paragraphs split on blank lines (and cut at MAX_ITEM_CHARS); the lines of a
    paragraph are joined with a space.
    reStructuredText-style underlined titles (a line followed by ===== or -----) become
    headings, levelled in the order their underline characters first appear."""
    text, warnings = decode_text(data, source=source)
    doc = DoclingDocument(name=source)
    underline_levels: dict[str, int] = {}
    first_heading: str | None = None
    for paragraph in _paragraphs(text.split("\n")):
        heading = _underlined_heading(paragraph)
        if heading is not None:
            title, char, paragraph = heading
            level = underline_levels.setdefault(char, len(underline_levels) + 1)
            doc.add_heading(text=title, level=min(level, 6))
            first_heading = first_heading or title
        joined = "\n".join(line.strip() for line in paragraph)
        for piece in _split_long(joined, MAX_ITEM_CHARS) if joined else ():
            doc.add_text(label=DocItemLabel.TEXT, text=" ".join(piece.split("\n")))
    return Conversion(
        document=doc, mime_type=MIME_TYPES["text"], title=first_heading, warnings=warnings
    )


def _paragraphs(lines: list[str]) -> Iterator[list[str]]:
    current: list[str] = []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current:
            yield current
            current = []
    if current:
        yield current


UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")


def _underlined_heading(paragraph: list[str]) -> tuple[str, str, list[str]] | None:
    """("Title", "=", rest) when a paragraph opens with "Title" / "=====" (optionally
    overlined too); ``rest`` are the lines after the underline."""
    lines = [line.rstrip() for line in paragraph]
    if len(lines) >= 3 and UNDERLINE.match(lines[0]) and lines[0] == lines[2]:
        lines = lines[1:]  # overline + title + underline
    if len(lines) < 2 or not UNDERLINE.match(lines[1]) or not lines[0].strip():
        return None
    if len(lines[1]) < len(lines[0].strip()) * 0.6:
        return None  # a short rule under a long line is prose, not an underline
    return lines[0].strip(), lines[1][0], lines[2:]


# --- source code --------------------------------------------------------------------------


def convert_code(data: bytes, *, source: str, extension: str) -> Conversion:
    """One CODE item per top-level block (a run of lines that starts at column 0 after a
    blank line), with blocks kept near CODE_BLOCK_TARGET_LINES lines."""
    text, warnings = decode_text(data, source=source)
    language = CODE_LANGUAGES.get(extension.lower()) or CodeLanguageLabel.UNKNOWN
    doc = DoclingDocument(name=source)
    for block in _code_blocks(text.split("\n")):
        for piece in _split_long(block, MAX_ITEM_CHARS):
            doc.add_code(text=piece, code_language=language)
    return Conversion(document=doc, mime_type=MIME_TYPES["code"], warnings=warnings)


def _code_blocks(lines: list[str]) -> Iterator[str]:
    current: list[str] = []
    previous_blank = True
    for line in lines:
        blank = not line.strip()
        top_level = not blank and not line[0].isspace() and not line.startswith(("}", ")", "]"))
        long_enough = len(current) >= CODE_BLOCK_TARGET_LINES
        starts_block = top_level and (previous_blank or long_enough)
        if current and (starts_block and _has_content(current) or len(current) >= CODE_BLOCK_MAX_LINES):
            yield _trimmed(current)
            current = []
        if current or not blank:
            current.append(line)
        previous_blank = blank
    if _has_content(current):
        yield _trimmed(current)


def _split_long(block: str, limit: int) -> Iterator[str]:
    """Cut a block longer than ``limit`` characters at line ends, and a single line longer
    than ``limit`` into ``limit``-sized pieces."""
    if len(block) <= limit:
        yield block
        return
    piece = ""
    for line in block.split("\n"):
        while len(line) > limit:
            if piece:
                yield piece
                piece = ""
            yield line[:limit]
            line = line[limit:]
        if piece and len(piece) + 1 + len(line) > limit:
            yield piece
            piece = ""
        piece = f"{piece}\n{line}" if piece else line
    if piece.strip():
        yield piece


def _has_content(lines: list[str]) -> bool:
    return any(line.strip() for line in lines)


def _trimmed(lines: list[str]) -> str:
    return "\n".join(lines).strip("\n")


# --- Markdown -----------------------------------------------------------------------------

ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)\s*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
LIST_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$")
THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")
TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
FRONT_MATTER_TITLE = re.compile(r"^title:\s*[\"']?(.*?)[\"']?\s*$", re.M)

# Inline markup removed from item text so that search sees the words, not the syntax.
INLINE_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
INLINE_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
INLINE_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
HTML_BREAK = re.compile(r"<br\s*/?>", re.I)


@dataclass
class _ListState:
    group: GroupItem
    ordered: bool


def convert_markdown(data: bytes, *, source: str) -> Conversion:
    """Headings (ATX and setext), paragraphs, list items (flat, grouped per list), pipe
    tables, fenced code with its language, block quotes as paragraphs. A single level-1
    heading at the top is the title; the other headings keep their number of ``#``s."""
    text, warnings = decode_text(data, source=source)
    lines = text.split("\n")
    front_title, lines = _strip_front_matter(lines)
    builder = _MarkdownBuilder(DoclingDocument(name=source), _title_line(lines))
    builder.build(lines)
    return Conversion(
        document=builder.doc,
        mime_type=MIME_TYPES["markdown"],
        title=front_title or builder.title,
        warnings=warnings,
    )


def _strip_front_matter(lines: list[str]) -> tuple[str | None, list[str]]:
    if not lines or lines[0].strip() != "---":
        return None, lines
    for index in range(1, min(len(lines), 200)):
        if lines[index].strip() in ("---", "..."):
            match = FRONT_MATTER_TITLE.search("\n".join(lines[1:index]))
            return (match.group(1) if match else None), lines[index + 1 :]
    return None, lines


def _title_line(lines: list[str]) -> int | None:
    """Index of the line holding the document's only level-1 ATX heading, if it comes
    before any other heading."""
    level_one = []
    first_heading = None
    in_fence = False
    for index, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
        if in_fence:
            continue
        match = ATX_HEADING.match(line)
        if match:
            first_heading = index if first_heading is None else first_heading
            if len(match.group(1)) == 1:
                level_one.append(index)
    if len(level_one) == 1 and level_one[0] == first_heading:
        return level_one[0]
    return None


class _MarkdownBuilder:
    def __init__(self, doc: DoclingDocument, title_line: int | None) -> None:
        self.doc = doc
        self.title_line = title_line
        # With the single H1 taken as the title, "## Section" is the first heading level.
        self.level_shift = 1 if title_line is not None else 0
        self.title: str | None = None
        self.paragraph: list[str] = []
        self.list_state: _ListState | None = None

    def build(self, lines: list[str]) -> None:
        index = 0
        while index < len(lines):
            index = self._step(lines, index)
        self._flush_paragraph()

    def _step(self, lines: list[str], index: int) -> int:
        """Consume the construct starting at ``lines[index]``; return the next index."""
        line = lines[index]
        if not line.strip():
            self._flush_paragraph()
            return index + 1
        fence = FENCE.match(line)
        if fence:
            return self._code_fence(lines, index, fence.group(1), fence.group(2))
        heading = ATX_HEADING.match(line)
        if heading:
            self._heading(heading.group(2) or "", len(heading.group(1)), is_title=index == self.title_line)
            return index + 1
        if THEMATIC_BREAK.match(line) and not self.paragraph:
            self._end_blocks()
            return index + 1
        if self.paragraph and SETEXT_UNDERLINE.match(line):
            text = " ".join(self.paragraph)
            self.paragraph = []
            self._heading(text, 1 if line.strip()[0] == "=" else 2, is_title=False)
            return index + 1
        if _is_table_start(lines, index):
            return self._table(lines, index)
        item = LIST_ITEM.match(line)
        if item:
            return self._list_item(lines, index, item)
        if line.lstrip().startswith(">"):
            self._end_list()
            self.paragraph.append(line.lstrip().lstrip(">").strip())
            return index + 1
        self._end_list()
        self.paragraph.append(line.strip())
        return index + 1

    def _flush_paragraph(self) -> None:
        if self.paragraph:
            text = _inline(" ".join(part for part in self.paragraph if part))
            if text:
                self.doc.add_text(label=DocItemLabel.TEXT, text=text)
            self.paragraph = []

    def _end_list(self) -> None:
        self.list_state = None

    def _end_blocks(self) -> None:
        self._flush_paragraph()
        self._end_list()

    def _heading(self, raw: str, hashes: int, *, is_title: bool) -> None:
        self._end_blocks()
        text = _inline(raw)
        if not text:
            return
        if is_title:
            self.doc.add_title(text=text)
            self.title = text
            return
        self.doc.add_heading(text=text, level=max(1, hashes - self.level_shift))
        self.title = self.title or text

    def _code_fence(self, lines: list[str], index: int, marker: str, info: str) -> int:
        self._end_blocks()
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(marker):
            body.append(lines[end])
            end += 1
        code = "\n".join(body).strip("\n")
        if code.strip():
            self.doc.add_code(text=code, code_language=_language_from_info(info))
        return end + 1  # past the closing fence (or the end of an unterminated one)

    def _list_item(self, lines: list[str], index: int, match: re.Match[str]) -> int:
        self._flush_paragraph()
        ordered = match.group(2)[0].isdigit()
        if self.list_state is None or self.list_state.ordered != ordered:
            self.list_state = _ListState(self.doc.add_list_group(), ordered)
        parts = [match.group(3).strip()]
        end = index + 1
        # Continuation lines: indented, non-blank, not starting another item.
        while end < len(lines) and lines[end].strip() and not LIST_ITEM.match(lines[end]):
            if not lines[end][0].isspace() and (FENCE.match(lines[end]) or ATX_HEADING.match(lines[end])):
                break
            parts.append(lines[end].strip())
            end += 1
        text = _inline(" ".join(parts))
        if text:
            self.doc.add_list_item(
                text=text, enumerated=ordered, marker=match.group(2), parent=self.list_state.group
            )
        return end

    def _table(self, lines: list[str], index: int) -> int:
        self._end_blocks()
        header = _table_cells(lines[index])
        rows = [header]
        end = index + 2  # past the separator
        while end < len(lines) and "|" in lines[end] and lines[end].strip():
            rows.append(_table_cells(lines[end]))
            end += 1
        width = len(header)
        cells = [
            TableCell(
                text=_inline(row[col]) if col < len(row) else "",
                start_row_offset_idx=r,
                end_row_offset_idx=r + 1,
                start_col_offset_idx=col,
                end_col_offset_idx=col + 1,
                column_header=r == 0,
            )
            for r, row in enumerate(rows)
            for col in range(width)
        ]
        self.doc.add_table(data=TableData(num_rows=len(rows), num_cols=width, table_cells=cells))
        return end


def _is_table_start(lines: list[str], index: int) -> bool:
    return (
        "|" in lines[index]
        and index + 1 < len(lines)
        and "-" in lines[index + 1]
        and TABLE_SEPARATOR.match(lines[index + 1]) is not None
        and len(_table_cells(lines[index])) == len(_table_cells(lines[index + 1]))
    )


def _table_cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells = re.split(r"(?<!\\)\|", body)
    return [cell.strip().replace("\\|", "|") for cell in cells]


def _language_from_info(info: str) -> CodeLanguageLabel:
    name = info.strip().lower()
    if not name:
        return CodeLanguageLabel.UNKNOWN
    aliases = {"py": "python", "js": "javascript", "ts": "typescript", "sh": "bash", "shell": "bash",
               "yml": "yaml", "c++": "c++", "cpp": "c++", "rs": "rust", "golang": "go", "tex": "latex"}
    name = aliases.get(name, name)
    for label in CodeLanguageLabel:
        if label.value.lower() == name:
            return label
    return CodeLanguageLabel.UNKNOWN


def _inline(text: str) -> str:
    text = INLINE_IMAGE.sub(r"\1", text)
    text = INLINE_LINK.sub(r"\1", text)
    text = INLINE_STRONG.sub(r"\2", text)
    text = HTML_BREAK.sub(" ", text)
    return " ".join(text.split())
