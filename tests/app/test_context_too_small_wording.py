"""The app's turn and banner say a too-small model context in words, with both sizes, and
offer the passages (which need no model): never the server's raw JSON."""

from __future__ import annotations

from context_overflow_bodies import LLAMA_CPP

from haiku.rag.answering.agent import context_overflow
from haiku_desk.services.chat_run import describe_failure


def test_the_turn_and_banner_word_a_too_small_context() -> None:
    error = context_overflow(LLAMA_CPP)
    assert error is not None
    failure = describe_failure(error)
    assert failure.offer_passages
    assert failure.detail == (
        "This model's context (2,048 tokens) is too small for the question and its passages "
        "(7,942 tokens). Choose a model with a larger context, or show the passages."
    )
    assert "{" not in failure.message + failure.detail and "status_code" not in failure.detail


def test_other_refusals_are_not_taken_for_a_small_context() -> None:
    assert context_overflow({"error": {"message": "invalid API key", "type": "authentication_error"}}) is None
    assert context_overflow({"error": {"message": "tools param requires --jinja flag"}}) is None


def test_an_answer_cut_off_mid_way_is_said_as_such_not_as_an_unreachable_model() -> None:
    """The server was reached and stopped mid-answer (a re-test read "isn't reachable")."""
    from haiku.rag.errors import ChatAnswerCutOff

    failure = describe_failure(ChatAnswerCutOff("the chat model m stopped in the middle of its answer"))
    assert failure.message.startswith("The model stopped in the middle of its answer")
    assert failure.offer_passages
