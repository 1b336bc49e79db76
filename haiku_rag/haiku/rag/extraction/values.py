"""Reading a cell out of an answer: the value by column type, the quote, the own-document rule.

Cheap and deterministic (no model): a number and its unit, yes/no/unclear, one of the column's
categories; the quote is a sentence of the cited text itself (never the model's words); a
citation naming another document than the row's is refused here, whatever produced it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from haiku.rag.citations import MARKER, Citation, split_sentences, tables_as_text
from haiku.rag.search.references import is_reference_heading

QUOTE_CHARS = 300

# "I did not find …", "I cannot find …" (answering's refusals), and the usual ways of saying so
_NOT_FOUND = re.compile(
    r"\bI (?:cannot|could not|couldn't|can't|did not|didn't) find\b"
    r"|\bnot (?:found|stated|reported|mentioned|given|specified|available)\b"
    r"|\b(?:does|do|did) not (?:say|state|report|mention|give|specify|provide)\b"
    r"|\bno (?:information|mention)\b"
    r"|^\s*(?:n/?a|none|unknown)\s*[.!]?\s*$",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-−–])?(?P<cur>[$€£¥])?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<unit>\s?%|(?:\s+(?!and\b|or\b|in\b|of\b|for\b|the\b|from\b|to\b|at\b|was\b|were\b|is\b)"
    r"[A-Za-zµ°][\w/°µ.-]*){1,2})?"
)
_YES = re.compile(r"^\W*(yes|yeah|true|correct)\b", re.IGNORECASE)
_NO = re.compile(r"^\W*(no|not|false|none)\b", re.IGNORECASE)
_UNCLEAR = re.compile(r"^\W*(unclear|uncertain|unknown|it is unclear|not clear)\b", re.IGNORECASE)
_STOP = {
    "the", "and", "for", "with", "that", "this", "from", "were", "was", "are", "has", "have",
    "had", "been", "which", "their", "they", "them", "than", "then", "into", "over", "such",
    "also", "there", "these", "those", "about", "what", "when", "where", "does", "document",
    "paper", "study", "report", "answer",
}  # fmt: skip


def plain_text(answer: str) -> str:
    """The answer without its ``[n]`` markers, on one line."""
    return " ".join(MARKER.sub("", answer).split()).strip()


def short_value(text: str) -> str:
    """A one-sentence answer without its closing full stop ("120 participants." -> "120
    participants"); longer answers as they are."""
    body = text.strip()
    if body.endswith(".") and not re.search(r"[.!?]\s", body[:-1]):
        return body[:-1].rstrip()
    return body


def says_not_found(text: str) -> bool:
    return not text.strip() or bool(_NOT_FOUND.search(text))


def read_number(text: str) -> tuple[float | None, str | None]:
    """The first figure of ``text`` and the unit written with it (``"120 participants"`` ->
    ``(120.0, "participants")``; ``"$2.5 million"`` -> ``(2.5, "$ million")``)."""
    for match in _NUMBER.finditer(text):
        raw = match.group("num").replace(",", "")
        try:
            value = float(raw)
        except ValueError:  # pragma: no cover - the pattern only matches numbers
            continue
        if match.group("sign"):
            value = -value
        unit_parts = [match.group("cur") or "", (match.group("unit") or "").strip().rstrip(".,;:")]
        unit = " ".join(p for p in unit_parts if p) or None
        return value, unit
    return None, None


def the_only_number(text: str) -> tuple[float | None, str | None]:
    """``read_number`` when ``text`` holds exactly one figure, else nothing (a passage's sentence
    with a year and a count must not pass its year for the answer)."""
    if len(list(_NUMBER.finditer(text))) != 1:
        return None, None
    return read_number(text)


def read_yes_no(text: str) -> str | None:
    if _UNCLEAR.search(text):
        return "unclear"
    if _YES.search(text):
        return "yes"
    if _NO.search(text):
        return "no"
    return None


def read_category(text: str, categories: Sequence[str]) -> str | None:
    """The category the answer names: the one it starts with, else the only one it mentions."""
    folded = " ".join(text.casefold().split())
    for category in sorted(categories, key=len, reverse=True):
        if folded.startswith(category.casefold()):
            return category
    named = [
        c for c in categories if re.search(rf"(?<!\w){re.escape(c.casefold())}(?!\w)", folded)
    ]
    return named[0] if len(named) == 1 else None


def own_citations(
    citations: Sequence[Citation], document_id: str
) -> tuple[list[Citation], list[Citation]]:
    """(the citations of ``document_id``, the ones naming another document: refused)."""
    own = [c for c in citations if c.document_id == document_id]
    return own, [c for c in citations if c.document_id != document_id]


_SUFFIX = re.compile(r"(?:ing|ed|es|s)$")


def _stem(word: str) -> str:
    """A crude stem, enough for "blinded" to meet "blinding" and "participants" "participant"."""
    return _SUFFIX.sub("", word) if len(word) > 5 else word


def _words(text: str) -> list[str]:
    return [
        _stem(w)
        for w in re.findall(r"[a-z0-9]+", text.casefold())
        if len(w) > 2 and w not in _STOP
    ]


def cited_text(citation: Citation) -> str:
    """What a citation covers, as a reader sees it (tables as words)."""
    return tables_as_text(citation.matched_text or citation.content)


def best_quote(
    citations: Sequence[Citation], value: str, question: str = "", *, passages: bool = False
) -> str:
    """The sentence of the cited text that shares most words with ``value`` (then with the
    question), cut to ``QUOTE_CHARS``; "" without citations. ``passages``: look in the whole
    passage each citation showed (search-only), not only the chunk it cites."""
    return best_sentence(citations, value, question, passages=passages)[0]


def best_sentence(
    citations: Sequence[Citation], value: str, question: str = "", *, passages: bool = False
) -> tuple[str, int]:
    """``best_quote`` and the index of the citation it comes from (-1 without citations); the
    earlier citation wins a tie."""
    wanted = set(_words(value))
    asked = set(_words(question))
    best, best_score, best_index = "", (-1, -1), -1
    for index, citation in enumerate(citations):
        text = tables_as_text(citation.content) if passages else cited_text(citation)
        for start, end in split_sentences(text):
            sentence = " ".join(text[start:end].split())
            words = set(_words(sentence))
            score = (len(wanted & words), len(asked & words))
            if score > best_score:
                best, best_score, best_index = sentence, score, index
    return _cut(best), best_index


def _cut(best: str) -> str:
    if len(best) > QUOTE_CHARS:
        best = best[: QUOTE_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return best


def words_found(value: str, citations: Sequence[Citation], *, passages: bool = False) -> float:
    """The share of the value's content words found in the cited text (1.0 with no words);
    ``passages``: in the whole passage each citation showed, not only the chunk it cites."""
    words = _words(value)
    if not words:
        return 1.0
    texts = [tables_as_text(c.content) if passages else cited_text(c) for c in citations]
    cited = set(_words(" ".join(texts)))
    return sum(1 for w in words if w in cited) / len(words)


def _folded(text: str) -> str:
    text = text.replace("’", "'").replace("“", '"').replace("”", '"')
    return " ".join(re.sub(r"[*_`|#>]+", " ", text).casefold().split())


def quote_in(quote: str, text: str) -> bool:
    """Whether ``text`` holds ``quote`` word for word (a quote cut short with "…" by its
    longest piece)."""
    pieces = [p.strip(" .,;:") for p in _folded(quote).split("…")]
    piece = max(pieces, key=len, default="")
    return bool(piece) and piece in _folded(text)


# --- search-only: the value is a sentence or table row of the cited chunk -------------------

# words a column's name shares with too much of any document to tell a fact by alone
_GENERIC = {
    "total", "net", "gross", "number", "amount", "value", "annual", "company", "pay", "pays",
    "per", "many", "much", "how", "did", "its", "used", "use",
}  # fmt: skip
# form and legal boilerplate: cover-page check boxes, signature blocks, safe-harbour notices
_BOILERPLATE = re.compile(
    r"[☐☒☑□■]|\bcheck mark\b|\bcheck the appropriate box\b|\bregistrant\b"
    r"|\bpursuant to the requirements\b|\bforward-looking statements?\b"
    r"|\bbased on my knowledge\b|\buntrue statement\b"
    r"|\bfrom\s*_*\s*to\s*_*\s*[.;]?\s*$",  # a form's blank left unfilled: "… from to ."
    re.IGNORECASE,
)
# a reference-list entry, as its line starts: "[12] …", "12. Surname, A.", "Surname, A., and …"
_REFERENCE_LINE = re.compile(
    r"^\s*(?:\[\d{1,3}\]|\d{1,3}\.\s+[A-Z][\w'-]+,\s+[A-Z]\.)"
    r"|^\s*[A-Z][\w'-]+,\s+(?:[A-Z]\.\s*){1,3}(?:,|and\b|&|et al\.)"
)
# what only a reference says: a DOI, an arXiv id, proceedings, page ranges
_REFERENCE = re.compile(r"\bdoi:|\bdoi\.org/|\barXiv:\d|\bIn Proceedings\b|\bpp\.\s*\d")
# a sentence announcing what follows it ("The following table shows …:", "… as follows:")
_LEAD_IN = re.compile(r"\b(?:following|follows|below|summari[sz]\w*|set forth)\b", re.IGNORECASE)
_CAPTION = re.compile(r"^\s*(?:Table|Figure|Fig\.|Exhibit|Chart)\s+[\dIVXA-Z]+[.:\s]", re.IGNORECASE)
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
# a number that names something rather than measures it: a year, a day of a month, "Note 10"
# (and "000" as in "shares in 000's", a unit)
_NAMING = re.compile(
    r"^(?:1[89]\d\d|20\d\d)$"
)
_NAMED_BEFORE = re.compile(
    rf"(?:\b{_MONTH}|\b(?:Note|Item|Section|Rule|Form|Part|Page|Article|Schedule|Exhibit|Table|Figure|No\.?)|#)\s*$",
    re.IGNORECASE,
)
SEARCH_WORDS_MIN = 3  # a sentence (not a table row) has at least this many words


def _key(word: str) -> str:
    """A word's key for matching a column's words: "revenues" and "revenue" meet."""
    stem = _stem(word)
    return stem.rstrip("e") if len(stem) > 5 else stem


def column_words(question: str) -> tuple[set[str], set[str]]:
    """(the question's content-word keys, those of them that tell its fact: not generic)."""
    words = {_key(w) for w in re.findall(r"[a-z0-9]+", question.casefold()) if len(w) > 2 and w not in _STOP}
    telling = {w for w in words if w not in {_key(g) for g in _GENERIC}}
    return words, telling or words


def telling_words(question: str) -> list[str]:
    """The question's telling words as it writes them, in order ("Sample size" -> ["sample",
    "size"]): what a search-only cell looks for in a sentence."""
    _, telling = column_words(question)
    written: dict[str, None] = {}
    for word in re.findall(r"[a-z0-9]+", question.casefold()):
        if len(word) > 2 and word not in _STOP and _key(word) in telling:
            written.setdefault(word, None)
    return list(written)


def names_words(text: str, question: str) -> bool:
    """Whether ``text`` names one of the question's telling words (as a candidate must)."""
    return bool(_keys(text) & column_words(question)[1])


def _keys(text: str) -> set[str]:
    return {_key(w) for w in re.findall(r"[a-z0-9]+", text.casefold()) if len(w) > 2}


def figures(text: str) -> list[str]:
    """The figures ``text`` states (amounts, counts, shares), not the numbers that name a year,
    a day, a note or an item."""
    found = []
    for match in _NUMBER.finditer(text):
        raw = match.group("num")
        if _NAMING.match(raw) or re.fullmatch(r"0{2,}", raw) or _NAMED_BEFORE.search(text[: match.start()]):
            continue
        found.append(raw)
    return found


def _is_heading_like(unit: str, titles: set[str]) -> bool:
    """A title, a heading or a label: the document's title or a heading of the chunk, a
    Markdown heading, or a short line that neither ends a sentence nor states a figure, or
    whose words are capitalised as a title's are."""
    text = unit.strip()
    if text.startswith("#") or " ".join(text.casefold().split()).strip(" .:") in titles:
        return True
    if text.endswith((".", "!", "?", ";")) and len(text.split()) >= SEARCH_WORDS_MIN:
        return False
    words = re.findall(r"[A-Za-z][\w'’-]*", text)
    small = {"of", "and", "the", "for", "in", "on", "to", "a", "an", "per", "or", "by", "at", "with"}
    capitalised = [w for w in words if w.casefold() not in small]
    if capitalised and all(w[0].isupper() for w in capitalised):
        return True  # Title Case (or ALL CAPS) without a full stop: a heading or a title
    return not re.search(r"\d", text) and len(words) < 12  # a date line ("For the year ended
    # December 31, 2019") is a statement, a bare label is not


REFERENCE_ENTRY = _REFERENCE_LINE  # a reference-list entry's line


def is_references_heading(line: str) -> bool:
    """Whether ``line`` heads a reference list ("References", "7 Bibliography", "Références",
    "Literaturverzeichnis" …): the names search demotes (``haiku.rag.search.references``)."""
    return is_reference_heading(line)


def search_units(citation: Citation, *, passage: bool = False) -> list[str]:
    """The sentences and table rows of the chunk a citation highlights (``passage``: of the
    whole passage around it) that may be a cell's value: never a title, a heading, a caption
    alone, a lead-in, a reference-list entry or form boilerplate."""
    titles = {" ".join(h.casefold().split()).strip(" .:") for h in citation.headings}
    if citation.document_title:
        titles.add(" ".join(citation.document_title.casefold().split()).strip(" .:"))
    in_references = any(is_reference_heading(h) for h in citation.headings[-1:])
    units = []
    text = tables_as_text(citation.content) if passage else cited_text(citation)
    for line in text.split("\n"):
        if is_reference_heading(line):
            in_references = True
            continue
        if in_references and line.strip() and _is_heading_like(line.strip(), titles):
            in_references = False  # the next section
            continue
        if in_references or _REFERENCE_LINE.match(line):
            continue  # a reference entry: none of its sentences (its title neither)
        units.extend(_fitting_units(line, titles))
    return units


def _fitting_units(text: str, titles: set[str]) -> list[str]:
    units = []
    for start, end in split_sentences(text):
        unit = " ".join(text[start:end].split())
        if not unit or _BOILERPLATE.search(unit) or _CAPTION.match(unit) or _REFERENCE.search(unit):
            continue
        if unit.endswith(":") and _LEAD_IN.search(unit) and not unit.startswith("• "):
            continue  # a lead-in ("The following table shows …:"): it announces, states nothing
        if unit.startswith("• "):  # a table row: its label and figures
            units.append(unit)
        elif not _is_heading_like(unit, titles):
            units.append(unit)
    return units


# words a row's label may hold that qualify its fact: "Total revenue" for a revenue question
# is the revenue, "Deferred revenue" is another line
_QUALIFIERS = {"total", "net", "gross"}
# a question's words that no row label repeats ("the company's", "how many", "FY2019")
_UNLABELLED = {
    _key(w) for w in [
        *(_GENERIC - _QUALIFIERS), "say", "fiscal", "year", "reported", "quarter", "period", "ended",
    ]
}  # fmt: skip
_STOP_KEYS = {_key(w) for w in _STOP}
_QUALIFIER_KEYS = {_key(w) for w in _QUALIFIERS}


def _label_keys(text: str) -> list[str]:
    return [_key(w) for w in re.findall(r"[a-z0-9]+", text.casefold())]


def row_label(unit: str) -> str:
    """A table row's label: its first cell, without its column's name ("• ($ in millions):
    Total revenue; 2023: 4,210" -> "Total revenue")."""
    first = unit.removeprefix("• ").split(";", 1)[0]
    return first.split(": ", 1)[1] if ": " in first else first


def fit_words(question: str) -> set[str]:
    """The keys of the question's words a row's label may hold (not its numbers, not the
    generic "company", "fiscal year"; "total", "net", "gross" kept)."""
    return {
        k for w in re.findall(r"[a-z0-9]+", question.casefold())
        if len(w) > 2 and w not in _STOP and not re.search(r"\d", w) and (k := _key(w)) not in _UNLABELLED
    }  # fmt: skip


def names_another_line(question: str, label: str) -> bool:
    """Whether a row's label names another line than the one asked for: it lacks some of the
    question's words and adds a qualifier of its own ("Deferred revenue" for "Total revenue",
    "Operating income" for "Net income", "Net income" for "Interest income"; not "Revenues" for
    "Total revenue", nor "Net income attributable to Costco" for "Net income")."""
    held, extra, _ = label_fit(question, label)
    return extra < 0 and held < len(fit_words(question))


def label_fit(question: str, text: str) -> tuple[int, int, int]:
    """How well ``text`` (a row's label, or a sentence) names what ``question`` asks, to compare
    rows: (how many of the question's words it holds, minus how many qualifying words it adds
    that the question does not have, whether it is a phrase of the question word for word).
    "Total revenue" fits "What was the total revenue?" (2, 0, 1) better than "Total deferred
    revenue" (2, -1, 0); "Net income" fits "Net income" (2, 0, 1) better than "Net income
    attributable to noncontrolling interests" (2, -3, 0). Numbers and the question's generic
    words ("company", "fiscal year") are not counted; "total", "net", "gross" are when the
    question has them, and are no added qualifier when it has not, unless the label lacks the
    word the question puts before the one they share ("Total revenue" adds nothing to
    "revenue", "Deferred revenue" does; "Net income" adds "net" to "interest income")."""
    asked = fit_words(question)
    sequence = [k for k in _label_keys(text) if not k.isdigit()]
    named = {k for k in sequence if len(k) > 2 and k not in _STOP_KEYS}
    # "Total revenue" adds nothing to "revenue"; "Net income" adds "net" to "interest income":
    # the label lacks the word the question puts before the one they share
    question_keys = _label_keys(question)
    other_line = any(
        k in named and (before := question_keys[i - 1]) in asked - _QUALIFIER_KEYS and before not in named
        for i, k in enumerate(question_keys) if i
    )  # fmt: skip
    extra = named - asked - _UNLABELLED - (set() if other_line else _QUALIFIER_KEYS)
    joined = " ".join(sequence)
    phrase = bool(joined) and f" {joined} " in f" {' '.join(_label_keys(question))} "
    return len(named & asked), -len(extra), int(phrase)


def search_candidates(
    citations: Sequence[Citation], question: str, *, number: bool
) -> list[tuple[str, int, bool]]:
    """The sentences and table rows that may be a search-only cell's value, best first:
    ``(unit, index of its citation, whether it is in the chunk the citation highlights)``.

    A unit fits when it names the question's telling words (a table row: in its label, the
    row's first cell); for a number column it must also state a figure. The one naming most of
    the telling words comes first; then the row whose label fits the question best
    (``label_fit``: most of the question's words, fewest qualifying words of its own, the
    question's phrase word for word; a sentence holding the question's words counts as a label
    adding nothing), so "Deferred revenue" never passes for "Total revenue" because it comes
    first or sits in the highlighted chunk; then a unit of the highlighted chunk before one of
    the context around it, then the one naming most of all the question's words, then the
    better ranked citation. A row whose label names another line than the one asked for
    (``names_another_line``) is no candidate."""
    words, telling = column_words(question)
    scored: list[tuple[tuple[int, tuple[int, int, int], int, int, int, int], str, int, bool]] = []
    seen: set[str] = set()
    for index, citation in enumerate(citations):
        matched = search_units(citation)
        for unit in [*matched, *search_units(citation, passage=True)]:
            if unit in seen:
                continue
            seen.add(unit)
            row = unit.startswith("• ")
            named = _keys(unit.split(";", 1)[0] if row else unit)
            if not (named & telling) or (number and not figures(unit)):
                continue
            own = unit in matched
            if row:
                label = row_label(unit)
                if names_another_line(question, label):
                    continue  # a wrong line is worse than no value: the cell is not found
                fit = label_fit(question, label)
            else:  # a sentence: the question's words it holds; it adds no label of its own
                count = label_fit(question, unit)[0]
                fit = (count, 0, 0)
            score = (len(named & telling), fit, int(own), len(named & words), int(not row or number), -index)
            scored.append((score, unit, index, own))
    scored.sort(key=lambda s: s[0], reverse=True)
    return [(_cut(unit), index, own) for _, unit, index, own in scored]


def search_value(citations: Sequence[Citation], question: str, *, number: bool) -> tuple[str, int]:
    """The best of ``search_candidates`` and its citation's index ("", -1: none fits)."""
    found = search_candidates(citations, question, number=number)
    return (found[0][0], found[0][1]) if found else ("", -1)
