"""Pydantic AI capabilities over a haiku.rag store.

- ``rag``: ``RAGCapability`` — grounded search (``rag_search``) and citations (``rag_cite``).
- ``compaction``: ``EvidenceCompactionCapability`` — shrinks earlier questions' evidence on the
  wire to what was cited.
- ``policy``: ``CitationPolicyCapability`` — requires every answer to declare its grounding.
- ``base``: ``EvidenceCapability``, the machinery evidence capabilities share (question
  lifecycle, state syncing, search and cite, the client); ``budget`` its budgets and notices.
- ``ledger``: the evidence record every evidence capability keeps per question.
- ``state``: the JSON state a host carries (``Citation``, ``EvidenceState``).
- ``evidence``: how compaction and the policy discover the evidence capabilities of a run.
- ``formatting`` and ``pictures``: how results and picture hits are shown to a model.

Import the submodule you need; this package imports nothing so ``import haiku.rag`` stays cheap.
"""
