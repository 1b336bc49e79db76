"""Section-bounded context expansion.

A 256-token chunk is often too little for a model to answer from, and too much context from
unrelated sections misleads it. Each result is widened to the section that contains it,
within a character budget:

- structured documents (the window around the hit holds headings): take the section containing
  the median matched item. If it fits the budget and is at least 20% of it, take it whole; if
  larger, grow outward from the matched items inside the section until the budget; if smaller,
  keep it as is when a matched item is a table or picture (self-contained evidence), otherwise
  grow outward across section boundaries until the budget. Page headers/footers, footnotes and
  indexes are noise there: they are skipped and cost nothing.
- unstructured documents: grow outward item by item until the budget.

Overlapping windows in one document merge into one result (identity and score from the best
constituent; every constituent's chunk id stays listed, so each remains citable).

A widened result is also split into passages, one per chunk, in reading order
(``chunk_texts``, with each passage's boxes in ``chunk_boxes``): the hits and the neighbours
expansion swept in. Every passage the model is shown is citable by its own chunk id, so a
citation of the sentence the answer used highlights that sentence, not the hit beside it.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from haiku.rag.ingest.records import Box, ItemRecord
from haiku.rag.store import schema as S
from haiku.rag.store.documents import boxes_from_json, get_document, get_items, item_positions
from haiku.rag.store.engine import Store, sql_quote
from haiku.rag.store.models import SearchResult
from haiku.rag.store.sql import sql_in

NOISE_LABELS = frozenset({"footnote", "page_header", "page_footer", "document_index"})
BOUNDARY_LABELS = frozenset({"section_header", "title"})
SELF_CONTAINED_LABELS = frozenset({"table", "picture"})
WINDOW = 100  # items fetched on each side of the hit
MIN_SECTION_SHARE = 0.2


@dataclass(slots=True)
class _Span:
    start: int  # inclusive item position
    stop: int  # exclusive
    results: list[SearchResult]
    matched: set[int]


def expand_context(store: Store, results: list[SearchResult], max_chars: int) -> list[SearchResult]:
    if max_chars <= 0 or not results:
        return results
    by_document: dict[str, list[SearchResult]] = defaultdict(list)
    for result in results:
        by_document[result.document_id].append(result)

    expanded: list[SearchResult] = []
    for document_id, doc_results in by_document.items():
        expanded.extend(_expand_document(store, document_id, doc_results, max_chars))
    expanded.sort(key=lambda r: -r.score)
    return expanded


def _expand_document(
    store: Store, document_id: str, results: list[SearchResult], budget: int
) -> list[SearchResult]:
    document = get_document(store, document_id)
    positions = item_positions(store, document, sorted({r for res in results for r in res.doc_item_refs}))
    located = [(res, sorted(positions[r] for r in res.doc_item_refs if r in positions)) for res in results]
    if not any(p for _, p in located):
        return results  # chunks without item refs (e.g. imported) pass through unexpanded
    lo = min(p[0] for _, p in located if p) - WINDOW
    hi = max(p[-1] for _, p in located if p) + WINDOW + 1
    items = {i.position: i for i in get_items(store, document, start=max(lo, 0), stop=hi)}
    orders = [r.order for r in results]
    owners = _item_owners(store, document.generation, min(orders) - 2 * WINDOW, max(orders) + 2 * WINDOW)

    spans: list[_Span] = []
    untouched: list[SearchResult] = []
    for result, matched in located:
        if not matched:
            untouched.append(result)
            continue
        start, stop = _window_for(items, matched, budget)
        spans.append(_Span(start, stop, [result], set(matched)))
    expanded: list[SearchResult] = []
    for span in _merge([_Span(s.start, s.stop, list(s.results), set(s.matched)) for s in spans]):
        if len(span.results) > 1 and _clipped_chars(span, items, budget) > budget:
            # Merging would blow the budget without dropping someone's evidence: keep the
            # constituents as separate results instead, each within its own window.
            own = [s for s in spans if any(s.results[0] is r for r in span.results)]
            expanded.extend(_to_result(s, items, budget, owners) for s in own)
        else:
            expanded.append(_to_result(span, items, budget, owners))
    return untouched + expanded


def _clipped_chars(span: _Span, items: dict[int, ItemRecord], budget: int) -> int:
    """Characters of the span's window after clipping (matched items are never clipped)."""
    structured = any(i.label in BOUNDARY_LABELS for i in items.values())
    window = [items[p] for p in range(span.start, span.stop) if p in items]
    kept = [i for i in window if not (structured and i.label in NOISE_LABELS)]
    return sum(len(i.text) + 2 for i in _clip(kept, span.matched, budget))


def _text_len(item: ItemRecord, structured: bool) -> int:
    if structured and item.label in NOISE_LABELS:
        return 0
    return len(item.text) + 2


def _window_for(items: dict[int, ItemRecord], matched: list[int], budget: int) -> tuple[int, int]:
    first, last = min(items), max(items) + 1
    structured = any(i.label in BOUNDARY_LABELS for i in items.values())
    if not structured:
        return _grow(items, matched[0], matched[-1] + 1, first, last, budget, structured)

    median = int(statistics.median(matched))
    sec_start = max((p for p, i in items.items() if p <= median and i.label in BOUNDARY_LABELS), default=first)
    sec_stop = min((p for p, i in items.items() if p > median and i.label in BOUNDARY_LABELS), default=last)
    size = sum(_text_len(items[p], structured) for p in range(sec_start, sec_stop) if p in items)
    if MIN_SECTION_SHARE * budget <= size <= budget:
        return sec_start, sec_stop
    if size > budget:
        inner = [p for p in matched if sec_start <= p < sec_stop] or [median]
        return _grow(items, inner[0], inner[-1] + 1, sec_start, sec_stop, budget, structured)
    if any(items[p].label in SELF_CONTAINED_LABELS for p in matched if p in items):
        return sec_start, sec_stop
    return _grow(items, sec_start, sec_stop, first, last, budget, structured)


def _grow(
    items: dict[int, ItemRecord], start: int, stop: int, floor: int, ceiling: int, budget: int, structured: bool
) -> tuple[int, int]:
    """Widen [start, stop) one item at a time, alternating sides, while the budget allows."""
    used = sum(_text_len(items[p], structured) for p in range(start, stop) if p in items)
    while True:
        grew = False
        for side in ("before", "after"):
            candidate = start - 1 if side == "before" else stop
            if not floor <= candidate < ceiling:
                continue
            cost = _text_len(items[candidate], structured) if candidate in items else 0
            if used + cost > budget:
                continue
            used += cost
            if side == "before":
                start = candidate
            else:
                stop = candidate + 1
            grew = True
        if not grew:
            return start, stop


def _merge(spans: list[_Span]) -> list[_Span]:
    spans.sort(key=lambda s: s.start)
    merged: list[_Span] = []
    for span in spans:
        if merged and span.start < merged[-1].stop:  # overlapping; adjacent spans stay apart
            last = merged[-1]
            last.stop = max(last.stop, span.stop)
            last.results.extend(span.results)
            last.matched |= span.matched
        else:
            merged.append(span)
    return merged


def _to_result(
    span: _Span, items: dict[int, ItemRecord], budget: int, owners: _Owners
) -> SearchResult:
    primary = max(span.results, key=lambda r: r.score)
    window = [items[p] for p in range(span.start, span.stop) if p in items]
    structured = any(i.label in BOUNDARY_LABELS for i in items.values())
    kept = [i for i in window if not (structured and i.label in NOISE_LABELS)]
    kept = _without_trailing_headings(_clip(kept, span.matched, budget), span.matched)
    content = "\n\n".join(i.text for i in kept)
    own_text = max((r.content for r in span.results), key=len)
    if len(content) < len(own_text):
        return primary  # expansion found less than the chunk itself (e.g. a table chunk)
    if len(content) > budget and len(span.results) == 1:
        return primary  # its matched items alone exceed the budget: the chunk is the passage

    matched_refs = [ref for r in span.results for ref in r.doc_item_refs]
    matched_set = set(matched_refs)
    # each constituent chunk's own boxes, text, pages and heading path (kept from an earlier
    # merge when there was one)
    chunk_boxes: dict[str, list[Box]] = {}
    chunk_texts: dict[str, str] = {}
    chunk_pages: dict[str, list[int]] = {}
    chunk_headings: dict[str, list[str]] = {}
    for r in span.results:
        for cid in r.chunk_ids or [r.chunk_id]:
            chunk_boxes[cid] = r.chunk_boxes.get(cid, r.boxes)
            chunk_texts[cid] = r.chunk_texts.get(cid, r.content)
            chunk_pages[cid] = r.chunk_pages.get(cid, r.page_numbers)
            chunk_headings[cid] = r.chunk_headings.get(cid, r.headings)
    passages = _passages(kept, owners.refs, list(chunk_boxes))
    if len(passages) > 1:
        chunk_texts = {cid: "\n\n".join(i.text for i in group) for cid, group in passages}
        owners.load([cid for cid, _ in passages if cid not in chunk_boxes])
        for cid, group in passages:
            if cid in chunk_boxes:
                continue
            # a neighbour swept in: its own stored pages, path and boxes (a table chunk's boxes
            # are its rows' cells and the header's; its items' boxes would be the whole table);
            # its items' pages and boxes when it was not found
            pages, headings, boxes = owners.stored.get(
                cid, (sorted({p for i in group for p in i.page_numbers}), primary.headings, None)
            )
            chunk_boxes[cid] = boxes_from_json(boxes) or [b for i in group for b in i.boxes]
            chunk_pages.setdefault(cid, pages)
            chunk_headings.setdefault(cid, headings)
        for cid, group in passages:
            chunk_boxes[cid], chunk_pages[cid] = _with_split_items(
                chunk_boxes[cid], chunk_pages[cid], group, owners.refs
            )
    context_boxes = [b for i in kept if i.self_ref not in matched_set for b in i.boxes]
    context_boxes.extend(_rest_of_split_tables(kept, matched_set, owners, chunk_boxes))
    return primary.model_copy(
        update={
            "chunk_ids": list(dict.fromkeys(cid for r in span.results for cid in r.chunk_ids)),
            "score": primary.score,
            "content": content,
            # the best hit's own path: a union of the constituents' paths chained sibling
            # sections into one false path ("5 Experiments › … › 4 Methodology › 4.3 Selector")
            "headings": primary.headings,
            "doc_item_refs": [i.self_ref for i in kept],
            "labels": [i.label for i in kept],
            "page_numbers": sorted({p for i in kept for p in i.page_numbers} | {p for r in span.results for p in r.page_numbers}),
            "boxes": [b for r in span.results for b in r.boxes],
            "matched_refs": list(dict.fromkeys(matched_refs)),
            "context_boxes": context_boxes,
            "chunk_boxes": chunk_boxes if len(chunk_boxes) > 1 else {},
            # widened or merged: keep what each chunk itself said, for snippets of exactly it
            "chunk_texts": chunk_texts if len(chunk_texts) > 1 or content != primary.content else {},
            # the pages and path of each chunk itself, for labels and exports of a citation
            "chunk_pages": chunk_pages,
            "chunk_headings": chunk_headings,
        }
    )


def _with_split_items(
    boxes: list[Box], pages: list[int], group: list[ItemRecord], refs: dict[str, list[str]]
) -> tuple[list[Box], list[int]]:
    """A passage's boxes and pages when it shows whole a paragraph that chunking split (its
    item held by several chunks): the chunk's own boxes cover only its part, so that item's
    boxes and pages are added and the page highlights what the passage says. A real paper's
    abstract was split in two: the cited passage read "Abstract. Recent advances …", the
    answer restated that sentence, and only the abstract's last lines were highlighted.
    Tables and pictures keep their chunk's boxes (a cited row, not the whole table)."""
    split = [i for i in group if i.label not in SELF_CONTAINED_LABELS and len(refs.get(i.self_ref, ())) > 1]
    if not split:
        return boxes, pages
    # reading order: the split paragraphs' lines, then the chunk's other boxes
    widened = [b for i in split for b in i.boxes]
    widened.extend(b for b in boxes if b not in widened)
    return widened, sorted({*pages, *(p for i in split for p in i.page_numbers)})


def _rest_of_split_tables(
    kept: list[ItemRecord], matched: set[str], owners: _Owners, shown: dict[str, list[Box]]
) -> list[Box]:
    """The boxes of a matched table's (or picture's) other chunks: the passage shows the item
    whole, the cited chunk's boxes are only its own rows, so the rows other chunks hold are
    lit as context. Without them a cited half of a table split across chunks left the other
    half unlit on the page, though the model read and quoted it."""
    others = [
        cid
        for i in kept
        if i.label in SELF_CONTAINED_LABELS and i.self_ref in matched
        for cid in owners.refs.get(i.self_ref, ())
        if cid not in shown
    ]
    if not others:
        return []
    owners.load(others)
    return [b for cid in dict.fromkeys(others) for b in boxes_from_json(owners.stored.get(cid, ([], [], None))[2])]


@dataclass(slots=True)
class _Owners:
    store: Store
    refs: dict[str, list[str]]  # item ref -> the chunks holding it, in chunk order
    # chunk id -> (its pages, its heading path, its stored boxes as JSON): read only for the
    # few neighbours a passage sweeps in, never for the whole range every search reads
    stored: dict[str, tuple[list[int], list[str], str | None]]

    def load(self, chunk_ids: list[str]) -> None:
        """Read the stored pages, headings and boxes of ``chunk_ids`` not read yet, in one query."""
        missing = {cid for cid in chunk_ids if cid not in self.stored}
        if not missing:
            return
        rows = (
            self.store.table(S.CHUNKS)
            .search()
            .where(sql_in("id", missing))
            .select(["id", "page_numbers", "headings", "boxes"])
            .limit(None)
            .to_list()
        )
        for row in rows:
            self.stored[row["id"]] = (
                list(row["page_numbers"] or []),
                list(row["headings"] or []),
                row["boxes"],
            )


def _item_owners(store: Store, generation: str, first: int, last: int) -> _Owners:
    """For each item ref, the chunks holding it among chunks ``first..last`` (by order) of a
    document generation, in chunk order (their pages, headings and boxes are read later, by
    ``_Owners.load``, for the neighbours a passage sweeps in).

    Every chunk holds at least one item, so the chunks holding the items of a window of
    ``WINDOW`` items each side lie within about that many orders of the hits; an item whose
    chunk lies beyond (a long paragraph split into very many chunks) simply joins the passage
    next to it.
    """
    rows = (
        store.table(S.CHUNKS)
        .search()
        .where(f"generation = {sql_quote(generation)} AND `order` BETWEEN {int(first)} AND {int(last)}")
        .select(["id", "order", "doc_item_refs"])
        .limit(None)
        .to_list()
    )
    owners: dict[str, list[str]] = {}
    for row in sorted(rows, key=lambda r: r["order"]):
        for ref in row["doc_item_refs"] or []:
            owners.setdefault(ref, []).append(row["id"])
    return _Owners(store, owners, {})


def _passages(
    kept: list[ItemRecord], owners: dict[str, list[str]], hit_ids: list[str]
) -> list[tuple[str, list[ItemRecord]]]:
    """The window's items grouped into consecutive passages, each under one chunk id.

    An item belongs to the hit holding it, else to the first chunk holding it. A heading no
    chunk holds (chunks carry headings as metadata) opens the passage after it: it names what
    follows, so it is never the end of the passage before (a cited Summary's snippet and
    highlight ended "… dam crest. Methods"). Other items no chunk holds join the passage
    before them, or the first passage; so does an item of a chunk whose passage already ended,
    so passages tile the window in order and each id appears once.
    """
    hits = set(hit_ids)
    passages: list[tuple[str, list[ItemRecord]]] = []
    leading: list[ItemRecord] = []
    for item in kept:
        holders = owners.get(item.self_ref, [])
        owner = next((c for c in holders if c in hits), holders[0] if holders else None)
        if owner is None:
            if item.label in BOUNDARY_LABELS or not passages:
                leading.append(item)
            else:
                passages[-1][1].append(item)
        elif owner in {cid for cid, _ in passages}:
            passages[-1][1].extend([*leading, item])
            leading = []
        else:
            passages.append((owner, [*leading, item]))
            leading = []
    if leading and passages:  # only ends the window when nothing follows it (trimmed before)
        passages[-1][1].extend(leading)
    return passages


def _without_trailing_headings(kept: list[ItemRecord], matched: set[int]) -> list[ItemRecord]:
    """The window without the headings at its end: a heading with none of its section after
    it (the budget stopped there) is the next section's name, not context."""
    end = len(kept)
    while end > 0 and kept[end - 1].label in BOUNDARY_LABELS and kept[end - 1].position not in matched:
        end -= 1
    return kept[:end] if end else kept


def _clip(window: list[ItemRecord], matched: set[int], budget: int) -> list[ItemRecord]:
    """Drop whole items from the edges farthest from the matches until the window fits.

    Matched items are never dropped, so every constituent keeps its evidence; whole items (not
    characters) are dropped so text, refs, pages and boxes always describe the same items.
    """
    total = sum(len(i.text) + 2 for i in window)
    if total <= budget or not matched:
        return window
    centre = statistics.median(matched)
    kept = list(window)
    for item in sorted(window, key=lambda i: -abs(i.position - centre)):
        if total <= budget:
            break
        if item.position in matched:
            continue
        kept.remove(item)
        total -= len(item.text) + 2
    return kept
