"""Reading a cell out of an answer: the value by column type, the quote, the own-document rule.

Cheap and deterministic (no model): a number and its unit, yes/no/unclear, one of the column's
categories; the quote is a sentence of the cited text itself (never the model's words); a
citation naming another document than the row's is refused here, whatever produced it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from haiku.rag.citations import MARKER, Citation, split_sentences, tables_as_text

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


def words_found(value: str, citations: Sequence[Citation]) -> float:
    """The share of the value's content words found in the cited text (1.0 with no words)."""
    words = _words(value)
    if not words:
        return 1.0
    cited = set(_words(" ".join(cited_text(c) for c in citations)))
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
