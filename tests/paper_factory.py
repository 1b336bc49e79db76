"""Generated first pages of research papers, drawn as their typesetters draw them: a long
title with a colon, authors with superscript affiliation marks (smaller type, raised), the
affiliations, an arXiv stamp running up the left margin, then the abstract and sections.
The PaSa paper (arXiv 2501.10120) is the model for ``make_pasa_like_pdf``."""

from __future__ import annotations

import pymupdf

PASA_TITLE = "PaSa: An LLM Agent for Comprehensive Academic Paper Search"
PASA_AUTHORS = [
    ("Yichen", "He", "1*"),
    ("Guanhua", "Huang", "1*"),
    ("Peiyuan", "Feng", "1"),
    ("Yuan", "Lin", "1†"),
    ("Yuchen", "Zhang", "1"),
    ("Hang", "Li", "1"),
    ("Weinan", "E", "2"),
]
PASA_ARXIV = "2501.10120"
ABSTRACT = (
    "We introduce PaSa, an advanced paper search agent powered by large language models. "
    "PaSa can autonomously make a series of decisions, including invoking search tools, "
    "reading papers, and selecting relevant references, to ultimately obtain comprehensive "
    "and accurate results for complex scholarly queries. We optimize PaSa using reinforcement "
    "learning with a synthetic dataset of fine-grained academic queries and corresponding "
    "papers sourced from top-tier conference publications."
)


def _centred(page: pymupdf.Page, y: float, pieces: list[tuple[str, str, float, float]]) -> None:
    """One centred line drawn piece by piece: (text, font, size, rise above the baseline)."""
    width = sum(pymupdf.get_text_length(t, f, s) for t, f, s, _ in pieces)
    x = (page.rect.width - width) / 2
    for text, font, size, rise in pieces:
        page.insert_text((x, y - rise), text, fontname=font, fontsize=size)
        x += pymupdf.get_text_length(text, font, size)


def make_pasa_like_pdf(*, metadata_title: str | None = None, with_doi: str | None = None) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    # the title, 17 pt bold, wrapped over two lines
    _centred(page, 100, [("PaSa: An LLM Agent for Comprehensive", "hebo", 17, 0)])
    _centred(page, 121, [("Academic Paper Search", "hebo", 17, 0)])
    # the authors: 12 pt names with 8 pt raised marks, two lines
    for y, people in ((152, PASA_AUTHORS[:4]), (168, PASA_AUTHORS[4:])):
        pieces: list[tuple[str, str, float, float]] = []
        for n, (given, family, mark) in enumerate(people):
            pieces.append(((" " if n else "") + f"{given} {family}", "helv", 12, 0))
            pieces.append((mark, "helv", 8, 4))
        _centred(page, y, pieces)
    _centred(page, 186, [("1", "helv", 8, 4), ("ByteDance Research ", "helv", 12, 0),
                         ("2", "helv", 8, 4), ("Peking University", "helv", 12, 0)])
    _centred(page, 198, [("{heyichen, huangguanhua}@bytedance.com", "cour", 9, 0)])
    # the arXiv stamp running up the left margin
    stamp = f"arXiv:{PASA_ARXIV}v1  [cs.IR]  17 Jan 2025"
    page.insert_text((30, 560), stamp, fontname="tiro", fontsize=20, rotate=90, color=(0.5, 0.5, 0.5))
    page.insert_text((285, 240), "Abstract", fontname="hebo", fontsize=12)
    page.insert_textbox(pymupdf.Rect(110, 250, 502, 400), ABSTRACT, fontname="tiro", fontsize=10)
    page.insert_text((72, 420), "1 Introduction", fontname="hebo", fontsize=12)
    body = ("Academic paper search lies at the core of research yet represents a particularly "
            "challenging information retrieval task. ") * 6
    page.insert_textbox(pymupdf.Rect(72, 430, 540, 700), body, fontname="tiro", fontsize=10)
    if with_doi:
        page.insert_text((72, 740), f"https://doi.org/{with_doi}", fontname="tiro", fontsize=8)
    if metadata_title is not None:
        doc.set_metadata({"title": metadata_title})
    data = doc.tobytes()
    doc.close()
    return data
