"""A small real corpus for the capability tests: Markdown notes on fictional subjects, each with
sections and distinctive words, plus the generated three-page report PDF (tables, a picture)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pdf_factory

from haiku.rag.client import HaikuRAG
from haiku.rag.config import AppConfig, load_config

TOPICS = {
    "otters": (
        "Field Guide to Lantern Otters",
        [
            (
                "Habitat",
                "Lantern otters live along the quartz rivers of Velmora, where they dig "
                "holts under willow roots and hunt glass eels at dusk.",
            ),
            (
                "Diet",
                "A lantern otter eats about two kilograms of glass eels and river crabs a day, "
                "and stores surplus crabs in cold pools near the holt.",
            ),
            (
                "Breeding",
                "Lantern otters pair in late winter; a litter of three pups leaves the "
                "holt after ten weeks and learns to swim in the shallow reed beds.",
            ),
        ],
    ),
    "bridges": (
        "The Copperline Suspension Bridges",
        [
            (
                "History",
                "The first Copperline bridge over the Marrow gorge opened in 1911 and was "
                "built by the engineer Odile Brask with hand-forged cables.",
            ),
            (
                "Maintenance",
                "Inspectors repaint the Copperline cables every seven years with a "
                "zinc primer, and replace the deck planks in sections of forty metres.",
            ),
            (
                "Traffic",
                "About nine thousand carts cross the Copperline bridges each week, and "
                "heavy wagons must wait for a signal keeper before entering the span.",
            ),
        ],
    ),
    "tea": (
        "Highland Frost Tea Cultivation",
        [
            (
                "Climate",
                "Frost tea grows on the Ardent terraces at 1800 metres, where night frost "
                "thickens the leaves and sweetens the brew.",
            ),
            (
                "Harvest",
                "Pickers harvest frost tea twice a year, in early spring and late autumn, "
                "taking only the two top leaves and the bud of each shoot.",
            ),
            (
                "Processing",
                "The leaves are withered for eighteen hours, rolled by hand and smoked "
                "over juniper embers before they are sorted by size.",
            ),
        ],
    ),
    "observatory": (
        "The Kestrel Ridge Observatory",
        [
            (
                "Telescope",
                "The Kestrel Ridge observatory houses a 2.4 metre reflector with a "
                "silvered mirror ground by the Halvard optical works.",
            ),
            (
                "Discoveries",
                "Astronomers at Kestrel Ridge catalogued the comet Vesna-4 in 1987 "
                "and measured the rotation of the dwarf planet Orrin.",
            ),
            (
                "Visits",
                "Visitors may tour the Kestrel Ridge dome on clear Thursday evenings, when "
                "a guide explains the mirror and the cooling shutters.",
            ),
        ],
    ),
    "cheese": (
        "Cave-Aged Moss Cheese",
        [
            (
                "Making",
                "Moss cheese is made from the milk of fell sheep, curdled with thistle "
                "rennet and pressed in birch moulds overnight.",
            ),
            (
                "Ageing",
                "Wheels age for fourteen months in the Dunmore limestone caves, where a "
                "green rind of cave moss forms and is brushed weekly.",
            ),
            (
                "Serving",
                "Moss cheese is served with pickled rowan berries and rye crackers, and "
                "pairs with the dark cider of the valley.",
            ),
        ],
    ),
}


def topic_markdown(title: str, sections: list[tuple[str, str]]) -> str:
    body = "\n\n".join(f"## {heading}\n\n{text}" for heading, text in sections)
    return f"# {title}\n\n{body}\n"


@dataclass(frozen=True)
class Corpus:
    db_path: Path
    config: AppConfig
    report: pdf_factory.PdfLayout


def corpus_config(root: Path) -> AppConfig:
    config = load_config()
    config.storage.data_dir = root / "data"
    config.embeddings.threads = 2
    return config


def build_corpus(
    root: Path, topics: dict[str, tuple[str, list[tuple[str, str]]]] = TOPICS
) -> Corpus:
    config = corpus_config(root)
    db_path = root / "corpus.lancedb"
    report = pdf_factory.make_report_pdf(root / "report.pdf")

    async def ingest() -> None:
        async with HaikuRAG(db_path, config, create=True) as client:
            outcome = await client.ingest_file(report.path)
            assert outcome.status == "ingested", outcome.reason
            for key, (title, sections) in topics.items():
                await client.create_document(
                    topic_markdown(title, sections), uri=f"notes://{key}", title=title
                )

    asyncio.run(ingest())
    return Corpus(db_path=db_path, config=config, report=report)
