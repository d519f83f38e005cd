"""The Responses API: the simulated model's events (lessonkit.core.responses) and the reader.

Two kinds of stream are read here: the course's own (the plan its server plays), checked
against the official SDK's pydantic models, and streams written by hand from OpenAI's
documented events (a reasoning item before the message, obfuscation padding, an unknown
event type, response.incomplete, an error event), which the course's server never sends.
On both, read_stream(dialect="responses") must agree with the official SDK's own
iteration over the same bytes, on every cut.
"""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
import openai
import openai.types.responses
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import chunkings

from lessonkit.core.client import read_stream
from lessonkit.core.llm import (
    RUNNING_ANSWER,
    RUNNING_PROMPT,
    Answer,
    Envelope,
    ResponsesOptions,
    Timing,
    answer_for,
    blocking_body,
    stream_writes,
    wire_bytes,
)
from lessonkit.core.network import every_cut
from lessonkit.core.responses import FAILURE_CODE, item_id_for
from lessonkit.core.sse import decode_all, encode

RUNNING = answer_for(RUNNING_PROMPT)
CUT_SHORT = answer_for(RUNNING_PROMPT, max_tokens=3)
STREAM_EVENTS = pydantic.TypeAdapter(openai.types.responses.ResponseStreamEvent)
LIFE_CYCLE = ("response.created", "response.in_progress", "response.completed",
              "response.incomplete", "response.failed")  # fmt: skip


def events(answer: Answer, **options) -> list[dict]:
    """Return the JSON of every event the course's server writes for `answer`."""
    wire = wire_bytes(answer, "responses", options=ResponsesOptions(**options))
    return [json.loads(event.data) for event in decode_all([wire])]


# --- the simulated model's events ---------------------------------------------------------


def test_the_events_come_in_the_order_the_sdk_needs():
    kinds = [event["type"] for event in events(RUNNING)]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * len(RUNNING.tokens),
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]


@pytest.mark.parametrize(
    "answer, options",
    [(RUNNING, {}), (CUT_SHORT, {"max_output_tokens": 3}), (RUNNING, {"fail_after_tokens": 2})],
    ids=["completed", "incomplete", "failed"],
)
def test_every_event_is_a_valid_sdk_stream_event_named_on_its_event_line(answer, options):
    wire = wire_bytes(answer, "responses", options=ResponsesOptions(**options))
    for event in decode_all([wire]):
        parsed = STREAM_EVENTS.validate_json(event.data)
        assert parsed.type == event.event


@pytest.mark.parametrize("options", [{}, {"fail_after_tokens": 4}])
def test_sequence_numbers_count_up_from_zero_and_every_life_cycle_event_has_one_response_id(
    options,
):
    stream = events(RUNNING, **options)
    assert [event["sequence_number"] for event in stream] == list(range(len(stream)))
    ids = {event["response"]["id"] for event in stream if event["type"] in LIFE_CYCLE}
    assert ids == {"resp_sim277ac9e1"}


def test_the_deltas_name_the_message_item_and_its_text_part():
    deltas = [e for e in events(RUNNING) if e["type"] == "response.output_text.delta"]
    assert "".join(e["delta"] for e in deltas) == RUNNING_ANSWER
    where = {(e["item_id"], e["output_index"], e["content_index"]) for e in deltas}
    assert where == {(item_id_for("resp_sim277ac9e1"), 0, 0)}


def test_the_completed_response_carries_the_output_and_the_usage():
    final = events(RUNNING)[-1]["response"]
    response = openai.types.responses.Response.model_validate(final)
    assert (response.status, response.output_text) == ("completed", RUNNING_ANSWER)
    assert (response.usage.input_tokens, response.usage.output_tokens) == (6, 6)


def test_max_output_tokens_ends_with_response_incomplete_and_the_reason():
    final = events(CUT_SHORT, max_output_tokens=3)[-1]
    assert final["type"] == "response.incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["response"]["max_output_tokens"] == 3
    assert final["response"]["output"][0]["status"] == "incomplete"


@pytest.mark.parametrize("after", [0, 1, 5])
def test_fail_after_tokens_sends_that_many_deltas_then_response_failed(after):
    stream = events(RUNNING, fail_after_tokens=after)
    deltas = [e["delta"] for e in stream if e["type"] == "response.output_text.delta"]
    assert deltas == list(RUNNING.tokens[:after])
    failed = stream[-1]
    assert failed["type"] == "response.failed"
    assert failed["response"]["error"]["code"] == FAILURE_CODE
    assert failed["response"]["output"][0]["content"][0]["text"] == "".join(deltas)


@pytest.mark.parametrize("after", [6, 7, 100])
def test_fail_after_tokens_at_or_past_the_end_changes_nothing(after):
    assert events(RUNNING, fail_after_tokens=after) == events(RUNNING)


def test_a_failure_comes_with_its_last_token_and_nothing_is_written_after_it():
    timing = Timing(prefill_ms=300, per_token_ms=40)
    writes = list(stream_writes(RUNNING, "responses", timing=timing,
                                options=ResponsesOptions(fail_after_tokens=2)))  # fmt: skip
    assert [at for at, _ in writes] == [0, 0, 0, 0, 340, 380, 380]
    assert b"response.failed" in writes[-1][1]
    at_ms, _ = blocking_body(RUNNING, "responses", timing=timing,
                             options=ResponsesOptions(fail_after_tokens=2))  # fmt: skip
    assert at_ms == 380


def test_the_opening_events_go_out_at_once_and_the_end_with_the_last_token():
    writes = list(stream_writes(RUNNING, "responses", timing=Timing(300, 40)))
    assert [at for at, _ in writes] == [
        0,
        0,
        0,
        0,
        340,
        380,
        420,
        460,
        500,
        540,
        540,
        540,
        540,
        540,
    ]


@pytest.mark.parametrize(
    "answer, options, status",
    [(RUNNING, {}, "completed"), (CUT_SHORT, {"max_output_tokens": 3}, "incomplete"),
     (RUNNING, {"fail_after_tokens": 3}, "failed")],
)  # fmt: skip
def test_the_blocking_body_is_a_valid_sdk_response_whose_output_text_is_the_answer(
    answer, options, status
):
    _, body = blocking_body(answer, "responses", options=ResponsesOptions(**options))
    response = openai.types.responses.Response.model_validate_json(body)
    assert response.status == status
    sent = answer.tokens[: options.get("fail_after_tokens", len(answer.tokens))]
    assert response.output_text == "".join(sent)


def test_blocking_options_belong_to_the_responses_dialect_only():
    with pytest.raises(ValueError, match="only in 'responses'"):
        blocking_body(RUNNING, "openai", options=ResponsesOptions())


def test_the_response_id_comes_from_the_envelope_when_given():
    stream = decode_all([wire_bytes(RUNNING, "responses", envelope=Envelope(response_id="resp_7"))])
    assert json.loads(stream[0].data)["response"]["id"] == "resp_7"
    assert json.loads(stream[2].data)["item"]["id"] == "msg_7"


@pytest.mark.parametrize(
    "options, message",
    [({"fail_after_tokens": -1}, "fail_after_tokens must be a whole number of at least 0"),
     ({"max_output_tokens": 0}, "max_output_tokens must be a whole number of at least 1"),
     ({"fail_after_tokens": True}, "fail_after_tokens"), ({"max_output_tokens": 2.5}, "max_")],
)  # fmt: skip
def test_responses_options_refuse_what_is_not_a_count(options, message):
    with pytest.raises(ValueError, match=message):
        ResponsesOptions(**options)


# --- streams written from OpenAI's documented events ----------------------------------------


def documented(*bodies: dict, done: bool = False) -> bytes:
    """Return events as OpenAI sends them: the type on the event: line and in the JSON."""
    wire = b"".join(
        encode(json.dumps({**body, "sequence_number": n}), event=body["type"])
        for n, body in enumerate(bodies)
    )
    return wire + (encode("[DONE]") if done else b"")


def response(status: str, output: list, **fields) -> dict:
    return {"id": "resp_67c", "object": "response", "created_at": 1741290958, "status": status,
            "model": "gpt-4.1", "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "usage": None, **fields}  # fmt: skip


USAGE = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 28},
         "total_tokens": 52}  # fmt: skip
REASONING = {"id": "rs_67c", "type": "reasoning", "summary": []}
SUMMARY = {"item_id": "rs_67c", "output_index": 0, "summary_index": 0}
MESSAGE = {"id": "msg_67c", "type": "message", "status": "in_progress", "role": "assistant",
           "content": []}  # fmt: skip
AT = {"item_id": "msg_67c", "output_index": 1, "content_index": 0}
TEXT_PART = {"type": "output_text", "text": "", "annotations": []}


def delta(text: str, padding: str) -> dict:
    return {"type": "response.output_text.delta", **AT, "delta": text, "logprobs": [],
            "obfuscation": padding}  # fmt: skip


def opening() -> list[dict]:
    """A reasoning item at output_index 0 (its summary streamed), then the message at 1."""
    summary = {"type": "summary_text", "text": "Looking up the order."}
    return [
        {"type": "response.created", "response": response("in_progress", [])},
        {"type": "response.in_progress", "response": response("in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0, "item": REASONING},
        {"type": "response.reasoning_summary_part.added", **SUMMARY,
         "part": {"type": "summary_text", "text": ""}},
        {"type": "response.reasoning_summary_text.delta", **SUMMARY,
         "delta": "Looking up the order.", "obfuscation": "q7Zk"},
        {"type": "response.reasoning_summary_text.done", **SUMMARY,
         "text": "Looking up the order."},
        {"type": "response.reasoning_summary_part.done", **SUMMARY, "part": summary},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {**REASONING, "summary": [summary]}},
        {"type": "response.output_item.added", "output_index": 1, "item": MESSAGE},
        {"type": "response.content_part.added", **AT, "part": TEXT_PART},
        delta("It ships", "Xb2"),
        {"type": "response.some_future_event", "note": "an event type the reader does not know"},
        delta(" on Monday.", ""),
    ]  # fmt: skip


def closing(status: str, text: str, **fields) -> list[dict]:
    part = {**TEXT_PART, "text": text}
    item = {**MESSAGE, "status": "completed" if status == "completed" else "incomplete",
            "content": [part]}  # fmt: skip
    final = response(status, [{**REASONING}, item], **fields)
    return [
        {"type": "response.output_text.done", **AT, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **AT, "part": part},
        {"type": "response.output_item.done", "output_index": 1, "item": item},
        {"type": f"response.{status}", "response": final},
    ]


ANSWER = "It ships on Monday."
DOCUMENTED_COMPLETED = documented(*opening(), *closing("completed", ANSWER, usage=USAGE))
DOCUMENTED_INCOMPLETE = documented(
    *opening()[:-2],
    *closing("incomplete", "It ships", usage=USAGE,
             incomplete_details={"reason": "max_output_tokens"}),
)  # fmt: skip
ERROR_EVENT = {"type": "error", "code": "ERR_SOMETHING", "message": "Something went wrong.",
               "param": None}  # fmt: skip
DOCUMENTED_ERROR = documented(*opening(), ERROR_EVENT)
DOCUMENTED_FAILED = documented(
    *opening(),
    {"type": "response.failed",
     "response": response("failed", [], error={"code": "server_error", "message": "Oops."})},
)  # fmt: skip


def test_a_reasoning_item_before_the_message_adds_no_answer_text():
    reply = read_stream([DOCUMENTED_COMPLETED], "responses")
    assert (reply.text, reply.complete, reply.finish_reason) == (ANSWER, True, "stop")
    assert "Looking up" not in reply.text


def test_usage_comes_from_the_final_response():
    assert read_stream([DOCUMENTED_COMPLETED], "responses").usage == USAGE


def test_obfuscation_padding_and_an_unknown_event_type_change_nothing():
    plain = [{k: v for k, v in body.items() if k != "obfuscation"} for body in opening()]
    known = [body for body in plain if body["type"] != "response.some_future_event"]
    stripped = documented(*known, *closing("completed", ANSWER, usage=USAGE))
    with_them = read_stream([DOCUMENTED_COMPLETED], "responses")
    without = read_stream([stripped], "responses")
    assert replace(with_them, events=0) == replace(without, events=0)
    assert with_them.events == without.events + 1  # the unknown event is read, and skipped


def test_a_trailing_done_is_accepted_and_changes_nothing():
    with_done = read_stream([DOCUMENTED_COMPLETED + encode("[DONE]")], "responses")
    assert with_done == read_stream([DOCUMENTED_COMPLETED], "responses")


def test_a_done_without_a_final_event_does_not_complete_the_reply():
    reply = read_stream([documented(*opening(), done=True)], "responses")
    assert (reply.text, reply.complete, reply.error) == (ANSWER, False, None)


@pytest.mark.parametrize(
    "reason, finish", [("max_output_tokens", "length"), ("content_filter", "content_filter")]
)
def test_response_incomplete_completes_the_reply_with_the_reason_as_finish_reason(reason, finish):
    wire = documented(*opening()[:-2],
                      *closing("incomplete", "It ships", incomplete_details={"reason": reason}))  # fmt: skip
    reply = read_stream([wire], "responses")
    assert (reply.text, reply.complete, reply.finish_reason) == ("It ships", True, finish)


def test_an_error_event_is_reported_and_the_reply_is_not_complete():
    reply = read_stream([DOCUMENTED_ERROR], "responses")
    assert reply.text == ANSWER and not reply.complete
    assert reply.error == "event 14 (error): server error: ERR_SOMETHING: Something went wrong."


def test_an_error_event_with_its_details_under_error_is_reported_too():
    nested = {"type": "error", "error": {"type": "server_error", "message": "Overloaded."}}
    reply = read_stream([documented(*opening()[:2], nested)], "responses")
    assert reply.error == "event 3 (error): server error: server_error: Overloaded."


def test_a_flat_error_event_without_a_code_names_the_error_once():
    flat = {"type": "error", "code": None, "message": "boom", "param": None}
    reply = read_stream([documented(*opening()[:2], flat)], "responses")
    assert reply.error == "event 3 (error): server error: boom"


def test_response_failed_is_reported_with_its_error_and_the_reply_is_not_complete():
    reply = read_stream([DOCUMENTED_FAILED], "responses")
    assert reply.text == ANSWER and not reply.complete
    assert reply.error == "event 14 (response.failed): response failed: server_error: Oops."


def test_a_stream_cut_before_its_final_event_is_not_complete_and_not_an_error():
    cut = DOCUMENTED_COMPLETED[: DOCUMENTED_COMPLETED.rindex(b"event: response.completed")]
    reply = read_stream([cut], "responses")
    assert (reply.text, reply.complete, reply.error, reply.finish_reason) == (
        ANSWER, False, None, None)  # fmt: skip


def test_a_final_event_whose_response_is_not_an_object_is_an_error():
    wire = documented({"type": "response.completed", "response": "done"})
    assert "should be an object" in read_stream([wire], "responses").error


# --- the reader agrees with the official SDK, on every cut ----------------------------------


def sdk_reading(wire: bytes) -> tuple[str, str | None]:
    """Return (the text, the last event's type) the SDK's create(stream=True) yields for `wire`."""
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=wire
        )
    )
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="x",
                           http_client=httpx.Client(transport=transport))  # fmt: skip
    kinds, text = [], ""
    for event in client.responses.create(model="m", input="hi", stream=True):
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            text += event.delta
    return text, kinds[-1] if kinds else None


def agrees_with_the_sdk(reply, text: str, last: str | None) -> bool:
    """Return True if a Reply says what the SDK's iteration says: text, ended, failed."""
    return (
        reply.text == text
        and reply.complete == (last in ("response.completed", "response.incomplete"))
        and (reply.error is not None) == (last in ("error", "response.failed"))
    )


RECORDED = {
    "completed": wire_bytes(RUNNING, "responses", heartbeat_ms=100),
    "incomplete": wire_bytes(CUT_SHORT, "responses",
                             options=ResponsesOptions(max_output_tokens=3)),
    "failed": wire_bytes(RUNNING, "responses", options=ResponsesOptions(fail_after_tokens=4)),
    "documented completed": DOCUMENTED_COMPLETED,
    "documented incomplete": DOCUMENTED_INCOMPLETE,
    "documented error": DOCUMENTED_ERROR,
    "documented failed": DOCUMENTED_FAILED,
}  # fmt: skip


@pytest.mark.parametrize("name", RECORDED)
def test_the_reader_agrees_with_the_sdks_own_iteration_on_every_cut(name):
    wire = RECORDED[name]
    text, last = sdk_reading(wire)
    whole = read_stream([wire], "responses")
    assert agrees_with_the_sdk(whole, text, last), (whole, text, last)
    for chunks in every_cut(wire):
        assert read_stream(chunks, "responses") == whole


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(RECORDED)), st.data())
def test_every_drop_of_a_recorded_stream_agrees_with_the_sdk_reading_the_same_bytes(name, data):
    wire = RECORDED[name]
    dropped = wire[: data.draw(st.integers(0, len(wire)))]
    text, last = sdk_reading(dropped)
    chunks = data.draw(chunkings(dropped, max_cuts=20))
    assert agrees_with_the_sdk(read_stream(chunks, "responses"), text, last)


# --- what each of the SDK's calls does with a stream that does not complete -------------------


def sdk_for(wire: bytes) -> openai.OpenAI:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"},
                                       content=wire)
    )  # fmt: skip
    return openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="x",
                         http_client=httpx.Client(transport=transport))  # fmt: skip


def test_create_stream_yields_an_error_event_instead_of_raising():
    events_ = list(sdk_for(DOCUMENTED_ERROR).responses.create(model="m", input="hi", stream=True))
    assert events_[-1].type == "error" and events_[-1].message == "Something went wrong."


@pytest.mark.parametrize(
    "wire",
    [DOCUMENTED_COMPLETED[:-40], DOCUMENTED_FAILED, DOCUMENTED_INCOMPLETE],
    ids=["cut", "failed", "incomplete"],
)
def test_the_stream_helpers_final_response_raises_unless_response_completed_arrived(wire):
    with sdk_for(wire).responses.stream(model="m", input="hi") as stream:
        with pytest.raises(RuntimeError, match="response.completed"):
            stream.get_final_response()


def test_the_stream_helpers_final_response_is_the_answer_after_response_completed():
    with sdk_for(DOCUMENTED_COMPLETED).responses.stream(model="m", input="hi") as stream:
        assert stream.get_final_response().output_text == ANSWER
