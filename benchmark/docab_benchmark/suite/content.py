"""What the built-in suite says: seeded documents and their questions, as plain data (no I/O).

Three short documents (a financial report, a research report, a guidebook) whose questions cover
every evidence source (text, layout, table, chart, figure), single- and cross-page evidence,
unanswerable questions, and all five answer formats. Chart and figure answers are drawn into
raster images only: ``hidden_answer_leaks`` proves none of them is in the text the PDF carries.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Literal

TEXT, LAYOUT, TABLE, CHART, FIGURE = (
    "Pure-text (Plain-text)",
    "Generalized-text (Layout)",
    "Table",
    "Chart",
    "Figure",
)
NOT_ANSWERABLE = "Not answerable"


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Box:
    """A shaded box on the right of the page, on lines of its own (a layout element)."""

    title: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class BarChart:
    title: str
    labels: tuple[str, ...]
    values: tuple[int, ...]
    caption: str


@dataclass(frozen=True)
class PieChart:
    title: str
    labels: tuple[str, ...]
    shares: tuple[float, ...]  # percentages, one decimal, summing to 100
    caption: str
    note: str = ""  # drawn under the pie, inside the image


@dataclass(frozen=True)
class SiteMap:
    """Coloured markers with codes, and a legend, drawn as an image."""

    markers: tuple[tuple[str, str, float, float], ...]  # code, colour name, x, y in [0, 1]
    legend: tuple[tuple[str, str], ...]  # colour name, meaning
    caption: str


@dataclass(frozen=True)
class FloorPlan:
    """Rooms as labelled rectangles in a grid (row-major), drawn as an image."""

    rows: tuple[tuple[str, ...], ...]
    caption: str


Block = Heading | Paragraph | Box | Table | BarChart | PieChart | SiteMap | FloorPlan
Format = Literal["Int", "Float", "Str", "None", "List"]


@dataclass(frozen=True)
class Page:
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    answer_format: Format
    pages: tuple[int, ...]
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Document:
    doc_id: str
    doc_type: str
    title: str
    pages: tuple[Page, ...]
    questions: tuple[Question, ...] = field(default_factory=tuple)


def _phone(rng: random.Random) -> str:
    return f"555-{rng.randrange(100, 999):04d}"


def _financial_report(rng: random.Random) -> Document:
    company = rng.choice(["Northwind Tools", "Larkspur Foods", "Bluefin Logistics", "Cedar Lane Textiles"])
    founded = rng.randrange(1952, 1994)
    employees = rng.randrange(1200, 4800)
    city = rng.choice(["Leeds", "Porto", "Ghent", "Tampere"])
    contact = rng.choice(["Maria Okafor", "Jonas Lindqvist", "Priya Raman", "Tomas Weber"])
    phone = _phone(rng)
    regions = ["North", "South", "East", "West"]
    revenue_2022 = [round(rng.uniform(20, 60), 1) for _ in regions]
    growth = [True, False, True, False]
    rng.shuffle(growth)
    revenue_2023 = [
        round(r * (1 + rng.uniform(0.05, 0.2)) if g else r * (1 - rng.uniform(0.05, 0.2)), 1)
        for r, g in zip(revenue_2022, growth, strict=True)
    ]
    priority = rng.choice(regions)
    quarters = ["Q1", "Q2", "Q3", "Q4"]
    units = rng.sample(range(611, 989, 7), 4)
    best = quarters[units.index(max(units))]
    asked_region = rng.choice(regions)
    table = Table(
        ("Region", "2022", "2023"),
        tuple(
            (r, f"{a:.1f}", f"{b:.1f}") for r, a, b in zip(regions, revenue_2022, revenue_2023, strict=True)
        ),
    )
    pages = (
        Page(
            (
                Heading(f"{company} Annual Report 2023", 1),
                Box("Investor contact", (contact, f"Phone {phone}")),
                Paragraph(
                    f"{company} was founded in {founded} in {city}. Today the company employs {employees} people "
                    "and sells its products through partners in four sales regions. This report summarises the "
                    "financial year 2023, the development of each region and the outlook for the coming year."
                ),
                Paragraph(
                    "All revenue figures are stated in million euro. Unit sales are counted when goods leave "
                    "the central warehouse."
                ),
            )
        ),
        Page(
            (
                Heading("Revenue by region"),
                Paragraph(
                    "The table below lists the revenue of each sales region in 2022 and 2023, in million euro."
                ),
                table,
            )
        ),
        Page(
            (
                Heading("Quarterly unit sales"),
                Paragraph(
                    "Unit sales varied across the year. The chart shows the number of units sold in each quarter."
                ),
                BarChart(
                    "Units sold in 2023",
                    tuple(quarters),
                    tuple(units),
                    "Figure 1. Units sold per quarter in 2023.",
                ),
            )
        ),
        Page(
            (
                Heading("Outlook"),
                Paragraph(
                    f"For 2024 the board has named the {priority} region as the growth priority. Investment in the "
                    "other regions will be held at the level of 2023."
                ),
            )
        ),
    )
    grew = sorted(r for r, g in zip(regions, growth, strict=True) if g)
    questions = (
        Question(f"In which year was {company} founded?", str(founded), "Int", (1,), (TEXT,)),
        Question(f"How many people does {company} employ?", str(employees), "Int", (1,), (TEXT,)),
        Question(
            f"What was the revenue of the {asked_region} region in 2023, in million euro?",
            f"{revenue_2023[regions.index(asked_region)]:.1f}",
            "Float",
            (2,),
            (TABLE,),
        ),
        Question(
            "Which regions had a higher revenue in 2023 than in 2022?", str(grew), "List", (2,), (TABLE,)
        ),
        Question(
            "According to the bar chart, how many units were sold in Q3 2023?",
            str(units[2]),
            "Int",
            (3,),
            (CHART,),
        ),
        Question("Which quarter had the highest unit sales in 2023?", best, "Str", (3,), (CHART,)),
        Question(
            "How many more units were sold in the best quarter of 2023 than in the weakest one?",
            str(max(units) - min(units)),
            "Int",
            (3,),
            (CHART,),
        ),
        Question(
            "What telephone number is given in the shaded investor contact box on the first page?",
            phone,
            "Str",
            (1,),
            (LAYOUT,),
        ),
        Question(
            "What was the 2023 revenue, in million euro, of the region the board named as its growth priority?",
            f"{revenue_2023[regions.index(priority)]:.1f}",
            "Float",
            (2, 4),
            (TABLE, TEXT),
        ),
        Question(f"What dividend per share did {company} pay for 2023?", NOT_ANSWERABLE, "None", (), ()),
    )
    return Document(
        "suite-annual-report.pdf", "Financial report", f"{company} Annual Report 2023", pages, questions
    )


def _research_report(rng: random.Random) -> Document:
    city = rng.choice(["Utrecht", "Bergen", "Lyon", "Dundee"])
    weeks = rng.randrange(6, 15)
    volunteers = rng.randrange(30, 90)
    author = rng.choice(["Dr. Helen Achebe", "Dr. Ruben Costa", "Dr. Mei Tanaka", "Dr. Sara Novak"])
    parks = [f"P{i}" for i in range(1, rng.randrange(3, 5) + 1)]
    rivers = [f"R{i}" for i in range(1, rng.randrange(2, 4) + 1)]
    # distinct cells of a 4 x 3 grid, jittered inside the cell: markers never overlap
    cells = rng.sample([(c, r) for c in range(4) for r in range(3)], len(parks) + len(rivers))
    spots = [((c + 0.25 + 0.5 * rng.random()) / 4, (r + 0.25 + 0.5 * rng.random()) / 3) for c, r in cells]
    markers = tuple(
        (code, "red" if code.startswith("P") else "blue", x, y)
        for code, (x, y) in zip(parks + rivers, spots, strict=True)
    )
    species = ["Sparrow", "Blackbird", "Starling", "Great tit"]
    cuts = sorted(rng.sample(range(80, 920), 3))
    tenths = [b - a for a, b in zip([0, *cuts], [*cuts, 1000], strict=True)]
    shares = [t / 10 for t in tenths]
    top = species[shares.index(max(shares))]
    observations = rng.randrange(2400, 5400)
    asked = rng.choice([s for s in species if s != top])
    pairs = [rng.randrange(11, 58) for _ in species]
    table_species = rng.choice(species)
    pages = (
        Page(
            (
                Heading(f"Urban Bird Survey of {city}", 1),
                Box("Key facts", (f"Lead author: {author}", f"Volunteers: {volunteers}")),
                Paragraph(
                    f"This report presents a survey of breeding birds in {city}. Observers walked fixed routes "
                    f"at every survey site once a week for {weeks} weeks in spring, recording each bird seen or heard."
                ),
            )
        ),
        Page(
            (
                Heading("Survey sites"),
                Paragraph(
                    "Sites were chosen in parks and along the riverside. Their locations are shown on the map."
                ),
                SiteMap(
                    markers, (("red", "Park"), ("blue", "Riverside")), "Figure 1. Map of the survey sites."
                ),
            )
        ),
        Page(
            (
                Heading("Species observed"),
                Paragraph(
                    "Four species made up the observations. The chart gives the share of each species."
                ),
                PieChart(
                    "Share of observations",
                    tuple(species),
                    tuple(shares),
                    "Figure 2. Share of observations by species.",
                    note=f"Total: {observations} observations",
                ),
            )
        ),
        Page(
            (
                Heading("Nesting pairs"),
                Paragraph("Nesting pairs were counted at the end of the survey period."),
                Table(
                    ("Species", "Nesting pairs"),
                    tuple((s, str(p)) for s, p in zip(species, pairs, strict=True)),
                ),
                Paragraph("Further surveys are planned to follow the development of each population."),
            )
        ),
    )
    questions = (
        Question("For how many weeks did the survey run?", str(weeks), "Int", (1,), (TEXT,)),
        Question("Who is named as lead author in the key facts box?", author, "Str", (1,), (LAYOUT,)),
        Question(
            "How many survey sites are marked on the map in Figure 1?",
            str(len(markers)),
            "Int",
            (2,),
            (FIGURE,),
        ),
        Question("Which site codes on the map are park sites?", str(parks), "List", (2,), (FIGURE,)),
        Question("What colour are the markers of the riverside sites?", "blue", "Str", (2,), (FIGURE,)),
        Question(
            "According to the pie chart, how many observations were recorded in total?",
            str(observations),
            "Int",
            (3,),
            (CHART,),
        ),
        Question(
            f"What percentage of the observations were of the species {asked}?",
            f"{shares[species.index(asked)]:.1f}%",
            "Float",
            (3,),
            (CHART,),
        ),
        Question(
            f"How many nesting pairs of {table_species} were counted?",
            str(pairs[species.index(table_species)]),
            "Int",
            (4,),
            (TABLE,),
        ),
        Question(
            "How many nesting pairs were counted for the species with the largest share of observations?",
            str(pairs[species.index(top)]),
            "Int",
            (3, 4),
            (CHART, TABLE),
        ),
        Question("How many birds were ringed during the survey?", NOT_ANSWERABLE, "None", (), ()),
    )
    return Document(
        "suite-bird-survey.pdf",
        "Research report / Introduction",
        f"Urban Bird Survey of {city}",
        pages,
        questions,
    )


def _guidebook(rng: random.Random) -> Document:
    university = rng.choice(["Harbour Hill University", "Westmere College", "Kingsgate Institute"])
    distance = round(rng.uniform(1.5, 6.5), 1)
    emergency = _phone(rng)
    email = f"visitors@{university.split()[0].lower()}.example.edu"
    hours = {
        "Library": ("08:00 - 22:00", f"{rng.choice(['09', '10'])}:00 - 18:00"),
        "Sports centre": ("07:00 - 21:00", "09:00 - 17:00"),
        "Visitor centre": ("09:00 - 17:00", "closed"),
    }
    hidden_rooms = ["Quiet Study Room", "Map Archive", "Media Lab", "Seminar Room", "Print Shop"]
    rng.shuffle(hidden_rooms)
    grid = (
        ("Library", hidden_rooms[0], hidden_rooms[1]),
        (hidden_rooms[2], "Visitor centre", hidden_rooms[3]),
    )
    services = ["printing", "locker rental", "lost and found"]
    pages = (
        Page(
            (
                Heading(f"{university} Visitor Guide", 1),
                Box("Emergency", ("Campus security", f"Call {emergency}")),
                Paragraph(
                    f"Welcome to {university}. The campus lies {distance} km from the central station and can be "
                    "reached by bus or bicycle. This guide lists opening hours, the ground floor plan of the main "
                    "building and the services offered to visitors."
                ),
            )
        ),
        Page(
            (
                Heading("Opening hours"),
                Table(("Facility", "Weekdays", "Weekends"), tuple((k, a, b) for k, (a, b) in hours.items())),
            )
        ),
        Page(
            (
                Heading("Ground floor plan"),
                Paragraph("The plan below shows the rooms on the ground floor of the main building."),
                FloorPlan(grid, "Figure 1. Ground floor of the main building."),
            )
        ),
        Page(
            (
                Heading("Contacts and services"),
                Paragraph(
                    f"The help desk offers {services[0]}, {services[1]} and {services[2]}. Questions about a visit "
                    f"can be sent to {email}."
                ),
            )
        ),
    )
    in_both = sum(1 for row in grid for room in row if room in hours)
    questions = (
        Question(
            "When does the library open and close at weekends?", hours["Library"][1], "Str", (2,), (TABLE,)
        ),
        Question("What number should visitors call in an emergency?", emergency, "Str", (1,), (LAYOUT,)),
        Question(
            "How far is the campus from the central station, in km?", str(distance), "Float", (1,), (TEXT,)
        ),
        Question(
            "Which room lies directly to the right of the Library on the ground floor plan?",
            grid[0][1],
            "Str",
            (3,),
            (FIGURE,),
        ),
        Question(
            "How many rooms are shown on the ground floor plan?",
            str(sum(len(r) for r in grid)),
            "Int",
            (3,),
            (FIGURE,),
        ),
        Question("Which services does the help desk offer?", str(services), "List", (4,), (TEXT,)),
        Question("To which e-mail address can questions about a visit be sent?", email, "Str", (4,), (TEXT,)),
        Question(
            "How many rooms on the ground floor plan also appear in the opening hours table?",
            str(in_both),
            "Int",
            (2, 3),
            (TABLE, FIGURE),
        ),
        Question("What is the hourly parking fee on campus?", NOT_ANSWERABLE, "None", (), ()),
    )
    return Document("suite-visitor-guide.pdf", "Guidebook", f"{university} Visitor Guide", pages, questions)


def build_documents(seed: int) -> tuple[Document, ...]:
    """The suite's documents and questions for ``seed`` (the same seed always gives the same suite)."""
    rng = random.Random(seed)
    return (_financial_report(rng), _research_report(rng), _guidebook(rng))


def samples(documents: tuple[Document, ...]) -> list[dict[str, str]]:
    """The questions in MMLongBench-Doc's samples.json schema (every field a string)."""
    return [
        {
            "doc_id": doc.doc_id,
            "doc_type": doc.doc_type,
            "question": q.question,
            "answer": q.answer,
            "evidence_pages": str(list(q.pages)),
            "evidence_sources": str(list(q.sources)),
            "answer_format": q.answer_format,
        }
        for doc in documents
        for q in doc.questions
    ]


def text_layer(document: Document) -> str:
    """Every string the PDF carries as text (charts, maps and plans are images)."""
    parts: list[str] = [document.title]
    for page in document.pages:
        for block in page.blocks:
            if isinstance(block, (Heading, Paragraph)):
                parts.append(block.text)
            elif isinstance(block, Box):
                parts.extend((block.title, *block.lines))
            elif isinstance(block, Table):
                parts.extend((*block.header, *(cell for row in block.rows for cell in row)))
            elif isinstance(block, (BarChart, PieChart, SiteMap, FloorPlan)):
                parts.append(block.caption)
    return "\n".join(parts)


def _answer_items(question: Question) -> list[str]:
    if question.answer_format == "List":
        return [item.strip(" '\"") for item in question.answer.strip("[]").split(",")]
    return [question.answer.rstrip("%")]


def hidden_answer_leaks(documents: tuple[Document, ...]) -> list[str]:
    """Chart/figure-only answers that also appear in the document's text (must be empty)."""
    leaks = []
    for doc in documents:
        text = text_layer(doc)
        for q in doc.questions:
            if not set(q.sources) <= {CHART, FIGURE} or not q.sources:
                continue
            for item in _answer_items(q):
                if re.search(rf"(?<![\w.]){re.escape(item)}(?![\w.])", text, re.IGNORECASE):
                    leaks.append(f"{doc.doc_id}: {q.question} -> {item!r} is in the text layer")
    return leaks
