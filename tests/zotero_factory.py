"""Build a small Zotero data directory for tests: ``zotero.sqlite`` + ``storage/<KEY>/``.

The DDL is the subset of Zotero's userdata.sql the importer reads (same table and column
names); ``build_library(..., ddl=full_schema)`` runs Zotero's own schema files instead.
Type, field and creator-type names are Zotero's; their numeric ids are arbitrary here, as
they are in Zotero (loaded from its global schema at run time).

The library: 3 items, 4 PDF attachments (two stored for item A, one linked file for B, one
stored for C whose file is missing), an HTML snapshot (not a PDF, skipped), a note,
2 collections ("Thesis": A and B; "Reading list": B and C), tags, and a highlight
annotation on A's main PDF.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pdf_factory

DDL_SUBSET = """
CREATE TABLE itemTypes (itemTypeID INTEGER PRIMARY KEY, typeName TEXT, templateItemTypeID INT, display INT DEFAULT 1);
CREATE TABLE fields (fieldID INTEGER PRIMARY KEY, fieldName TEXT, fieldFormatID INT);
CREATE TABLE creatorTypes (creatorTypeID INTEGER PRIMARY KEY, creatorType TEXT);
CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, type TEXT NOT NULL, editable INT NOT NULL,
    filesEditable INT NOT NULL, version INT NOT NULL DEFAULT 0, clientVersion INT NOT NULL DEFAULT 0,
    storageVersion INT NOT NULL DEFAULT 0, lastSync INT NOT NULL DEFAULT 0, archived INT NOT NULL DEFAULT 0,
    isAdmin INT NOT NULL DEFAULT 0);
CREATE TABLE items (itemID INTEGER PRIMARY KEY, itemTypeID INT NOT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, libraryID INT NOT NULL, key TEXT NOT NULL,
    version INT NOT NULL DEFAULT 0, clientVersion INT NOT NULL DEFAULT 0, synced INT NOT NULL DEFAULT 0,
    UNIQUE (libraryID, key));
CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE, valueNormalized TEXT);
CREATE TABLE itemData (itemID INT, fieldID INT, valueID, PRIMARY KEY (itemID, fieldID));
CREATE TABLE itemNotes (itemID INTEGER PRIMARY KEY, parentItemID INT, note TEXT, title TEXT);
CREATE TABLE itemAttachments (itemID INTEGER PRIMARY KEY, parentItemID INT, linkMode INT, contentType TEXT,
    charsetID INT, path TEXT, syncState INT DEFAULT 0, storageModTime INT, storageHash TEXT,
    lastProcessedModificationTime INT, lastRead INT);
CREATE TABLE itemAnnotations (itemID INTEGER PRIMARY KEY, parentItemID INT NOT NULL, type INTEGER NOT NULL,
    authorName TEXT, text TEXT, textNormalized TEXT, comment TEXT, commentNormalized TEXT, color TEXT,
    pageLabel TEXT, sortIndex TEXT NOT NULL, position TEXT NOT NULL, isExternal INT NOT NULL);
CREATE TABLE tags (tagID INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, nameNormalized TEXT);
CREATE TABLE itemTags (itemID INT NOT NULL, tagID INT NOT NULL, type INT NOT NULL, PRIMARY KEY (itemID, tagID));
CREATE TABLE creators (creatorID INTEGER PRIMARY KEY, firstName TEXT, lastName TEXT, fieldMode INT,
    firstNameNormalized TEXT, lastNameNormalized TEXT, UNIQUE (lastName, firstName, fieldMode));
CREATE TABLE itemCreators (itemID INT NOT NULL, creatorID INT NOT NULL, creatorTypeID INT NOT NULL DEFAULT 1,
    orderIndex INT NOT NULL DEFAULT 0, PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex),
    UNIQUE (itemID, orderIndex));
CREATE TABLE collections (collectionID INTEGER PRIMARY KEY, collectionName TEXT NOT NULL,
    parentCollectionID INT DEFAULT NULL, clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL, key TEXT NOT NULL, version INT NOT NULL DEFAULT 0, clientVersion INT NOT NULL DEFAULT 0,
    synced INT NOT NULL DEFAULT 0, UNIQUE (libraryID, key));
CREATE TABLE collectionItems (collectionID INT NOT NULL, itemID INT NOT NULL, orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (collectionID, itemID));
CREATE TABLE deletedItems (itemID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
CREATE TABLE deletedCollections (collectionID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
CREATE TABLE groups (groupID INTEGER PRIMARY KEY, libraryID INT NOT NULL UNIQUE, name TEXT NOT NULL,
    description TEXT NOT NULL, version INT NOT NULL);
"""

ITEM_TYPES = ["attachment", "note", "annotation", "journalArticle", "conferencePaper", "book"]
FIELDS = ["title", "date", "DOI", "publicationTitle", "proceedingsTitle", "volume", "issue", "pages", "url",
          "publisher", "extra", "ISBN"]
CREATOR_TYPES = ["author", "editor"]

PAPER_A = dict(
    key="AAAA1111", type="journalArticle", title="Sparse Walrus Attention for Arctic Sensing",
    creators=[("Marta", "Kowalczyk"), ("Jonas", "Ekberg"), ("Li", "Wen")],
    fields={"date": "2017-06-12 June 12, 2017", "DOI": "10.5555/walrus.2017.6", "publicationTitle": "Journal of Polar Computing",
            "volume": "12", "issue": "3", "pages": "101-115", "url": "https://example.org/walrus"},
    tags=["attention", "walrus"],
)
PAPER_B = dict(
    key="BBBB2222", type="conferencePaper", title="Heron Nesting Census with Small Drones",
    creators=[("Sofia", "Haddad"), ("Pieter", "de Vries")],
    fields={"date": "2021-00-00 2021", "proceedingsTitle": "Proceedings of EcoVision", "pages": "7-14"},
    tags=["drones"],
)
BOOK_C = dict(
    key="CCCC3333", type="book", title="Otter Dens of the Northern Coast",
    creators=[(None, "Polar Institute")],  # a one-field (institutional) creator
    fields={"date": "2019-03-00 March 2019", "publisher": "Tundra Press"},
    tags=[],
)


@dataclass
class ZoteroFixture:
    data_dir: Path
    database: Path
    linked_dir: Path
    keys: dict[str, str] = field(default_factory=dict)  # role -> attachment key
    layouts: dict[str, pdf_factory.PdfLayout] = field(default_factory=dict)

    def connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.database)


def build_library(root: Path, *, ddl: str | None = None) -> ZoteroFixture:
    data_dir = root / "Zotero"
    (data_dir / "storage").mkdir(parents=True)
    linked_dir = root / "elsewhere"
    linked_dir.mkdir()
    database = data_dir / "zotero.sqlite"
    db = sqlite3.connect(database)
    db.executescript(ddl or DDL_SUBSET)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    type_ids = {name: 100 + i for i, name in enumerate(ITEM_TYPES)}
    field_ids = {name: 200 + i for i, name in enumerate(FIELDS)}
    creator_type_ids = {name: 300 + i for i, name in enumerate(CREATOR_TYPES)}
    for name, tid in type_ids.items():
        db.execute("INSERT INTO itemTypes (itemTypeID, typeName) VALUES (?, ?)", (tid, name))
        if "itemTypesCombined" in tables:
            db.execute("INSERT INTO itemTypesCombined VALUES (?, ?, 1, 0)", (tid, name))
    for name, fid in field_ids.items():
        db.execute("INSERT INTO fields (fieldID, fieldName) VALUES (?, ?)", (fid, name))
        if "fieldsCombined" in tables:
            db.execute("INSERT INTO fieldsCombined (fieldID, fieldName, custom) VALUES (?, ?, 0)", (fid, name))
    for name, cid in creator_type_ids.items():
        db.execute("INSERT INTO creatorTypes VALUES (?, ?)", (cid, name))
    db.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (1, 'user', 1, 1)")

    fixture = ZoteroFixture(data_dir, database, linked_dir)
    next_id = iter(range(1, 1000))
    values: dict[str, int] = {}

    def item(type_name: str, key: str) -> int:
        item_id = next(next_id)
        db.execute(
            "INSERT INTO items (itemID, itemTypeID, libraryID, key, dateModified) VALUES (?, ?, 1, ?, '2024-01-01 10:00:00')",
            (item_id, type_ids[type_name], key),
        )
        return item_id

    def set_field(item_id: int, name: str, value: str) -> None:
        if value not in values:
            values[value] = len(values) + 1
            db.execute("INSERT INTO itemDataValues (valueID, value) VALUES (?, ?)", (values[value], value))
        db.execute("INSERT INTO itemData VALUES (?, ?, ?)", (item_id, field_ids[name], values[value]))

    parents = {}
    for spec in (PAPER_A, PAPER_B, BOOK_C):
        item_id = item(spec["type"], spec["key"])
        parents[spec["key"]] = item_id
        set_field(item_id, "title", spec["title"])
        for name, value in spec["fields"].items():
            set_field(item_id, name, value)
        for order, (first, last) in enumerate(spec["creators"]):
            mode = 1 if first is None else 0
            db.execute("INSERT OR IGNORE INTO creators (firstName, lastName, fieldMode) VALUES (?, ?, ?)", (first or "", last, mode))
            creator_id = db.execute(
                "SELECT creatorID FROM creators WHERE lastName = ? AND firstName = ? AND fieldMode = ?", (last, first or "", mode)
            ).fetchone()[0]
            db.execute("INSERT INTO itemCreators VALUES (?, ?, ?, ?)", (item_id, creator_id, creator_type_ids["author"], order))
        for tag in spec["tags"]:
            db.execute("INSERT OR IGNORE INTO tags (name) VALUES (?)", (tag,))
            tag_id = db.execute("SELECT tagID FROM tags WHERE name = ?", (tag,)).fetchone()[0]
            db.execute("INSERT INTO itemTags VALUES (?, ?, 0)", (item_id, tag_id))

    def attachment(role: str, key: str, parent: str, link_mode: int, path: str, content_type: str = "application/pdf") -> int:
        item_id = item("attachment", key)
        db.execute(
            "INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) VALUES (?, ?, ?, ?, ?)",
            (item_id, parents[parent], link_mode, content_type, path),
        )
        fixture.keys[role] = key
        return item_id

    # A: main PDF and a supplement, both stored
    a_main = attachment("a_main", "ATTA0001", "AAAA1111", 0, "storage:kowalczyk2017.pdf")
    fixture.layouts["a_main"] = pdf_factory.make_paper_pdf(
        _storage(data_dir, "ATTA0001") / "kowalczyk2017.pdf", title=PAPER_A["title"],
        authors=["Marta Kowalczyk", "Jonas Ekberg", "Li Wen"],
        paragraphs=["Walrus herds on drifting floes were tracked with sparse attention over acoustic sensors.",
                    "The sparse attention model halves the energy budget of the buoy network in winter."],
    )
    attachment("a_supplement", "ATTA0002", "AAAA1111", 0, "storage:supplement.pdf")
    fixture.layouts["a_supplement"] = pdf_factory.make_paper_pdf(
        _storage(data_dir, "ATTA0002") / "supplement.pdf", title="Supplementary material",
        authors=["Marta Kowalczyk"], paragraphs=["Calibration tables for the hydrophone array near Svalbard."], pages=1,
    )
    # B: a linked file outside the data directory
    linked = linked_dir / "haddad2021.pdf"
    attachment("b_linked", "ATTB0001", "BBBB2222", 2, str(linked))
    fixture.layouts["b_linked"] = pdf_factory.make_paper_pdf(
        linked, title=PAPER_B["title"], authors=["Sofia Haddad", "Pieter de Vries"],
        paragraphs=["Grey heron nests along the estuary were counted from quadcopter images each spring."], pages=1,
    )
    # C: stored, but the file is gone
    attachment("c_missing", "ATTC0001", "CCCC3333", 0, "storage:otters.pdf")
    _storage(data_dir, "ATTC0001")
    # an HTML snapshot of A (not a PDF: skipped)
    attachment("a_snapshot", "ATTA0003", "AAAA1111", 1, "storage:page.html", "text/html")
    (_storage(data_dir, "ATTA0003") / "page.html").write_text("<html>snapshot</html>")
    # a child note of B
    note = item("note", "NOTE0001")
    db.execute("INSERT INTO itemNotes VALUES (?, ?, ?, ?)", (note, parents["BBBB2222"], "<p>read again</p>", "read again"))
    # a highlight on A's main PDF, page 2
    highlight = item("annotation", "ANNO0001")
    db.execute(
        "INSERT INTO itemAnnotations (itemID, parentItemID, type, text, comment, color, pageLabel, sortIndex, position, isExternal) "
        "VALUES (?, ?, 1, ?, ?, '#ffd400', '2', '00001|000100|00200', ?, 0)",
        (highlight, a_main, "halves the energy budget", "key result", json.dumps({"pageIndex": 1, "rects": [[72, 100, 300, 112]]})),
    )
    # collections
    for cid, (name, key, members) in enumerate(
        (("Thesis", "COLL0001", ["AAAA1111", "BBBB2222"]), ("Reading list", "COLL0002", ["BBBB2222", "CCCC3333"])), start=1
    ):
        db.execute("INSERT INTO collections (collectionID, collectionName, libraryID, key) VALUES (?, ?, 1, ?)", (cid, name, key))
        for order, member in enumerate(members):
            db.execute("INSERT INTO collectionItems VALUES (?, ?, ?)", (cid, parents[member], order))
    db.commit()
    db.close()
    return fixture


def _storage(data_dir: Path, key: str) -> Path:
    folder = data_dir / "storage" / key
    folder.mkdir(parents=True, exist_ok=True)
    return folder
