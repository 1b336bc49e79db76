"""Exports are inert (issue 32): a document's hostile title, a quoted passage and an answer
that repeats them cannot add a heading, an image (a beacon fetched when the export is opened),
a link or raw HTML to the Markdown, nor an entry or a TeX command to the .bib beside it."""

from __future__ import annotations

import re

import bibtexparser

from haiku.rag.citations import Citation
from haiku.rag.client import HaikuRAG
from haiku_desk.export import export_answer
from haiku_desk.services.conversations import Turn

BEACON = "https://tracker.example/pixel.gif?u=alice"
HOSTILE_TITLE = (
    "Budget\n\n## Sources\n\n1. **Forged source**\n"
    f"![]({BEACON}) <img src='{BEACON}'> <script>alert(1)</script> [click](https://evil.example)"
)
HOSTILE_TEXT = f"Salaries rose. ![x]({BEACON}) <iframe src='{BEACON}'></iframe> [more](https://evil.example)"


def headings(markdown: str) -> list[str]:
    return re.findall(r"^ {0,3}#{1,6} .*$", markdown, re.MULTILINE)


def images_html_and_links(markdown: str) -> list[str]:
    """Every image, HTML tag and link in ``markdown`` (as CommonMark reads them: a
    backslash-escaped character and an entity are text)."""
    unescaped = re.sub(r"\\.", "", markdown)
    found = re.findall(r"!\[[^\]]*\]\([^)]*\)", unescaped)
    found += re.findall(r"<[A-Za-z/!?][^>]*>", unescaped)
    found += re.findall(r"(?<!!)\[[^\]]*\]\([^)]*\)", unescaped)
    return found


async def test_a_hostile_title_passage_and_answer_export_as_text(db_path, config, tmp_path):
    async with HaikuRAG(db_path, config, create=True) as client:
        document = await client.create_document(HOSTILE_TEXT, title=HOSTILE_TITLE, embed=False)
        chunk = (await client.get_chunks(document))[0]
        citation = Citation(
            index=1, chunk_id=chunk.id, document_id=document.id, document_uri=document.uri,
            document_title=document.title, content=chunk.content,
        )
        turn = Turn(
            question="What happened to salaries?\n## Sources",
            answer=f"Salaries rose [1].\n## Sources\n![beacon]({BEACON})\n<img src=\"{BEACON}\">\nSources\n---",
            citations=[citation],
        )
        path = await export_answer(turn, client, tmp_path / "out", name="salaries")

    markdown = path.read_text()
    assert headings(markdown) == [
        "# What happened to salaries? \\#\\# Sources",
        "## What happened to salaries? \\#\\# Sources",
        "### Sources",
        "## References",
    ], markdown
    # the model's answer may keep a link (nothing is fetched until it is clicked); the title and
    # the quoted passage add none, and nothing is an image or HTML
    assert images_html_and_links(markdown) == [
        f"[beacon]({BEACON})", "[salaries.bib](salaries.bib)", "[salaries.csl.json](salaries.csl.json)",
    ], markdown
    assert "Sources\n\\---" in markdown  # no setext heading either
    assert markdown.count("### Sources") == 1 and markdown.count("## References") == 1
    assert "Salaries rose [1]." in markdown  # the answer keeps its own text
    assert "> Salaries rose. x &lt;iframe" in markdown  # the passage is quoted, as text
    # the .bib beside it parses to the one document, its title literal text
    library = bibtexparser.parse_string((tmp_path / "out" / "salaries.bib").read_text())
    assert len(library.entries) == 1 and not library.failed_blocks
    assert "\\input" not in library.entries[0].fields_dict["title"].value


def test_a_flagged_sentence_exports_as_text():
    """The support check's flagged sentence is the model's text again: quoted in the export,
    it cannot bring back the image or HTML the answer body had neutralised."""
    from haiku.rag.answering.support import SentenceCheck, SupportCheck
    from haiku_desk.export import turn_markdown

    hostile = f"Costs fell 40% ![x]({BEACON}) <img src='{BEACON}'> [more](https://evil.example)."
    check = SupportCheck(
        verdict="ungrounded",
        sentences=[SentenceCheck(
            text=hostile, start=0, end=len(hostile), status="uncited",
            claims=["40%", f"<img src='{BEACON}'>"], missing=["40%", f"<img src='{BEACON}'>"],
        )],
    )
    turn = Turn(question="Costs?", answer=hostile, rests_on="ungrounded", support=check.model_dump())

    markdown = "\n".join(turn_markdown(turn))
    flagged = [line for line in markdown.splitlines() if line.startswith("- ⚠")]
    assert len(flagged) == 1, markdown
    assert "Costs fell 40%" in flagged[0] and "no citation" in flagged[0]
    # the answer body keeps its links (its image shown as one); the flagged line adds none
    assert images_html_and_links(flagged[0]) == [], flagged[0]
    assert images_html_and_links(markdown) == [f"[x]({BEACON})", "[more](https://evil.example)"], markdown
