"""Screenshots of the real main window in its main states, for the README.

    .venv/bin/python packaging/screenshots.py [--out docs/screenshots]

Offscreen (``QT_QPA_PLATFORM=offscreen``), at a fixed window size, in a temporary library and
a temporary data dir (``XDG_DATA_HOME`` and the config's ``data_dir`` point into a temp folder,
window settings go to a temporary INI file), so a user's own library and settings are never
touched. The content is generated here with PyMuPDF: a few short research papers with titles,
headings, paragraphs and tables. The answer comes from a ``FunctionModel`` that searches the
library and cites what it found, installed with ``ModelsService.use_model_instance``; the model
settings dialog lists models from a small Ollama-style server on 127.0.0.1. Nothing leaves the
machine and no real model runs.

Writes, into ``--out``:

1. ``01-empty-library.png``  the window on an empty library
2. ``02-ingesting.png``      papers being ingested, per-file and overall progress visible
3. ``03-answer.png``         a streamed answer with citation chips, sources and the badge
4. ``04-citation.png``       the citation panel showing the cited page, passage highlighted
5. ``05-model-settings.png`` the model settings dialog over the window

Exits 0 when all five were saved, else 1 with a message naming the step that failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "docs" / "screenshots"
WINDOW_SIZE = (1440, 900)
SHOTS = (
    "01-empty-library.png",
    "02-ingesting.png",
    "03-answer.png",
    "04-citation.png",
    "05-model-settings.png",
)
# While ingesting, the still empty citation panel gives the library room for its columns down
# to this width, as a user would drag the splitter; the answer and the cited page are shown in
# the window's own default layout.
EMPTY_CITATION_PANEL_WIDTH = 260
INGEST_TIMEOUT = 600.0
ANSWER_TIMEOUT = 120.0

QUESTION = "Does irrigating almond orchards at night reduce water loss, and does it cost yield?"
FIRST_QUERY = "night irrigation evaporative loss"
SECOND_QUERY = "kernel yield night midday schedule"
# The passages the scripted model cites: the first chunk of a search whose text holds these.
LOSS_EVIDENCE = "roughly one full irrigation in July"
YIELD_EVIDENCE = "2,410 kg/ha under night irrigation"
ANSWER = (
    "Yes. Night irrigation lost **9.8 %** of the applied water to "
    "evaporation, against **14.3 %** for midday irrigation: about a third less, worth roughly "
    "95 mm per season [1].\n\n"
    "It did not cost yield: kernel yield did not differ between the schedules in any of the "
    "three seasons (2,410 vs 2,385 kg/ha on average), and kernel weight and the share of "
    "doubles were the same [2]."
)
MODEL_NAME = "scripted demo model"
OLLAMA_MODELS = ["qwen3:8b", "llama3.1:8b", "gemma3:4b"]
OLLAMA_TOOL_MODELS = {"qwen3:8b", "llama3.1:8b"}
CHOSEN_MODEL = "qwen3:8b"
SEARCH_LIMIT = 1

CHUNK_LINE = re.compile(r"^\[([0-9a-f]{32})\] \[rank \d+ of \d+\]", re.MULTILINE)


class ScreenshotError(Exception):
    """A state could not be reached or captured; the message says which and why."""


# --- content: short research papers ----------------------------------------------------------


@dataclass
class Paper:
    file_name: str
    title: str
    authors: str
    affiliation: str
    journal: str
    abstract: str
    # (heading, blocks): a block is a paragraph (str) or a table (Table)
    sections: list[tuple[str, list[Any]]] = field(default_factory=list)


@dataclass
class Table:
    caption: str
    header: list[str]
    rows: list[list[str]]


JOURNAL = "Journal of Arid Horticulture · Vol. 12 (2024)"
AFFILIATION = "Department of Agricultural Engineering, Ridgeview University"

PAPERS = [
    Paper(
        "night-irrigation-almonds.pdf",
        "Night-Time Drip Irrigation Reduces Evaporative Loss Without a Yield Penalty in "
        "Semi-Arid Almond Orchards",
        "Miriam Okafor, Lukas Brandt and Sunita Iyer",
        AFFILIATION,
        JOURNAL,
        "Irrigating at night is often recommended to save water, but few field studies have "
        "measured the saving in orchards or checked whether it costs yield. Over three seasons "
        "we compared drip irrigation applied between 22:00 and 04:00 with the same volume "
        "applied between 11:00 and 15:00 in a commercial almond orchard on sandy loam. Night "
        "irrigation lost 9.8 % of the applied water to evaporation against 14.3 % at midday, a "
        "relative reduction of 31 %. Kernel yield, kernel weight and the share of doubles did "
        "not differ between schedules. Shifting irrigation to the night is a low-cost measure "
        "that growers can adopt without new equipment.",
        [
            (
                "1 Introduction",
                [
                    "Almond orchards in semi-arid valleys depend on irrigation for most of the "
                    "water their trees transpire, and water allocations have fallen in four of "
                    "the last six years. Growers are therefore asked to produce the same crop "
                    "with less water, and every avoidable loss between the emitter and the root "
                    "zone matters. Evaporation from the wetted soil surface is one such loss: "
                    "drip emitters wet a strip of soil that is exposed to sun and wind for hours "
                    "after each irrigation.",
                    "Extension advice has long held that irrigating at night reduces this loss, "
                    "because air temperature and vapour pressure deficit are lower and wind is "
                    "usually calmer. The advice rests mostly on evaporation-pan data and on "
                    "sprinkler studies; for drip systems in orchards the size of the saving is "
                    "poorly known, and growers worry that night irrigation keeps the root zone "
                    "cold and wet and might reduce nut set or kernel fill. This study measured "
                    "both the water saving and the yield over three consecutive seasons.",
                ],
            ),
            (
                "2 Materials and methods",
                [
                    "The trial ran from 2021 to 2023 in a twelve-year-old almond orchard "
                    "(Nonpareil with Monterey as pollinizer) on sandy loam, planted at 6.7 by "
                    "5.5 m. Each tree row carried two drip lines with 2.0 L/h emitters every "
                    "0.75 m. Eight blocks of four rows were split into two plots that received "
                    "the same weekly volume, scheduled from reference evapotranspiration and a "
                    "crop coefficient that changed with the season.",
                    "The night schedule applied water between 22:00 and 04:00; the midday "
                    "schedule applied the same volume between 11:00 and 15:00. Soil evaporation "
                    "was measured with weighing micro-lysimeters placed in the wetted strip and "
                    "replaced after each irrigation, and scaled to the plot by the wetted area, "
                    "which was mapped monthly. Soil water content was logged every 30 minutes "
                    "at 20, 40 and 80 cm with calibrated capacitive probes.",
                    "Yield was harvested by plot and shelled in the grower's huller; kernel "
                    "weight and the share of doubles were measured on a 500 g sample from each "
                    "plot. Schedules were compared with a mixed model with block and season as "
                    "random effects.",
                ],
            ),
            (
                "3 Results",
                [
                    "Night irrigation consistently lost less water to evaporation. Across the "
                    "three seasons, night irrigation lost 9.8 % of the applied water to "
                    "evaporation, against 14.3 % under midday irrigation, a relative reduction "
                    "of 31 % (Table 1). The saving amounted to about 95 mm per season, or "
                    "roughly one full irrigation in July. It was largest in the hottest season, "
                    "2022, when midday losses reached 15.9 %.",
                    Table(
                        "Table 1. Seasonal water balance of the wetted strip by schedule.",
                        ["Season", "Schedule", "Applied (mm)", "Evaporated (mm)", "Loss (%)"],
                        [
                            ["2021", "Night", "1,980", "196", "9.9"],
                            ["2021", "Midday", "1,975", "276", "14.0"],
                            ["2022", "Night", "2,140", "222", "10.4"],
                            ["2022", "Midday", "2,135", "339", "15.9"],
                            ["2023", "Night", "2,060", "187", "9.1"],
                            ["2023", "Midday", "2,070", "269", "13.0"],
                        ],
                    ),
                    "Soil water content at 40 cm was on average 1.8 percentage points higher "
                    "under the night schedule in the morning and the difference disappeared by "
                    "the evening. The probes at 80 cm showed no difference between schedules, "
                    "so the saving did not drain below the root zone.",
                    "Kernel yield did not differ between schedules in any season (Table 2): "
                    "averaged over the three seasons it was 2,410 kg/ha under night irrigation "
                    "and 2,385 kg/ha under midday irrigation (p = 0.71). Kernel weight and the "
                    "share of doubles were also unaffected, and no difference in hull split "
                    "timing was observed.",
                    Table(
                        "Table 2. Kernel yield and quality by schedule (means of eight blocks).",
                        ["Season", "Schedule", "Yield (kg/ha)", "Kernel weight (g)", "Doubles (%)"],
                        [
                            ["2021", "Night", "2,290", "1.21", "4.2"],
                            ["2021", "Midday", "2,270", "1.20", "4.5"],
                            ["2022", "Night", "2,460", "1.18", "5.1"],
                            ["2022", "Midday", "2,440", "1.19", "4.9"],
                            ["2023", "Night", "2,480", "1.22", "3.8"],
                            ["2023", "Midday", "2,445", "1.22", "4.0"],
                        ],
                    ),
                ],
            ),
            (
                "4 Discussion",
                [
                    "The saving we measured is smaller than pan-based estimates, which often "
                    "suggest that half of the midday loss can be avoided. Under drip, much of "
                    "the wetted strip is shaded by the canopy by mid-morning, so the extra "
                    "exposure of midday irrigation is shorter than a pan would suggest. The "
                    "saving is nevertheless large enough to matter in a year with a reduced "
                    "allocation.",
                    "Growers' concern about cold, wet root zones was not borne out: the night "
                    "plots dried to the same water content as the midday plots by the evening, "
                    "and yield and kernel quality were the same. Two limits apply. The trial "
                    "used one soil and one variety, and heavier soils, which stay wet longer, "
                    "may behave differently. Night irrigation also requires pumps and filters "
                    "that can run unattended, and in some districts night electricity tariffs "
                    "make it cheaper, which we did not account for.",
                ],
            ),
            (
                "5 Conclusions",
                [
                    "Moving drip irrigation from midday to the night reduced evaporative loss by "
                    "about a third in a semi-arid almond orchard, without any loss of yield or "
                    "kernel quality over three seasons. The change needs no new equipment, and "
                    "we recommend it wherever the irrigation system can run unattended.",
                    "Acknowledgements. We thank the grower cooperative for access to the "
                    "orchard and the huller staff for processing the plot harvests.",
                ],
            ),
        ],
    ),
    Paper(
        "capacitive-probe-calibration.pdf",
        "Calibrating Low-Cost Capacitive Soil Moisture Probes for Sandy Loam Orchards",
        "Sunita Iyer and Tomás Ferreira",
        AFFILIATION,
        JOURNAL,
        "Capacitive soil moisture probes cost a fraction of time-domain reflectometry but their "
        "factory calibrations are written for generic mineral soils. We calibrated 24 probes of "
        "three models against gravimetric samples in a sandy loam orchard. The factory "
        "calibration overestimated volumetric water content by 3 to 6 percentage points; a "
        "two-parameter soil-specific calibration reduced the error to 1.2 points.",
        [
            (
                "1 Introduction",
                [
                    "Irrigation scheduling by soil moisture needs sensors that are cheap enough "
                    "to install in every irrigation block. Capacitive probes meet that need, but "
                    "their readings depend on soil texture, temperature and salinity, and "
                    "growers rarely recalibrate them. We asked how large the error of the "
                    "factory calibration is in a typical orchard soil, and how much a simple "
                    "site calibration helps.",
                    "Gravimetric sampling remains the reference method, but it is destructive "
                    "and slow, and no grower will take cores every week. A calibration that is "
                    "done once per soil and probe model, and then trusted for several seasons, "
                    "is the practical compromise. We therefore also tested how many cores such "
                    "a calibration needs, and whether it holds from one season to the next.",
                ],
            ),
            (
                "2 Methods",
                [
                    "Eight probes of each of three models were installed at 20, 40 and 80 cm "
                    "beside the drip line. Over one season, 210 soil cores were taken next to "
                    "the probes across the full range from field capacity to the refill point, "
                    "and their water content was measured by oven drying. Each probe model was "
                    "fitted with a linear calibration of raw counts against gravimetric water "
                    "content, converted to volume with the measured bulk density.",
                ],
            ),
            (
                "3 Results",
                [
                    "The factory calibrations read wet in this soil for all three models, and "
                    "the error grew towards field capacity (Table 1). Temperature effects were "
                    "small below 30 °C but reached 1.5 points on hot afternoons at 20 cm.",
                    Table(
                        "Table 1. Root-mean-square error of volumetric water content (points).",
                        ["Probe model", "Factory calibration", "Site calibration", "Cores"],
                        [
                            ["A (single ring)", "5.8", "1.3", "70"],
                            ["B (dual ring)", "3.1", "1.1", "70"],
                            ["C (profile)", "4.4", "1.2", "70"],
                        ],
                    ),
                    "A site calibration from as few as twelve cores per probe model reached "
                    "within 0.2 points of the calibration from all cores, so the effort is "
                    "modest for a grower or a consultant.",
                ],
            ),
            (
                "4 Discussion",
                [
                    "The wet bias of the factory calibrations is consistent with the low clay "
                    "content of this soil: the calibrations assume a soil that holds more bound "
                    "water at the same permittivity. In practice the bias matters most near "
                    "field capacity, where a probe reading 5 points too wet delays the next "
                    "irrigation by several days in midsummer.",
                    "The site calibration held in a second season with new cores taken at six "
                    "of the probes, with a mean difference of 0.4 points. Salinity was low "
                    "throughout the trial; in saline soils the raw counts drift upwards and a "
                    "calibration may need to be repeated after the leaching irrigation.",
                ],
            ),
            (
                "5 Conclusions",
                [
                    "Factory calibrations of capacitive probes should not be trusted in sandy "
                    "loam without a check. Twelve gravimetric cores per probe model are enough "
                    "for a site calibration that brings the error close to that of far more "
                    "expensive sensors.",
                ],
            ),
        ],
    ),
    Paper(
        "emitter-clogging-reclaimed-water.pdf",
        "Emitter Clogging Under Reclaimed Water: A Two-Season Field Record",
        "Lukas Brandt, Amara Nwosu and Miriam Okafor",
        AFFILIATION,
        JOURNAL,
        "Reclaimed municipal water is an increasingly common source for orchard irrigation, but "
        "its suspended solids and nutrients promote emitter clogging. We followed 1,200 emitters "
        "of two designs for two seasons under reclaimed water with and without monthly acid "
        "flushing. Without flushing, 14 % of turbulent-path emitters and 6 % of pressure-"
        "compensating emitters lost more than a quarter of their flow.",
        [
            (
                "1 Introduction",
                [
                    "Drip emitters have narrow flow paths, and a partly blocked emitter leaves "
                    "its tree short of water long before anyone notices. Reclaimed water carries "
                    "organic matter, phosphate and bacteria that form biofilms in the lines. "
                    "Field data on how fast emitters clog under such water, and how well routine "
                    "maintenance prevents it, remain scarce.",
                    "Acid treatment and chlorination are the usual remedies, but they cost "
                    "labour and chemicals and can damage older polyethylene lines. Growers "
                    "switching to reclaimed water therefore want to know which emitter design "
                    "to buy and how often the lines must be treated to keep flow uniform across "
                    "the orchard.",
                ],
            ),
            (
                "2 Methods",
                [
                    "Six hundred emitters of each design were tagged along twelve laterals. Flow "
                    "was measured with graduated cylinders at the start of the trial and every "
                    "eight weeks. Half the laterals were flushed monthly and treated with "
                    "phosphoric acid to pH 4 for one hour; the other half were flushed only at "
                    "the end of each season.",
                ],
            ),
            (
                "3 Results",
                [
                    "Clogging developed slowly in the first season and accelerated in the "
                    "second (Table 1). Monthly acid treatment kept the share of strongly "
                    "clogged emitters below 2 % for both designs.",
                    Table(
                        "Table 1. Emitters that lost more than 25 % of their flow after two seasons.",
                        ["Emitter design", "Maintenance", "Emitters", "Clogged (%)"],
                        [
                            ["Turbulent path", "End of season", "300", "14.0"],
                            ["Turbulent path", "Monthly acid", "300", "1.7"],
                            ["Pressure compensating", "End of season", "300", "6.3"],
                            ["Pressure compensating", "Monthly acid", "300", "1.0"],
                        ],
                    ),
                ],
            ),
            (
                "4 Discussion",
                [
                    "Clogged emitters were not spread evenly: two thirds of them sat in the last "
                    "quarter of each lateral, where flow is slowest and sediment settles. "
                    "Flushing the line ends more often than the rest of the system may "
                    "therefore capture most of the benefit at a lower cost.",
                    "Pressure-compensating emitters have a flexible diaphragm that flexes with "
                    "every irrigation and seems to shed deposits. They cost about a third more "
                    "than turbulent-path emitters, which the lower maintenance repays within "
                    "two to three seasons on reclaimed water.",
                ],
            ),
            (
                "5 Conclusions",
                [
                    "Reclaimed water can be used through drip systems if the lines are treated "
                    "monthly; pressure-compensating emitters tolerate lapses in maintenance "
                    "better than turbulent-path emitters.",
                ],
            ),
        ],
    ),
    Paper(
        "canopy-temperature-stress.pdf",
        "Canopy Temperature as an Early Signal of Water Stress in Stone Fruit",
        "Amara Nwosu and Sunita Iyer",
        AFFILIATION,
        JOURNAL,
        "Stem water potential is the reference measure of tree water stress but needs a pressure "
        "chamber and a person in the orchard at midday. We compared it with canopy temperature "
        "from fixed infrared sensors in peach and plum over one season of deficit irrigation. "
        "The canopy-minus-air temperature difference tracked stem water potential closely "
        "(r = 0.84) and signalled stress about two days before visible symptoms.",
        [
            (
                "1 Introduction",
                [
                    "Deficit irrigation saves water only if stress is kept within limits the "
                    "crop tolerates. Growers therefore need a measure of stress that is "
                    "continuous and cheap. Leaves close their stomata and warm up when water is "
                    "short, so canopy temperature is an obvious candidate, but its relation to "
                    "stem water potential varies with weather and species.",
                    "Earlier studies with hand-held infrared thermometers found good agreement "
                    "on clear days and poor agreement under cloud. Fixed sensors that log every "
                    "few minutes can average over short cloudy spells and compare each tree "
                    "with a well-watered reference, which may make the signal robust enough for "
                    "scheduling.",
                ],
            ),
            (
                "2 Methods",
                [
                    "Infrared sensors were mounted above the canopy of eight peach and eight "
                    "plum trees under three irrigation levels. Stem water potential was "
                    "measured weekly at solar noon on shaded leaves bagged for one hour. Air "
                    "temperature and humidity were logged at the orchard weather station.",
                ],
            ),
            (
                "3 Results",
                [
                    "The canopy-minus-air temperature difference at 13:00 explained most of the "
                    "variation in stem water potential in both species (Table 1). A threshold of "
                    "+2 °C flagged every week in which stem water potential fell below -1.5 MPa.",
                    Table(
                        "Table 1. Canopy-minus-air temperature against stem water potential.",
                        ["Species", "Trees", "Readings", "Correlation (r)", "Lead time (days)"],
                        [
                            ["Peach", "8", "184", "0.86", "2.1"],
                            ["Plum", "8", "176", "0.81", "1.8"],
                        ],
                    ),
                ],
            ),
            (
                "4 Discussion",
                [
                    "The lead time of about two days is short, but long enough for a grower "
                    "who irrigates every three to four days to bring the next irrigation "
                    "forward. The signal was weaker in plum, whose denser canopy shades the "
                    "sensor's field of view and mixes leaf and fruit temperatures.",
                    "Cloudy days remain a limit: on six days with overcast skies at noon the "
                    "temperature difference stayed below the threshold even in the most "
                    "stressed trees. A practical system should therefore skip such days rather "
                    "than read them as well watered.",
                ],
            ),
            (
                "5 Conclusions",
                [
                    "Fixed infrared sensors give a continuous and early signal of water stress "
                    "in stone fruit, and can trigger irrigation before stress affects fruit "
                    "growth.",
                ],
            ),
        ],
    ),
]

CSS = """
* { font-family: serif; }
body { font-size: 11pt; line-height: 1.4; }
h1 { font-family: sans-serif; font-size: 17pt; font-weight: bold; line-height: 1.2;
     margin-bottom: 6pt; }
p.authors { font-family: sans-serif; font-size: 10.5pt; margin: 0; }
p.affiliation { font-family: sans-serif; font-size: 9pt; font-style: italic; margin-top: 2pt;
                margin-bottom: 12pt; }
p.abstract { font-size: 9.5pt; margin-left: 18pt; margin-right: 18pt; margin-bottom: 10pt; }
h2 { font-family: sans-serif; font-size: 12pt; font-weight: bold; margin-top: 12pt;
     margin-bottom: 4pt; }
p { text-align: justify; margin-top: 0; margin-bottom: 6pt; }
p.caption { font-family: sans-serif; font-size: 9pt; font-weight: bold; margin-top: 6pt;
            margin-bottom: 3pt; text-align: left; }
table { border-collapse: collapse; margin-bottom: 10pt; }
th { font-family: sans-serif; font-size: 9pt; font-weight: bold; border-top: 1px solid black;
     border-bottom: 1px solid black; padding: 2pt 6pt; text-align: left; }
td { font-family: sans-serif; font-size: 9pt; padding: 2pt 6pt; text-align: left; }
"""


def paper_html(paper: Paper) -> str:
    import html

    def e(text: str) -> str:
        return html.escape(text).replace(" %", "\u00a0%")  # "31 %" stays on one line

    parts = [
        f"<h1>{e(paper.title)}</h1>",
        f"<p class='authors'>{e(paper.authors)}</p>",
        f"<p class='affiliation'>{e(paper.affiliation)}</p>",
        f"<p class='abstract'><b>Abstract.</b> {e(paper.abstract)}</p>",
    ]
    for heading, blocks in paper.sections:
        parts.append(f"<h2>{e(heading)}</h2>")
        for block in blocks:
            if isinstance(block, Table):
                parts.append(f"<p class='caption'>{e(block.caption)}</p>")
                head = "".join(f"<th>{e(c)}</th>" for c in block.header)
                rows = "".join(
                    "<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>"
                    for row in block.rows
                )
                parts.append(f"<table><tr>{head}</tr>{rows}</table>")
            else:
                parts.append(f"<p>{e(block)}</p>")
    return "<body>" + "".join(parts) + "</body>"


def write_paper(paper: Paper, folder: Path) -> Path:
    """Lay the paper out on A4 pages with PyMuPDF's Story, then add running heads and folios."""
    import pymupdf

    path = folder / paper.file_name
    raw = folder / f".{paper.file_name}.tmp"
    story = pymupdf.Story(html=paper_html(paper), user_css=CSS)
    page_rect = pymupdf.paper_rect("a4")
    body = page_rect + (64, 70, -64, -64)
    writer = pymupdf.DocumentWriter(str(raw))
    more = True
    while more:
        device = writer.begin_page(page_rect)
        more, _ = story.place(body)
        story.draw(device)
        writer.end_page()
    writer.close()

    doc = pymupdf.open(raw)
    pages = doc.page_count
    for number, page in enumerate(doc, start=1):
        width = page.rect.width
        page.insert_text(
            (64, 44), paper.journal, fontname="helv", fontsize=8, color=(0.35, 0.35, 0.35)
        )
        page.draw_line((64, 50), (width - 64, 50), color=(0.6, 0.6, 0.6), width=0.5)
        folio = f"{number} / {pages}"
        length = pymupdf.get_text_length(folio, fontname="helv", fontsize=8)
        page.insert_text(
            ((width - length) / 2, page.rect.height - 36), folio, fontname="helv", fontsize=8
        )
    doc.set_metadata({"title": paper.title, "author": paper.authors, "subject": paper.journal})
    doc.save(path, garbage=3, deflate=True)
    doc.close()
    raw.unlink()
    return path


def write_papers(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [write_paper(paper, folder) for paper in PAPERS]


# --- the scripted model: searches, cites what it found, answers ------------------------------


class ScriptedResearcher:
    """A streaming ``FunctionModel`` that searches twice, cites one passage from each search and
    answers with numbered markers, as a tool-calling model would."""

    def __init__(self) -> None:
        self.requests = 0

    @property
    def model(self) -> Any:
        from pydantic_ai.models.function import FunctionModel

        return FunctionModel(self._respond, stream_function=self._stream, model_name=MODEL_NAME)

    def _next(self, messages: list[Any]) -> Any:
        from pydantic_ai.messages import (
            ModelRequest,
            ModelResponse,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
        )

        self.requests += 1
        returns = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        searches = [r for r in returns if r.tool_name == "rag_search"]
        if not searches:
            return ModelResponse(parts=[search(FIRST_QUERY)])
        if len(searches) == 1:
            return ModelResponse(parts=[search(SECOND_QUERY)])
        if not any(r.tool_name == "rag_cite" for r in returns):
            first = pick(str(searches[0].content), LOSS_EVIDENCE)
            second = pick(str(searches[1].content), YIELD_EVIDENCE, exclude={first})
            return ModelResponse(parts=[ToolCallPart("rag_cite", {"chunk_ids": [first, second]})])
        return ModelResponse(parts=[TextPart(ANSWER)])

    def _respond(self, messages: list[Any], info: Any) -> Any:
        return self._next(messages)

    async def _stream(self, messages: list[Any], info: Any) -> AsyncIterator[Any]:
        from pydantic_ai.messages import TextPart, ToolCallPart
        from pydantic_ai.models.function import DeltaToolCall

        response = self._next(messages)
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                for start in range(0, len(part.content), 9):
                    yield part.content[start : start + 9]
            elif isinstance(part, ToolCallPart):
                yield {
                    index: DeltaToolCall(
                        name=part.tool_name,
                        json_args=part.args_as_json_str(),
                        tool_call_id=part.tool_call_id,
                    )
                }


def search(query: str) -> Any:
    from pydantic_ai.messages import ToolCallPart

    # The best passage only: several hits in one short paper merge into one passage that spans
    # it, and the panel would open on that passage's first page rather than the best hit's.
    return ToolCallPart("rag_search", {"query": query, "limit": SEARCH_LIMIT})


def pick(search_output: str, phrase: str, exclude: frozenset[str] | set[str] = frozenset()) -> str:
    """The id of the first result whose text holds ``phrase``, else the first other result."""
    starts = list(CHUNK_LINE.finditer(search_output))
    results = []
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(search_output)
        results.append((match.group(1), " ".join(search_output[match.start() : end].split())))
    if os.environ.get("HAIKU_DESK_SCREENSHOTS_DEBUG"):
        for chunk_id, text in results:
            print(f"    result {chunk_id[:8]}: {text[:160]}", file=sys.stderr)
    candidates = [r for r in results if r[0] not in exclude]
    if not candidates:
        raise ScreenshotError("the scripted model's search returned no passage left to cite")
    return next((cid for cid, text in candidates if phrase in text), candidates[0][0])


# --- a small Ollama-style server on 127.0.0.1 for the settings dialog ------------------------


class _OllamaHandler(BaseHTTPRequestHandler):
    def _send(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path.rstrip("/") == "/api/tags":
            self._send({"models": [{"name": n, "model": n} for n in OLLAMA_MODELS]})
        else:
            self.send_error(404)

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/") == "/api/show":
            tools = ["tools"] if body.get("model") in OLLAMA_TOOL_MODELS else []
            self._send({"capabilities": ["completion", *tools]})
        else:
            self.send_error(404)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class LocalOllama:
    """Ollama's model-list API on 127.0.0.1 (its usual port when free, else any)."""

    def __init__(self) -> None:
        try:
            self.server = ThreadingHTTPServer(("127.0.0.1", 11434), _OllamaHandler)
        except OSError:
            self.server = ThreadingHTTPServer(("127.0.0.1", 0), _OllamaHandler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


# --- the run ---------------------------------------------------------------------------------


class Screenshots:
    """Drives the app's own main window through its states and saves one PNG per state."""

    def __init__(self, out: Path, size: tuple[int, int] = WINDOW_SIZE, scheme: str = "light") -> None:
        self.out = out
        self.size = size
        self.scheme = scheme
        self.saved: list[Path] = []
        self.tmp: Path | None = None
        self.saved_env: dict[str, str | None] = {}
        self.allow_requests: Any = None
        self.app: Any = None
        self.owns_app = False
        self.loop: Any = None
        self.services: Any = None
        self.window: Any = None
        self.default_layout: list[int] = []  # the window's own pane widths at WINDOW_SIZE
        self.ollama: LocalOllama | None = None
        self.step = "setup"
        self.previous_handler: Any = False  # False: no message handler installed

    # --- driver ------------------------------------------------------------------------

    def run(self) -> list[Path]:
        self.out.mkdir(parents=True, exist_ok=True)
        self.at("temporary library", self.setup)
        self.at("window", self.open_window)
        self.at(SHOTS[0], self.empty_library)
        self.at(SHOTS[1], self.ingesting)
        self.at(SHOTS[2], self.answer)
        self.at(SHOTS[3], self.citation)
        self.at(SHOTS[4], self.model_settings)
        return self.saved

    def at(self, step: str, action: Callable[[], None]) -> None:
        self.step = step
        started = time.perf_counter()
        action()
        print(f"  ok  {step:<24} {time.perf_counter() - started:6.1f} s", flush=True)

    # --- setup -------------------------------------------------------------------------

    def _set_env(self, name: str, value: str | None) -> None:
        self.saved_env.setdefault(name, os.environ.get(name))
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value

    def setup(self) -> None:
        from PySide6.QtCore import QSettings, qInstallMessageHandler
        from PySide6.QtWidgets import QApplication

        self.tmp = Path(tempfile.mkdtemp(prefix="haiku-desk-screenshots-"))
        data_home = self.tmp / "xdg-data"
        data_home.mkdir()
        # The user's library, settings and HAIKU_RAG_* variables stay out of it.
        self._set_env("XDG_DATA_HOME", str(data_home))
        for name in [n for n in os.environ if n.startswith("HAIKU_RAG_")]:
            self._set_env(name, None)
        self._set_env("HF_HUB_OFFLINE", "1")
        self._set_env("TRANSFORMERS_OFFLINE", "1")

        import pydantic_ai.models

        self.allow_requests = pydantic_ai.models.ALLOW_MODEL_REQUESTS
        pydantic_ai.models.ALLOW_MODEL_REQUESTS = False  # FunctionModel only

        existing = QApplication.instance()
        if existing is None:
            self._set_env("QT_QPA_PLATFORM", "offscreen")
            # The offscreen plugin warns about window size hints on every dialog: not news here.
            self.previous_handler = qInstallMessageHandler(_quiet_size_hints)
            self.app = QApplication([sys.argv[0]])
            self.owns_app = True
            self.app.setOrganizationName("haiku-desk")
            self.app.setApplicationName("haiku-desk")
            self.app.setApplicationDisplayName("haiku-desk")
            from haiku_desk.views.theme import apply_theme

            apply_theme(self.app, self.scheme)
        else:
            self.app = existing
        if self.app.platformName() != "offscreen":
            raise ScreenshotError(
                f"Qt runs on the {self.app.platformName()!r} platform; screenshots need offscreen "
                "(start without a QApplication, or set QT_QPA_PLATFORM=offscreen)"
            )
        QSettings.setDefaultFormat(QSettings.Format.IniFormat)
        QSettings.setPath(
            QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(self.tmp / "settings")
        )

    def open_window(self) -> None:
        from haiku.rag.config import load_config
        from haiku_desk.bridge import install_event_loop
        from haiku_desk.services import create_services
        from haiku_desk.views.main_window import MainWindow

        assert self.tmp is not None
        defaults = self.tmp / "haiku.rag.yaml"
        defaults.write_text("{}\n", encoding="utf-8")
        config = load_config(defaults)  # built-in settings: the local MiniLM embedder
        config.storage.data_dir = self.tmp / "xdg-data" / "haiku.rag"
        config.storage.data_dir.mkdir(parents=True, exist_ok=True)
        self.loop = install_event_loop(self.app)
        self.services = create_services(config.storage.data_dir / "haiku.rag.lancedb", config)
        opened: list[bool] = []
        self.services.library.opened.connect(lambda: opened.append(True))
        self.window = MainWindow(self.services)
        self.window.citation_panel.open_in_system_viewer = False
        self.window.resize(*self.size)
        self.window.show()
        self.services.library.start()
        self.run_until(lambda: bool(opened), 120, "the library did not open")
        self.run_until(self.window.isVisible, 30, "the main window did not become visible")
        self.default_layout = self.window.splitter.sizes()

    # --- the states --------------------------------------------------------------------

    def empty_library(self) -> None:
        self.arrange(self.default_layout)
        self.settle(0.3)
        if not self.window.library_pane.empty_hint.isVisible():
            raise ScreenshotError("the library pane does not show its empty-library hint")
        self.save(SHOTS[0], self.window.grab())

    def ingesting(self) -> None:
        from haiku_desk.services.library import DocumentState

        assert self.tmp is not None
        papers = write_papers(self.tmp / "papers")
        library = self.services.library
        library_width, chat_width, citation_width = self.default_layout
        spare = max(0, citation_width - EMPTY_CITATION_PANEL_WIDTH)
        self.arrange([library_width + spare, chat_width, citation_width - spare])
        library.add_paths([str(self.tmp / "papers")])  # a folder, as a drop of it would add it

        def score() -> int:
            """How well the window shows ingestion: work under way (1), with a partly filled
            per-file bar (+4 while parsing pages, else +2), beside documents already
            searchable (+2) and documents still waiting (+1)."""
            entries = library.entries
            states = {e.state for e in entries}
            if not any(e.busy for e in entries):
                return 0
            partial = [e for e in entries if e.busy and e.total and 0 < e.done < e.total]
            value = 1
            if any(e.state is DocumentState.PARSING for e in partial):
                value += 4
            elif partial:
                value += 2
            if states & {DocumentState.TEXT, DocumentState.HYBRID}:
                value += 2
            if DocumentState.QUEUED in states:
                value += 1
            return value

        best, best_score = None, 0
        deadline = time.monotonic() + INGEST_TIMEOUT

        def done() -> bool:
            entries = library.entries
            return len(entries) == len(papers) and all(
                e.state is DocumentState.HYBRID for e in entries
            )

        async def watch() -> None:
            import asyncio

            nonlocal best, best_score
            while not done():
                if time.monotonic() > deadline:
                    raise ScreenshotError(
                        f"the papers were not all searchable within {INGEST_TIMEOUT:.0f} s: {self.states()}"
                    )
                failed = [
                    e
                    for e in library.entries
                    if e.state in (DocumentState.FAILED, DocumentState.CANCELLED)
                ]
                if failed:
                    raise ScreenshotError(f"ingestion failed: {self.states()}")
                value = score()
                if value > best_score:  # grab() paints the widgets as they are now
                    best, best_score = self.window.grab(), value
                await asyncio.sleep(0.01)

        self.loop.run_until_complete(watch())
        if best is None:
            raise ScreenshotError("ingestion finished before its progress could be captured")
        self.save(SHOTS[1], best)

    def answer(self) -> None:
        pane = self.window.chat_pane
        self.arrange(self.default_layout)
        self.services.models.use_model_instance(ScriptedResearcher().model)
        pane.input.setPlainText(QUESTION)
        pane.send_button.click()

        def answered() -> bool:
            record = pane.chat.current
            return not pane.chat.busy and record is not None and bool(record.turns)

        self.run_until(answered, ANSWER_TIMEOUT, "the question was not answered")
        if not pane.turn_widgets:
            raise ScreenshotError("the chat pane shows no answer")
        widget = pane.turn_widgets[-1]
        if not widget.chips or len(widget.source_cards) != len(widget.chips):
            raise ScreenshotError(
                f"the answer shows {len(widget.chips)} citation chips and {len(widget.source_cards)} sources"
            )
        # every figure the scripted answer states is in the passage it cites (issue 30's check)
        if "Supported" not in widget.badge.text() or not widget.badge.isVisible():
            raise ScreenshotError(f"the grounding badge reads {widget.badge.text()!r}")
        self.settle(0.3)
        self.save(SHOTS[2], self.window.grab())

    def citation(self) -> None:
        panel = self.window.citation_panel
        widget = self.window.chat_pane.turn_widgets[-1]
        citation = widget.turn.citations[0]
        shown: list[int] = []
        panel.page_shown.connect(shown.append)
        widget.chips[0].click()
        self.run_until(lambda: bool(shown), 60, "the cited page was not shown")
        self.settle(0.4)  # a refit after the panel's first layout renders once more
        matched = {b.page for b in citation.boxes}
        if panel.page not in matched or panel.current_image is None:
            raise ScreenshotError(
                f"the panel shows page {panel.page}, the citation's boxes are on {sorted(matched)}"
            )
        self.save(SHOTS[3], self.window.grab())

    def model_settings(self) -> None:
        dialog = self.window.open_model_settings()
        self.ollama = LocalOllama()
        dialog.provider.setCurrentIndex(dialog.provider.findData("ollama"))
        dialog.base_url.setText(self.ollama.url)
        operation = dialog.find_models()
        self.run_until(
            lambda: not operation.running, 30, "finding the local server's models did not finish"
        )
        dialog.model_name.setCurrentText(CHOSEN_MODEL)
        operation = dialog.test_connection()
        self.run_until(lambda: not operation.running, 30, "the connection test did not finish")
        if not dialog.status.text().startswith("Connected"):
            raise ScreenshotError(f"the dialog's connection test says {dialog.status.text()!r}")
        self.settle(0.2)
        self.save(SHOTS[4], over_window(self.window.grab(), dialog))
        dialog.reject()

    # --- helpers -----------------------------------------------------------------------

    def arrange(self, panes: list[int]) -> None:
        self.window.splitter.setSizes(panes)

    def states(self) -> str:
        return ", ".join(
            f"{e.name}: {e.state_label}{f' ({e.reason})' if e.reason else ''}"
            for e in self.services.library.entries
        )

    def save(self, name: str, pixmap: Any) -> None:
        expected = self.size
        size = (pixmap.width(), pixmap.height())
        if pixmap.isNull() or size != expected:
            raise ScreenshotError(
                f"the grab is {size[0]}x{size[1]}, not {expected[0]}x{expected[1]}"
            )
        path = self.out / name
        if not pixmap.save(str(path), "PNG"):
            raise ScreenshotError(f"cannot write {path}")
        self.saved.append(path)

    def run_until(self, predicate: Callable[[], bool], timeout: float, message: str) -> None:
        import asyncio

        async def poll() -> None:
            deadline = time.monotonic() + timeout
            while not predicate():
                if time.monotonic() > deadline:
                    raise ScreenshotError(f"{message} within {timeout:.0f} s")
                await asyncio.sleep(0.02)

        self.loop.run_until_complete(poll())

    def settle(self, seconds: float) -> None:
        import asyncio

        self.loop.run_until_complete(asyncio.sleep(seconds))

    def cleanup(self) -> None:
        import asyncio

        import pydantic_ai.models

        if self.ollama is not None:
            self.ollama.close()
        if self.window is not None:
            self.window.close()
            self.window.deleteLater()
        if self.services is not None and self.loop is not None and not self.loop.is_closed():
            try:
                self.loop.run_until_complete(self.services.library.aclose())
            except Exception:  # noqa: BLE001 - cleanup must not hide the step's own error
                self.services.library.close()
            self.services.pages.close()
            self.loop.run_until_complete(asyncio.sleep(0.1))
        if self.owns_app and self.loop is not None and not self.loop.is_closed():
            self.loop.close()  # joins the worker threads before Qt goes away
        if self.previous_handler is not False:
            from PySide6.QtCore import qInstallMessageHandler

            qInstallMessageHandler(self.previous_handler)
        if self.allow_requests is not None:
            pydantic_ai.models.ALLOW_MODEL_REQUESTS = self.allow_requests
        for name, value in self.saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _quiet_size_hints(mode: Any, context: Any, message: str) -> None:
    if "propagateSizeHints" not in message:
        print(message, file=sys.stderr)


def over_window(window_grab: Any, dialog: Any) -> Any:
    """The window dimmed, with the dialog (and a plain title bar) centred over it, as a modal
    dialog looks on a desktop; offscreen, each top-level window is grabbed on its own."""
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtGui import QColor, QFont, QPainter, QPen

    dialog.adjustSize()
    body = dialog.grab()
    result = window_grab.copy()
    painter = QPainter(result)
    painter.fillRect(result.rect(), QColor(0, 0, 0, 90))
    title_height = 30
    x = (result.width() - body.width()) // 2
    y = (result.height() - body.height() - title_height) // 2
    frame = QRect(x - 1, y - 1, body.width() + 2, body.height() + title_height + 2)
    palette = dialog.palette()
    painter.fillRect(frame, palette.color(palette.ColorRole.Mid))
    title = QRect(x, y, body.width(), title_height)
    painter.fillRect(title, palette.color(palette.ColorRole.Button))
    font = QFont(dialog.font())
    font.setBold(True)
    painter.setFont(font)
    painter.setPen(QPen(palette.color(palette.ColorRole.WindowText)))
    painter.drawText(title, Qt.AlignmentFlag.AlignCenter, dialog.windowTitle())
    painter.drawPixmap(x, y + title_height, body)
    painter.end()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Save screenshots of haiku-desk's main states, offscreen."
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"folder for the PNGs (default: {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--size",
        default=f"{WINDOW_SIZE[0]}x{WINDOW_SIZE[1]}",
        help="window size, WIDTHxHEIGHT (default: %(default)s)",
    )
    parser.add_argument(
        "--scheme",
        choices=("light", "dark"),
        default="light",
        help="colour scheme (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        parser.error(f"--size wants WIDTHxHEIGHT, e.g. 1024x640, not {args.size!r}")
    run = Screenshots(args.out.expanduser().resolve(), (width, height), args.scheme)
    print(f"haiku-desk screenshots into {run.out}", flush=True)
    try:
        saved = run.run()
    except ScreenshotError as exc:
        print(f"screenshots FAILED at '{run.step}': {exc}", file=sys.stderr, flush=True)
        return 1
    except Exception as exc:  # noqa: BLE001 - any failure must name its step
        message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        print(f"screenshots FAILED at '{run.step}': {message}", file=sys.stderr, flush=True)
        return 1
    finally:
        run.cleanup()
    for path in saved:
        print(f"  {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))  # a source checkout without an editable install
    sys.exit(main())
