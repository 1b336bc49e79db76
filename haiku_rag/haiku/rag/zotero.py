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

The database is untrusted input (docs/security.md, "Imports"): a stored file must resolve
inside ``storage/<key>/`` of the data directory (no ``..``, no symlink out, keys are plain
letters and digits), a file linked relative to the base directory inside that directory, and
every file must be a PDF by its content; reading the database has a total deadline (SQLite is
interrupted, and Ctrl-C / cancel stop it too); fields, creators, tags and annotations are
bounded, with a note; a collection whose name cannot be a collection is reported, not fatal.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import sqlite3
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from haiku.rag.bibliography import METADATA_KEY, Bibliographic, Creator
from haiku.rag.errors import HaikuRAGError, OperationCancelled
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

log = logging.getLogger(__name__)

ZOTERO_KEY = "zotero"  # document.metadata key of the Zotero record
LINK_MODES = {0: "imported_file", 1: "imported_url", 2: "linked_file", 3: "linked_url"}
ANNOTATION_TYPES = {1: "highlight", 2: "note", 3: "image", 4: "ink", 5: "underline", 6: "text"}
COLLECTION_PATH_SEPARATOR = " / "

#: total time reading the database may take (every query together), in seconds
READ_DEADLINE_SECONDS = 120.0
#: SQLite virtual-machine steps between two checks of the deadline and of cancellation
_PROGRESS_STEPS = 10_000
#: bounds on what one item may bring in; longer values are cut (with a note on the outcome)
MAX_TITLE_CHARS = 1_000
MAX_FIELD_CHARS = 20_000
MAX_CREATORS = 500
MAX_CREATOR_CHARS = 1_000
MAX_TAGS = 200
MAX_ANNOTATIONS = 2_000
MAX_ANNOTATION_CHARS = 10_000
#: an attachment key names a folder under storage/: letters and digits only
_KEY = re.compile(r"[A-Za-z0-9]{1,32}")


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
def open_snapshot(
    database: Path, *, deadline: float | None = None, cancel: CancelToken | None = None
) -> Iterator[sqlite3.Connection]:
    """A private copy of the database (with its write-ahead log or journal), opened
    read-only: Zotero holds an exclusive lock on the original while it runs.

    ``deadline`` (seconds, default ``READ_DEADLINE_SECONDS``) bounds every query on the copy
    together, and ``cancel`` stops them: a progress handler interrupts SQLite, so a crafted
    database (a view over an endless recursive query) cannot hang the import."""
    limit = READ_DEADLINE_SECONDS if deadline is None else deadline
    ends = time.monotonic() + limit
    stopped: list[str] = []

    def interrupt() -> int:
        if cancel is not None and cancel.cancelled:
            stopped.append("cancelled")
            return 1
        if time.monotonic() > ends:
            stopped.append("deadline")
            return 1
        return 0

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
            connection.set_progress_handler(interrupt, _PROGRESS_STEPS)
            connection.execute("PRAGMA query_only = ON")
            connection.execute("PRAGMA trusted_schema = OFF")  # views may not call risky functions
            connection.row_factory = sqlite3.Row
            connection.execute("SELECT count(*) FROM items").fetchone()
        except OSError as exc:
            raise ZoteroError(f"cannot copy {database}: {exc.strerror or exc}") from exc
        except sqlite3.DatabaseError as exc:
            _raise_stopped(database, stopped, limit)
            raise ZoteroError(f"{database} is not a readable Zotero database ({exc})") from exc
        try:
            yield connection
        except (sqlite3.DatabaseError, ZoteroError):
            _raise_stopped(database, stopped, limit)
            raise
        finally:
            connection.close()


def _raise_stopped(database: Path, stopped: list[str], limit: float) -> None:
    if "cancelled" in stopped:
        raise OperationCancelled(f"reading {database} was cancelled")
    if "deadline" in stopped:
        raise ZoteroError(
            f"{database}: reading the database did not finish within {limit:g} s; it is damaged or "
            "crafted (e.g. a view over an endless query); nothing was imported"
        )


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
    notes: list[str] = field(default_factory=list)  # what was cut to the bounds

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
            **({"shortened": self.notes} if self.notes else {}),
        }


@dataclass(slots=True)
class ZoteroLibrary:
    attachments: list[ZoteroAttachment]
    # collection name (path for subcollections) -> (collection key, attachment keys)
    collections: dict[str, tuple[str, list[str]]]
    skipped: list[tuple[str, str]]  # (attachment key, reason): non-PDF attachments, links to URLs
    # collections that cannot be collections here (an empty name, control characters): (key, reason)
    bad_collections: list[tuple[str, str]] = field(default_factory=list)


def _table_names(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def _named(db: sqlite3.Connection, tables: set[str], combined: str, plain: str) -> str:
    """Zotero 5.0.78+ keeps built-in and custom types/fields in ``*Combined`` tables."""
    if combined in tables and db.execute(f"SELECT count(*) FROM {combined}").fetchone()[0]:
        return combined
    return plain


def read_library(
    location: ZoteroLocation, *, deadline: float | None = None, cancel: CancelToken | None = None
) -> ZoteroLibrary:
    with open_snapshot(location.database, deadline=deadline, cancel=cancel) as db:
        log.info("reading the Zotero database %s", location.database)
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
        values[r["itemID"]][r["fieldName"]] = str(r["value"])[: MAX_FIELD_CHARS + 1]
    creators: dict[int, list[Creator]] = defaultdict(list)
    for r in db.execute(
        "SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode, ct.creatorType FROM itemCreators ic "
        "JOIN creators c ON c.creatorID = ic.creatorID JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID "
        "ORDER BY ic.itemID, ic.orderIndex"
    ):
        single = r["fieldMode"] == 1  # an institution or a one-field name: all in lastName
        found = creators[r["itemID"]]
        if len(found) > MAX_CREATORS:
            continue  # one more than the bound is kept, so the note can say it was cut
        found.append(
            Creator(
                family=(r["lastName"] or "")[:MAX_CREATOR_CHARS],
                given="" if single else (r["firstName"] or "")[:MAX_CREATOR_CHARS],
                role=r["creatorType"],
            )
        )
    tags: dict[int, list[str]] = defaultdict(list)
    for r in db.execute("SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID ORDER BY t.name"):
        if len(tags[r["itemID"]]) <= MAX_TAGS:
            tags[r["itemID"]].append(str(r["name"])[:MAX_CREATOR_CHARS])

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
            parts.append(str(rows[current]["collectionName"] or "").strip())
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
            if len(annotations[r["parentItemID"]]) > MAX_ANNOTATIONS:
                continue
            annotations[r["parentItemID"]].append(
                ZoteroAnnotation(
                    key=r["key"],
                    type=ANNOTATION_TYPES.get(r["type"], str(r["type"])),
                    text=_cut(r["text"], MAX_ANNOTATION_CHARS),
                    comment=_cut(r["comment"], MAX_ANNOTATION_CHARS),
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
        path, missing = _resolve_path(raw_path, own["key"], link_mode, location)
        if path is not None and not missing and not path.is_file():
            missing = f"the file {path} is missing"
        main_id = parent_id if parent_id is not None else r["itemID"]
        main = items[main_id]
        fields, notes = _bounded_fields(values.get(main_id, {}))
        item_creators, item_tags = creators.get(main_id, []), tags.get(main_id, [])
        if len(item_creators) > MAX_CREATORS:
            notes.append(f"creators: the first {MAX_CREATORS} kept")
            item_creators = item_creators[:MAX_CREATORS]
        if len(item_tags) > MAX_TAGS:
            notes.append(f"tags: the first {MAX_TAGS} kept")
            item_tags = item_tags[:MAX_TAGS]
        item_annotations = annotations.get(r["itemID"], [])
        if len(item_annotations) > MAX_ANNOTATIONS:
            notes.append(f"annotations: the first {MAX_ANNOTATIONS} kept")
            item_annotations = item_annotations[:MAX_ANNOTATIONS]
        record = _bibliographic(main, fields, item_creators, item_tags)
        title = record.title or values.get(r["itemID"], {}).get("title") or Path(raw_path).name
        if len(title) > MAX_TITLE_CHARS:
            notes.append(f"title: cut to {MAX_TITLE_CHARS} characters")
            title = title[:MAX_TITLE_CHARS]
            record.title = title
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
                title=title,
                bibliographic=record,
                fields=fields,
                collections=[path_of(c) for c in collection_ids],
                collection_keys=[rows[c]["key"] for c in collection_ids],
                annotations=item_annotations,
                notes=notes,
            )
        )
    _name_supplements(attachments)
    from haiku.rag.collections import CollectionError, check_name

    collections: dict[str, tuple[str, list[str]]] = {}
    bad_collections: list[tuple[str, str]] = []
    for cid in sorted(live_collections, key=path_of):
        try:
            name = check_name(path_of(cid))
        except CollectionError as exc:
            bad_collections.append((str(rows[cid]["key"]), f"collection not imported: {exc}"))
            continue
        members = [a.key for a in attachments if rows[cid]["key"] in a.collection_keys]
        collections[name] = (rows[cid]["key"], members)
    for attachment in attachments:  # only the collections that exist here
        kept = [(n, k) for n, k in zip(attachment.collections, attachment.collection_keys, strict=True) if n in collections]
        attachment.collections = [n for n, _ in kept]
        attachment.collection_keys = [k for _, k in kept]
    return ZoteroLibrary(attachments, collections, skipped, bad_collections)


def attachment_file_name(raw_path: str | None) -> str:
    """The file name of a Zotero attachment path ("storage:paper.pdf" -> "paper.pdf")."""
    if not raw_path:
        return ""
    for prefix in ("storage:", "attachments:"):
        if raw_path.startswith(prefix):
            raw_path = raw_path[len(prefix) :]
            break
    return Path(raw_path.replace("\\", "/")).name


def _name_supplements(attachments: list[ZoteroAttachment]) -> None:
    """An item with several PDFs (a paper and its supplement) would list them under one title:
    the first attached keeps the item's title, each other one is titled "Supplement to “<item
    title>” (<file name>)", so the difference shows where a narrow list cuts a title (cut to
    the title bound, the item's title shortened first). Its bibliographic record stays the
    item's: it is the same work for citations."""
    by_parent: dict[tuple[str, str], list[ZoteroAttachment]] = defaultdict(list)
    for attachment in attachments:
        if attachment.parent_key is not None:
            by_parent[(attachment.library_uri, attachment.parent_key)].append(attachment)
    for siblings in by_parent.values():
        for attachment in siblings[1:]:  # in the order they were attached (item ids)
            suffix = f"” ({attachment_file_name(attachment.raw_path) or attachment.key})"
            prefix = "Supplement to “"
            room = max(0, MAX_TITLE_CHARS - len(prefix) - len(suffix))
            attachment.title = (prefix + attachment.title[:room] + suffix)[:MAX_TITLE_CHARS]


def _cut(text: str | None, limit: int) -> str | None:
    return None if text is None else str(text)[:limit]


def _bounded_fields(fields: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Fields cut to ``MAX_FIELD_CHARS`` (the title to ``MAX_TITLE_CHARS``), with notes."""
    notes: list[str] = []
    bounded: dict[str, str] = {}
    for name, value in fields.items():
        limit = MAX_TITLE_CHARS if name == "title" else MAX_FIELD_CHARS
        if len(value) > limit:
            notes.append(f"{name}: cut to {limit} characters")
            value = value[:limit]
        bounded[name] = value
    return bounded, notes


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


def _resolve_path(raw: str, key: str, link_mode: str, location: ZoteroLocation) -> tuple[Path | None, str | None]:
    """The attachment's file, or why it is refused. Stored files must resolve (symlinks
    followed) inside ``storage/<key>/`` of the data directory, files linked relative to the
    base directory inside that directory; only a "linked file" may name an absolute path."""
    if raw.startswith("storage:"):
        if link_mode not in ("imported_file", "imported_url"):
            return None, f"{raw}: a stored file path on a {link_mode.replace('_', ' ')} attachment; refused"
        if not _KEY.fullmatch(key):
            return None, f"attachment key {key!r} is not a Zotero key (letters and digits); refused"
        folder = location.data_dir.resolve() / "storage" / key
        return _contained(folder / raw[len("storage:") :], folder, raw, "its storage folder")
    if raw.startswith("attachments:"):
        if location.base_dir is None:
            return None, f"{raw}: linked relative to a base directory that is not known (pass --base-dir)"
        base = location.base_dir.resolve()
        return _contained(base / raw[len("attachments:") :], base, raw, "the base directory")
    path = Path(raw)
    if link_mode != "linked_file":
        return None, f"{raw}: a path outside Zotero's storage on a {link_mode.replace('_', ' ')} attachment; refused"
    if not path.is_absolute():
        return None, f"{raw}: a linked file path that is not absolute"
    return path, None


def _contained(path: Path, root: Path, raw: str, what: str) -> tuple[Path | None, str | None]:
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        return None, f"{raw}: cannot be resolved ({exc}); refused"
    if not resolved.is_relative_to(root):
        return None, f"{raw}: leads outside {what} ({root}); refused"
    return resolved, None


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


_PARSER_KEYS = {"filename", "pages_needing_ocr", "warnings", "stored_decrypted"}


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
    read_deadline: float | None = None,
) -> ZoteroImportReport:
    """Import (or bring up to date) every PDF attachment of a Zotero library.

    A missing file is reported as ``missing`` and a file that cannot be parsed as ``failed``;
    neither stops the import. Returns what happened to each attachment and collection.
    """
    import asyncio

    from haiku.rag import collections as coll
    from haiku.rag.ingest.formats import PDF_MAGIC, PDF_MAGIC_WINDOW
    from haiku.rag.ingest.pipeline import content_hash

    location = await asyncio.to_thread(locate, source, base_dir=base_dir)
    cancel = cancel or CancelToken()
    try:
        library = await asyncio.to_thread(read_library, location, deadline=read_deadline, cancel=cancel)
    except asyncio.CancelledError:
        cancel.cancel()  # interrupts SQLite, so the thread (and Ctrl-C) ends at once
        raise
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
        if PDF_MAGIC not in data[:PDF_MAGIC_WINDOW]:
            outcomes.append(
                ZoteroOutcome(attachment.key, attachment.title, "failed", shown, None, f"{attachment.path}: not a PDF by its content; refused")
            )
            continue
        note = ("shortened: " + "; ".join(attachment.notes)) if attachment.notes else None
        wanted = {ZOTERO_KEY: attachment.zotero_record(), METADATA_KEY: attachment.bibliographic.to_metadata()}
        if existing is not None and existing.content_hash == content_hash(data):
            current = {k: existing.metadata.get(k) for k in wanted}
            if _normalised(current) == _normalised(wanted) and existing.title == attachment.title:
                outcomes.append(ZoteroOutcome(attachment.key, attachment.title, "unchanged", shown, existing.id, note))
                continue
            updated = await client.update_document(
                existing.id, title=attachment.title, metadata={**existing.metadata, **wanted}
            )
            outcomes.append(ZoteroOutcome(attachment.key, attachment.title, "metadata", shown, updated.id, note))
            continue
        # keep what a user added (e.g. edits in the app); what the parser derives is derived anew
        kept = {k: v for k, v in (existing.metadata if existing else {}).items() if k not in _PARSER_KEYS}
        metadata = {**kept, **wanted}
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
        outcomes.append(ZoteroOutcome(attachment.key, attachment.title, status, shown, outcome.document.id, note))
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
    return ZoteroImportReport(
        str(location.database), outcomes, counts, written, library.skipped + library.bad_collections
    )
