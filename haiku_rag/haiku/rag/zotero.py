"""Import a Zotero library: every PDF attachment, with its parent item's metadata, and the
Zotero collections as the library's collections.

Zotero keeps ``zotero.sqlite`` locked while it runs, so the database (and its journal) is
copied to a temporary folder and the copy is read; the data directory is never written.
Field, item-type and creator-type names are joined by name (their numeric ids come from
Zotero's global schema at run time). Attachment paths are ``storage:<file>`` for a stored
file (``storage/<attachment key>/<file>``), ``attachments:<relative>`` for a file linked
relative to the base directory (Zotero's ``extensions.zotero.baseAttachmentPath``), or an
absolute path for other linked files.

Each attachment becomes one document with the URI ``zotero://select/library/items/<KEY>``
(Zotero opens the item from it), so a re-import finds it whatever the file is called.
Re-running writes only what changed: a changed file is re-ingested, changed metadata is
updated in place, and nothing at all is written when Zotero has not changed.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from haiku.rag.bibliography import METADATA_KEY, Bibliographic, Creator
from haiku.rag.errors import HaikuRAGError
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    Stage,
    check_cancelled,
    report,
)

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG

ZOTERO_KEY = "zotero"  # document.metadata key of the Zotero record
LINK_MODES = {0: "imported_file", 1: "imported_url", 2: "linked_file", 3: "linked_url"}
ANNOTATION_TYPES = {1: "highlight", 2: "note", 3: "image", 4: "ink", 5: "underline", 6: "text"}
COLLECTION_PATH_SEPARATOR = " / "


class ZoteroError(HaikuRAGError):
    """The Zotero data directory or database cannot be found or read."""


# --- locating and reading ------------------------------------------------------------------


@dataclass(slots=True)
class ZoteroLocation:
    database: Path
    data_dir: Path  # holds storage/
    base_dir: Path | None = None  # for "attachments:" linked files


def default_data_dir() -> Path:
    return Path.home() / "Zotero"


def locate(source: str | Path | None = None, *, base_dir: str | Path | None = None) -> ZoteroLocation:
    """A Zotero data directory, its ``zotero.sqlite``, or a Zotero profile directory (whose
    ``prefs.js`` names the data directory and the linked-files base directory)."""
    path = Path(source).expanduser() if source else default_data_dir()
    prefs: dict[str, str] = {}
    if path.is_dir() and (path / "prefs.js").is_file() and not (path / "zotero.sqlite").exists():
        prefs = _read_prefs(path / "prefs.js")
        if "extensions.zotero.dataDir" not in prefs:
            raise ZoteroError(f"{path}: a Zotero profile without extensions.zotero.dataDir; pass the data directory")
        path = Path(prefs["extensions.zotero.dataDir"])
    if path.is_dir():
        database = path / "zotero.sqlite"
        data_dir = path
    elif path.is_file():
        database, data_dir = path, path.parent
    else:
        hint = " (the default Zotero data directory)" if source is None else ""
        raise ZoteroError(f"{path}{hint} does not exist; pass the Zotero data directory or its zotero.sqlite")
    if not database.is_file():
        raise ZoteroError(f"{data_dir} has no zotero.sqlite: not a Zotero data directory")
    with open(database, "rb") as handle:
        if handle.read(16) != b"SQLite format 3\x00":
            raise ZoteroError(f"{database} is not an SQLite database")
    if base_dir is None:
        base = prefs.get("extensions.zotero.baseAttachmentPath") or _profile_base_dir(data_dir)
        base_dir = Path(base) if base else None
    return ZoteroLocation(database, data_dir, Path(base_dir).expanduser() if base_dir else None)


def _read_prefs(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return {k: json.loads(f'"{v}"') for k, v in re.findall(r'user_pref\("([^"]+)",\s*"((?:[^"\\]|\\.)*)"\);', text)}


def _profile_base_dir(data_dir: Path) -> str | None:
    """The base directory from the one Zotero profile whose data dir is ``data_dir``."""
    profiles = Path.home() / ".zotero" / "zotero"
    if not profiles.is_dir():
        return None
    for prefs_file in profiles.glob("*/prefs.js"):
        prefs = _read_prefs(prefs_file)
        if Path(prefs.get("extensions.zotero.dataDir", str(default_data_dir()))) == data_dir:
            return prefs.get("extensions.zotero.baseAttachmentPath")
    return None


@contextmanager
def open_snapshot(database: Path) -> Iterator[sqlite3.Connection]:
    """A private copy of the database (with its write-ahead log or journal), opened
    read-only: Zotero holds an exclusive lock on the original while it runs."""
    with tempfile.TemporaryDirectory(prefix="haiku-zotero-") as tmp:
        copy = Path(tmp) / "zotero.sqlite"
        try:
            shutil.copyfile(database, copy)
            for suffix in ("-wal", "-journal"):
                side = database.with_name(database.name + suffix)
                if side.is_file():
                    shutil.copyfile(side, copy.with_name(copy.name + suffix))
            # Opened writable only so SQLite can replay the copied log into the copy.
            connection = sqlite3.connect(copy)
            connection.execute("PRAGMA query_only = ON")
            connection.row_factory = sqlite3.Row
            connection.execute("SELECT count(*) FROM items").fetchone()
        except OSError as exc:
            raise ZoteroError(f"cannot copy {database}: {exc.strerror or exc}") from exc
        except sqlite3.DatabaseError as exc:
            raise ZoteroError(f"{database} is not a readable Zotero database ({exc})") from exc
        try:
            yield connection
        finally:
            connection.close()


@dataclass(slots=True)
class ZoteroAnnotation:
    key: str
    type: str
    text: str | None
    comment: str | None
    color: str | None
    page_label: str | None
    page_index: int | None  # 0-based, from the position JSON

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in {
            "key": self.key, "type": self.type, "text": self.text, "comment": self.comment,
            "color": self.color, "page_label": self.page_label,
            "page": None if self.page_index is None else self.page_index + 1,
        }.items() if v not in (None, "")}


@dataclass(slots=True)
class ZoteroAttachment:
    """One PDF attachment to import, with what its document will carry."""

    key: str
    library_uri: str  # "library" or "groups/<id>"
    parent_key: str | None
    link_mode: str
    raw_path: str | None
    path: Path | None
    missing_reason: str | None
    title: str
    bibliographic: Bibliographic
    fields: dict[str, str]
    collections: list[str]
    collection_keys: list[str]
    annotations: list[ZoteroAnnotation] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return f"zotero://select/{self.library_uri}/items/{self.key}"

    def zotero_record(self) -> dict[str, Any]:
        return {
            "attachment_key": self.key,
            "item_key": self.parent_key or self.key,
            "library": self.library_uri,
            "link_mode": self.link_mode,
            "path": self.raw_path,
            "item_type": self.bibliographic.item_type,
            "fields": self.fields,
            "collections": self.collections,
            "collection_keys": self.collection_keys,
            "annotations": [a.to_dict() for a in self.annotations],
        }


@dataclass(slots=True)
class ZoteroLibrary:
    attachments: list[ZoteroAttachment]
    # collection name (path for subcollections) -> (collection key, attachment keys)
    collections: dict[str, tuple[str, list[str]]]
    skipped: list[tuple[str, str]]  # (attachment key, reason): non-PDF attachments, links to URLs


def _table_names(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def _named(db: sqlite3.Connection, tables: set[str], combined: str, plain: str) -> str:
    """Zotero 5.0.78+ keeps built-in and custom types/fields in ``*Combined`` tables."""
    if combined in tables and db.execute(f"SELECT count(*) FROM {combined}").fetchone()[0]:
        return combined
    return plain


def read_library(location: ZoteroLocation) -> ZoteroLibrary:
    with open_snapshot(location.database) as db:
        try:
            return _read(db, location)
        except sqlite3.DatabaseError as exc:
            raise ZoteroError(f"{location.database}: unexpected Zotero schema ({exc})") from exc


def _read(db: sqlite3.Connection, location: ZoteroLocation) -> ZoteroLibrary:
    tables = _table_names(db)
    item_types = _named(db, tables, "itemTypesCombined", "itemTypes")
    fields_table = _named(db, tables, "fieldsCombined", "fields")
    deleted = "SELECT itemID FROM deletedItems" if "deletedItems" in tables else "SELECT NULL WHERE 0"

    items = {
        r["itemID"]: r
        for r in db.execute(
            f"SELECT i.itemID, i.key, i.libraryID, i.dateModified, t.typeName FROM items i "
            f"JOIN {item_types} t ON t.itemTypeID = i.itemTypeID WHERE i.itemID NOT IN ({deleted})"
        )
    }
    values: dict[int, dict[str, str]] = defaultdict(dict)
    for r in db.execute(
        f"SELECT d.itemID, f.fieldName, v.value FROM itemData d JOIN {fields_table} f ON f.fieldID = d.fieldID "
        "JOIN itemDataValues v ON v.valueID = d.valueID"
    ):
        values[r["itemID"]][r["fieldName"]] = str(r["value"])
    creators: dict[int, list[Creator]] = defaultdict(list)
    for r in db.execute(
        "SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode, ct.creatorType FROM itemCreators ic "
        "JOIN creators c ON c.creatorID = ic.creatorID JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID "
        "ORDER BY ic.itemID, ic.orderIndex"
    ):
        single = r["fieldMode"] == 1  # an institution or a one-field name: all in lastName
        creators[r["itemID"]].append(
            Creator(family=r["lastName"] or "", given="" if single else (r["firstName"] or ""), role=r["creatorType"])
        )
    tags: dict[int, list[str]] = defaultdict(list)
    for r in db.execute("SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID ORDER BY t.name"):
        tags[r["itemID"]].append(r["name"])

    groups = {}
    if "groups" in tables:
        groups = {r["libraryID"]: r["groupID"] for r in db.execute("SELECT groupID, libraryID FROM groups")}

    # collections, named by their path so subcollections of different parents stay apart
    deleted_collections: set[int] = set()
    if "deletedCollections" in tables:
        deleted_collections = {r[0] for r in db.execute("SELECT collectionID FROM deletedCollections")}
    rows = {r["collectionID"]: r for r in db.execute("SELECT collectionID, collectionName, parentCollectionID, key FROM collections")}

    def path_of(collection_id: int) -> str:
        parts, seen, current = [], set(), collection_id
        while current in rows and current not in seen:
            seen.add(current)
            parts.append(rows[current]["collectionName"].strip())
            current = rows[current]["parentCollectionID"]
        return COLLECTION_PATH_SEPARATOR.join(reversed(parts))

    live_collections = {cid for cid in rows if cid not in deleted_collections and not _ancestor_deleted(cid, rows, deleted_collections)}
    item_collections: dict[int, list[int]] = defaultdict(list)
    for r in db.execute("SELECT collectionID, itemID FROM collectionItems ORDER BY orderIndex"):
        if r["collectionID"] in live_collections:
            item_collections[r["itemID"]].append(r["collectionID"])

    annotations: dict[int, list[ZoteroAnnotation]] = defaultdict(list)
    if "itemAnnotations" in tables:
        for r in db.execute(
            "SELECT a.parentItemID, a.type, a.text, a.comment, a.color, a.pageLabel, a.position, i.key "
            f"FROM itemAnnotations a JOIN items i ON i.itemID = a.itemID WHERE a.itemID NOT IN ({deleted}) "
            "ORDER BY a.parentItemID, a.sortIndex"
        ):
            annotations[r["parentItemID"]].append(
                ZoteroAnnotation(
                    key=r["key"],
                    type=ANNOTATION_TYPES.get(r["type"], str(r["type"])),
                    text=r["text"],
                    comment=r["comment"],
                    color=r["color"],
                    page_label=r["pageLabel"],
                    page_index=_page_index(r["position"]),
                )
            )

    attachments: list[ZoteroAttachment] = []
    skipped: list[tuple[str, str]] = []
    for r in db.execute("SELECT itemID, parentItemID, linkMode, contentType, path FROM itemAttachments ORDER BY itemID"):
        own = items.get(r["itemID"])
        if own is None:
            continue  # in the trash
        parent_id = r["parentItemID"]
        if parent_id is not None and parent_id not in items:
            continue  # parent in the trash
        link_mode = LINK_MODES.get(r["linkMode"], str(r["linkMode"]))
        raw_path = r["path"]
        is_pdf = (r["contentType"] or "").lower() == "application/pdf" or (raw_path or "").lower().endswith(".pdf")
        if link_mode == "linked_url" or not raw_path:
            skipped.append((own["key"], "a link to a web page, not a file"))
            continue
        if not is_pdf:
            skipped.append((own["key"], f"not a PDF ({r['contentType'] or Path(raw_path).suffix or 'unknown type'})"))
            continue
        path, missing = _resolve_path(raw_path, own["key"], location)
        if path is not None and not path.is_file():
            missing = f"the file {path} is missing"
        main_id = parent_id if parent_id is not None else r["itemID"]
        main = items[main_id]
        fields = values.get(main_id, {})
        record = _bibliographic(main, fields, creators.get(main_id, []), tags.get(main_id, []))
        collection_ids = list(dict.fromkeys(item_collections.get(main_id, []) + item_collections.get(r["itemID"], [])))
        library = f"groups/{groups[own['libraryID']]}" if own["libraryID"] in groups else "library"
        attachments.append(
            ZoteroAttachment(
                key=own["key"],
                library_uri=library,
                parent_key=main["key"] if parent_id is not None else None,
                link_mode=link_mode,
                raw_path=raw_path,
                path=path,
                missing_reason=missing,
                title=record.title or values.get(r["itemID"], {}).get("title") or Path(raw_path).name,
                bibliographic=record,
                fields=fields,
                collections=[path_of(c) for c in collection_ids],
                collection_keys=[rows[c]["key"] for c in collection_ids],
                annotations=annotations.get(r["itemID"], []),
            )
        )
    collections: dict[str, tuple[str, list[str]]] = {}
    for cid in sorted(live_collections, key=path_of):
        members = [a.key for a in attachments if rows[cid]["key"] in a.collection_keys]
        collections[path_of(cid)] = (rows[cid]["key"], members)
    return ZoteroLibrary(attachments, collections, skipped)


def _ancestor_deleted(cid: int, rows: dict[int, Any], deleted: set[int]) -> bool:
    seen: set[int] = set()
    current = rows[cid]["parentCollectionID"]
    while current is not None and current in rows and current not in seen:
        if current in deleted:
            return True
        seen.add(current)
        current = rows[current]["parentCollectionID"]
    return False


def _page_index(position: str | None) -> int | None:
    try:
        value = json.loads(position or "{}").get("pageIndex")
    except (json.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def _resolve_path(raw: str, key: str, location: ZoteroLocation) -> tuple[Path | None, str | None]:
    if raw.startswith("storage:"):
        return location.data_dir / "storage" / key / raw[len("storage:") :], None
    if raw.startswith("attachments:"):
        if location.base_dir is None:
            return None, f"{raw}: linked relative to a base directory that is not known (pass --base-dir)"
        return location.base_dir / raw[len("attachments:") :], None
    path = Path(raw)
    if not path.is_absolute():
        return None, f"{raw}: a linked file path that is not absolute"
    return path, None


_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")


def parse_zotero_date(value: str | None) -> tuple[str | None, int | None]:
    """Zotero stores dates as "SQL-date original-text" ("2021-00-00 2021", "2017-06-12 June
    12, 2017"): the ISO date without its zero parts, and the year."""
    if not value:
        return None, None
    sql = value.split(" ", 1)[0]
    match = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", sql)
    if match:
        year, month, day = match.groups()
        if year == "0000":  # Zotero could not parse it: a year in the original text, if any
            found = _YEAR.search(value[len(sql) :])
            return (found.group(1), int(found.group(1))) if found else (None, None)
        parts = [year]
        if month != "00":
            parts.append(month)
            if day != "00":
                parts.append(day)
        return "-".join(parts), int(year)
    found = _YEAR.search(value)
    return (found.group(1), int(found.group(1))) if found else (None, None)


_VENUE_FIELDS = ("publicationTitle", "proceedingsTitle", "bookTitle", "websiteTitle", "blogTitle", "university", "institution")


def _bibliographic(item: Any, fields: dict[str, str], creators: list[Creator], tags: list[str]) -> Bibliographic:
    date, year = parse_zotero_date(fields.get("date"))
    extra = fields.get("extra", "")
    doi = fields.get("DOI") or _extra_field(extra, "DOI")
    arxiv = _extra_field(extra, "arXiv")
    return Bibliographic(
        title=fields.get("title"),
        creators=creators,
        year=year,
        date=date,
        item_type=item["typeName"],
        doi=doi,
        arxiv=arxiv,
        venue=next((fields[f] for f in _VENUE_FIELDS if fields.get(f)), None),
        publisher=fields.get("publisher"),
        volume=fields.get("volume"),
        issue=fields.get("issue"),
        pages=fields.get("pages"),
        url=fields.get("url"),
        isbn=fields.get("ISBN"),
        tags=tags,
        zotero_key=item["key"],
        source="zotero",
    )


def _extra_field(extra: str, name: str) -> str | None:
    match = re.search(rf"^{name}:\s*(\S+)", extra, re.MULTILINE | re.IGNORECASE)
    return match.group(1) if match else None


# --- importing ----------------------------------------------------------------------------

ImportStatus = Literal["ingested", "updated", "metadata", "unchanged", "missing", "failed"]


@dataclass(slots=True)
class ZoteroOutcome:
    key: str
    title: str
    status: ImportStatus
    source: str | None = None
    document_id: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key, "title": self.title, "status": self.status, "source": self.source,
            "document_id": self.document_id, "reason": self.reason,
        }


@dataclass(slots=True)
class ZoteroImportReport:
    database: str
    outcomes: list[ZoteroOutcome]
    collections: dict[str, int]  # name -> documents
    collections_written: list[str]
    skipped: list[tuple[str, str]]

    @property
    def wrote_anything(self) -> bool:
        return bool(self.collections_written) or any(
            o.status in ("ingested", "updated", "metadata") for o in self.outcomes
        )

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = defaultdict(int)
        for o in self.outcomes:
            found[o.status] += 1
        return dict(found)

    def to_dict(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "items": [o.to_dict() for o in self.outcomes],
            "collections": self.collections,
            "collections_written": self.collections_written,
            "skipped": [{"key": k, "reason": r} for k, r in self.skipped],
            "counts": self.counts(),
        }


def _normalised(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


async def import_zotero(
    client: HaikuRAG,
    source: str | Path | None = None,
    *,
    base_dir: str | Path | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    embed: bool = True,
) -> ZoteroImportReport:
    """Import (or bring up to date) every PDF attachment of a Zotero library.

    A missing file is reported as ``missing`` and a file that cannot be parsed as ``failed``;
    neither stops the import. Returns what happened to each attachment and collection.
    """
    import asyncio

    from haiku.rag import collections as coll
    from haiku.rag.ingest.pipeline import content_hash

    location = await asyncio.to_thread(locate, source, base_dir=base_dir)
    library = await asyncio.to_thread(read_library, location)
    cancel = cancel or CancelToken()
    outcomes: list[ZoteroOutcome] = []
    by_key: dict[str, str] = {}  # attachment key -> document id
    to_embed = []
    for attachment in library.attachments:
        check_cancelled(cancel)
        shown = str(attachment.path) if attachment.path else attachment.raw_path
        existing = await client.get_document_by_uri(attachment.uri)
        if existing is not None:
            by_key[attachment.key] = existing.id
        if attachment.missing_reason or attachment.path is None:
            report(progress, Progress(Stage.DONE, attachment.uri, message="missing"))
            outcomes.append(
                ZoteroOutcome(attachment.key, attachment.title, "missing", shown, existing.id if existing else None, attachment.missing_reason)
            )
            continue
        try:
            data = await asyncio.to_thread(attachment.path.read_bytes)
        except OSError as exc:
            outcomes.append(ZoteroOutcome(attachment.key, attachment.title, "missing", shown, None, f"{attachment.path}: {exc.strerror or exc}"))
            continue
        wanted = {ZOTERO_KEY: attachment.zotero_record(), METADATA_KEY: attachment.bibliographic.to_metadata()}
        if existing is not None and existing.content_hash == content_hash(data):
            current = {k: existing.metadata.get(k) for k in wanted}
            if _normalised(current) == _normalised(wanted) and existing.title == attachment.title:
                outcomes.append(ZoteroOutcome(attachment.key, attachment.title, "unchanged", shown, existing.id))
                continue
            updated = await client.update_document(
                existing.id, title=attachment.title, metadata={**existing.metadata, **wanted}
            )
            outcomes.append(ZoteroOutcome(attachment.key, attachment.title, "metadata", shown, updated.id))
            continue
        metadata = {**(existing.metadata if existing else {}), **wanted}
        outcome = await client.ingest_bytes(
            data,
            filename=attachment.path.name,
            uri=attachment.uri,
            title=attachment.title,
            metadata=metadata,
            progress=progress,
            cancel=cancel,
            embed=False,
        )
        if outcome.document is None:
            outcomes.append(ZoteroOutcome(attachment.key, attachment.title, "failed", shown, None, outcome.reason))
            continue
        by_key[attachment.key] = outcome.document.id
        to_embed.append(outcome.document)
        status: ImportStatus = "updated" if existing is not None else "ingested"
        outcomes.append(ZoteroOutcome(attachment.key, attachment.title, status, shown, outcome.document.id))
    if embed and to_embed:
        await client.embed_pending(to_embed, progress=progress, cancel=cancel)

    # Zotero collections -> library collections. Members the user added in haiku-desk
    # (documents not from this Zotero library) are kept.
    zotero_documents = set(by_key.values())

    def sync_collections() -> tuple[dict[str, int], list[str]]:
        counts, written = {}, []
        for name, (key, members) in library.collections.items():
            current = coll.find_collection(client.store, name)
            present = current.document_ids if current else []
            from_zotero = [by_key[k] for k in members if k in by_key]
            wanted = set(from_zotero) | {i for i in present if i not in zotero_documents}
            # existing members keep their place; new ones follow in Zotero's order
            ids = list(dict.fromkeys([i for i in present if i in wanted] + from_zotero))
            collection, changed = coll.set_collection_documents(client.store, name, ids, source=f"zotero:{key}")
            counts[name] = collection.count
            if changed:
                written.append(name)
        return counts, written

    counts, written = await asyncio.to_thread(sync_collections)
    return ZoteroImportReport(str(location.database), outcomes, counts, written, library.skipped)
