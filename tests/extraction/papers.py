"""Ten small generated papers, each with its own sample size, method, dataset and finding on
known pages, ingested into a real library: the rows of the evidence-table tests."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pdf_factory

from haiku.rag.client import HaikuRAG
from haiku.rag.config import AppConfig, load_config

SUBJECTS = [
    ("Lantern otters", "Velmora", "randomised controlled", "RiverNet", "otters hunt mostly at dusk"),
    ("Copper bridges", "Marrowgate", "longitudinal cohort", "SpanLog", "cable corrosion doubles after rain"),
    ("Frost tea", "Ardent", "cross-sectional survey", "LeafBank", "night frost sweetens the leaves"),
    ("Kestrel comets", "Halvard", "case-control", "SkyArchive", "comet tails brighten in spring"),
    ("Moss cheese", "Dunmore", "randomised crossover", "CaveMilk", "cave moss slows the ageing"),
    ("Glass eels", "Quartzwater", "prospective cohort", "EelCount", "eels migrate on moonless nights"),
    ("Juniper smoke", "Brask", "qualitative interview", "SmokeNotes", "smoked leaves keep longer"),
    ("Rowan berries", "Fellside", "field experiment", "BerryPlot", "pickled berries lose little vitamin"),
    ("Signal keepers", "Odile", "ethnographic observation", "KeeperDiary", "keepers halve wagon delays"),
    ("Limestone caves", "Vesna", "retrospective audit", "CaveSurvey", "cave humidity stays above ninety"),
]
SAMPLE_SIZES = [120, 48, 305, 76, 212, 64, 33, 150, 27, 410]
BLINDED = [True, False, True, False, True, False, False, True, False, True]


_WORDS = (
    "weather lanterns harbour morning ledger orchard quiet valley copper window garden "
    "timber meadow kettle evening shelter granite willow lantern market pebble"
).split()

# the page each fact is written on (paragraphs 0-3 on page 1, 4-7 on page 2, 8-11 on page 3)
PAGES = {"sample_size": 1, "method": 2, "blinded": 2, "dataset": 3, "finding": 3}


def _filler(paper: int, part: int) -> str:
    """About seventy words of neutral prose, different for each paper and part, with no
    figure and none of the facts' words (so a chunk boundary falls between the facts)."""
    words = [_WORDS[(paper * 7 + part * 3 + k * 5) % len(_WORDS)] for k in range(60)]
    sentences = [" ".join(words[i : i + 12]).capitalize() + "." for i in range(0, 60, 12)]
    return " ".join(sentences)


@dataclass(frozen=True)
class Paper:
    path: Path
    title: str
    authors: list[str]
    sample_size: int
    method: str
    dataset: str
    finding: str
    blinded: bool


def make_papers(root: Path, count: int = 10) -> list[Paper]:
    papers = []
    for n, (subject, place, method, dataset, finding) in enumerate(SUBJECTS[:count]):
        size = SAMPLE_SIZES[n]
        title = f"A {method} study of {subject.lower()} in {place}"
        authors = [f"Ada Author{chr(65 + n)}", f"Ben Writer{chr(65 + n)}"]
        blinding = (
            "Assessors were blinded to group allocation throughout the study."
            if BLINDED[n]
            else "Assessors knew the group allocation; no blinding was used."
        )
        paragraphs = [
            f"This paper reports a {method} study of {subject.lower()} carried out in {place}.",
            _filler(n, 0),
            f"We enrolled {size} participants from the {place} district between March and June.",
            _filler(n, 1),
            f"The study used a {method} design with weekly visits and a fixed protocol.",
            _filler(n, 2),
            blinding,
            _filler(n, 3),
            f"All measurements come from the {dataset} dataset, which the {place} council keeps.",
            _filler(n, 4),
            f"The main finding is that {finding}, which held in every season we observed.",
            "Limitations include the short period of observation and a single site.",
        ]
        path = root / f"paper{n}.pdf"
        pdf_factory.make_paper_pdf(
            path, title=title, authors=authors, paragraphs=paragraphs, pages=3,
            info={"title": title, "author": "; ".join(authors), "creationDate": f"D:20{10 + n}0101000000"},
        )  # fmt: skip
        papers.append(Paper(path, title, authors, size, method, dataset, finding, BLINDED[n]))
    return papers


def library_config(root: Path) -> AppConfig:
    config = load_config()
    config.storage.data_dir = root / "data"
    config.embeddings.threads = 2
    return config


def build_library(root: Path, papers: list[Paper]) -> tuple[Path, dict[str, str]]:
    """The library at ``root/library.lancedb`` and paper title -> document id."""
    db_path = root / "library.lancedb"
    config = library_config(root)

    async def ingest() -> dict[str, str]:
        ids = {}
        async with HaikuRAG(db_path, config, create=True) as client:
            for paper in papers:
                outcome = await client.ingest_file(paper.path)
                assert outcome.status == "ingested", outcome.reason
                ids[paper.title] = outcome.document.id
        return ids

    return db_path, asyncio.run(ingest())
