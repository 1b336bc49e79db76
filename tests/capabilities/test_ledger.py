"""The evidence ledger on its own: question identities, epochs, the merge rule and the status."""

from __future__ import annotations

import pytest

from haiku.rag.capabilities.ledger import (
    CapabilityEvidenceRecord,
    EvidenceRef,
    citation_status,
)


def ref(chunk_id: str, capability: str = "rag") -> EvidenceRef:
    return EvidenceRef(capability=capability, chunk_id=chunk_id)


def begun(question: int = 0) -> CapabilityEvidenceRecord:
    record = CapabilityEvidenceRecord()
    record.begin_question(question)
    return record


def test_a_question_without_declaration_is_missing():
    record = begun()
    record.note_evidence(1)
    assert citation_status([record], question=0) == "missing"


def test_citing_after_the_evidence_grounds_the_answer():
    record = begun()
    record.note_evidence(1)
    record.declare([ref("a")], epoch=3, retrieved_now={"a"})
    assert citation_status([record], question=0) == "grounded"


def test_an_empty_declaration_is_ungrounded_not_missing():
    record = begun()
    record.declare([], epoch=1, retrieved_now=set())
    assert citation_status([record], question=0) == "ungrounded"


def test_a_citation_in_the_same_request_as_its_search_does_not_count():
    record = begun()
    record.note_evidence(3)
    record.declare([ref("a")], epoch=3, retrieved_now={"a"})
    assert citation_status([record], question=0) == "missing"


def test_evidence_gathered_by_another_capability_after_citing_makes_it_missing_again():
    rag, analysis = begun(), begun()
    rag.note_evidence(1)
    rag.declare([ref("a")], epoch=3, retrieved_now={"a"})
    analysis.note_evidence(5)
    assert citation_status([rag, analysis], question=0) == "missing"


def test_a_declaration_of_an_earlier_question_does_not_count_for_this_one():
    record = begun(0)
    record.declare([ref("a")], epoch=3, retrieved_now={"a"})
    assert citation_status([record], question=6) == "missing"


def test_an_empty_follow_up_citation_never_downgrades_a_grounded_answer():
    record = begun()
    record.note_evidence(1)
    record.declare([ref("a")], epoch=3, retrieved_now={"a"})
    record.declare([], epoch=5, retrieved_now={"a"})
    assert record.declaration is not None and record.declaration.refs == [ref("a")]
    assert citation_status([record], question=0) == "grounded"


def test_a_declaration_after_new_evidence_replaces_the_old_one():
    record = begun()
    record.note_evidence(1)
    record.declare([ref("a")], epoch=3, retrieved_now={"a"})
    record.note_evidence(5)
    record.declare([], epoch=7, retrieved_now={"a"})
    assert citation_status([record], question=0) == "ungrounded"


def test_occurrences_remember_which_questions_retrieved_and_cited_a_chunk():
    record = begun(0)
    record.declare([ref("a"), ref("b")], epoch=3, retrieved_now={"a"})
    record.end_question()
    record.begin_question(6)
    record.declare([ref("a")], epoch=9, retrieved_now=set())
    assert record.occurrences["a"].cited_in_questions == [0, 6]
    assert record.occurrences["a"].retrieved_in_questions == [0]
    assert record.occurrences["b"].retrieved_in_questions == []


def test_only_non_empty_citations_count_as_having_cited():
    record = begun()
    record.declare([], epoch=1, retrieved_now=set())
    assert not record.has_citations()
    record.declare([ref("a")], epoch=1, retrieved_now=set())
    assert record.has_citations()


def test_begin_and_end_mark_the_question_in_progress():
    record = begun(4)
    assert record.in_progress and record.question == 4 and record.declaration is None
    record.end_question()
    assert not record.in_progress and record.question == 4


def test_a_new_question_must_come_later_in_the_history():
    record = begun(6)
    with pytest.raises(ValueError, match="must only grow"):
        record.begin_question(6)
    with pytest.raises(ValueError, match="must only grow"):
        record.begin_question(2)


def test_the_history_must_be_append_only():
    record = begun(0)
    record.note_evidence(5)
    with pytest.raises(ValueError, match="append-only"):
        record.note_evidence(3)
    with pytest.raises(ValueError, match="append-only"):
        record.declare([], epoch=4, retrieved_now=set())
    with pytest.raises(ValueError, match="append-only"):
        record.begin_question(4)


def test_evidence_outside_a_question_is_refused():
    with pytest.raises(RuntimeError, match="no question"):
        CapabilityEvidenceRecord().note_evidence(1)


def test_the_record_round_trips_through_json():
    record = begun(2)
    record.note_evidence(3)
    record.declare([ref("a")], epoch=5, retrieved_now={"a"})
    again = CapabilityEvidenceRecord.model_validate_json(record.model_dump_json())
    assert again == record
