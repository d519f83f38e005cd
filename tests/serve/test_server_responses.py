"""POST /v1/responses over real loopback HTTP: the stream, the faults, the counters, bad requests.

The official openai SDK's three Responses API calls against this endpoint are in
test_server_sdks.py; the events' shapes and the reader in tests/core/test_responses.py.
"""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lessonkit import server
from lessonkit.core import llm
from lessonkit.core.client import read_stream
from lessonkit.core.sse import decode_all

pytestmark = pytest.mark.server

RESPONSES = "/v1/responses"
ASK = {"model": "lessonkit-sim", "input": llm.RUNNING_PROMPT}
STREAM = {**ASK, "stream": True}
LONG_PROMPT = "Tell me everything about my parcel."  # a 40-80 token answer


def kinds(body: bytes) -> list[str]:
    return [event.event for event in decode_all([body])]


def test_a_responses_stream_carries_event_stream_no_cache_and_no_accel_buffering(server_url, fast):
    with httpx.stream("POST", server_url + RESPONSES, params=fast, json=STREAM) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        response.read()


def test_the_stream_goes_from_response_created_to_response_completed(server_url, fast, read_raw):
    body, clean = read_raw("POST", server_url + RESPONSES, params=fast, json=STREAM)
    reply = read_stream([body], "responses")
    assert clean and reply.complete and reply.text == llm.RUNNING_ANSWER
    assert (reply.finish_reason, reply.usage["total_tokens"]) == ("stop", 12)
    assert kinds(body)[:4] == ["response.created", "response.in_progress",
                               "response.output_item.added", "response.content_part.added"]  # fmt: skip
    assert kinds(body)[-1] == "response.completed"
    assert b"[DONE]" not in body


def test_each_response_gets_its_own_id_on_every_life_cycle_event(server_url, fast, read_raw):
    ids = []
    for _ in range(2):
        body, _ = read_raw("POST", server_url + RESPONSES, params=fast, json=STREAM)
        events = [json.loads(e.data) for e in decode_all([body])]
        ids.append({e["response"]["id"] for e in events if "response" in e})
    assert all(len(one) == 1 for one in ids) and ids[0] != ids[1]
    assert next(iter(ids[0])).startswith("resp_")


def test_max_output_tokens_ends_with_response_incomplete(server_url, fast, read_raw):
    request = {**STREAM, "max_output_tokens": 2}
    body, _ = read_raw("POST", server_url + RESPONSES, params=fast, json=request)
    reply = read_stream([body], "responses")
    assert (reply.text, reply.finish_reason, reply.complete) == ("Your order", "length", True)
    assert kinds(body)[-1] == "response.incomplete"


def test_the_non_streamed_call_returns_one_response_whose_text_is_the_answer(server_url, fast):
    response = httpx.post(server_url + RESPONSES, params=fast, json=ASK)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert (body["object"], body["status"]) == ("response", "completed")
    assert body["output"][0]["content"][0]["text"] == llm.RUNNING_ANSWER
    assert body["usage"]["output_tokens"] == 6


def test_the_non_streamed_call_under_max_output_tokens_is_incomplete(server_url, fast):
    body = httpx.post(server_url + RESPONSES, params=fast, json={**ASK, "max_output_tokens": 3})
    assert body.json()["status"] == "incomplete"
    assert body.json()["incomplete_details"] == {"reason": "max_output_tokens"}
    assert body.json()["output"][0]["content"][0]["text"] == "Your order ships"


@pytest.mark.parametrize(
    "item",
    [
        [{"role": "user", "content": llm.RUNNING_PROMPT}],
        [{"type": "message", "role": "user",
          "content": [{"type": "input_text", "text": llm.RUNNING_PROMPT}]}],
        [{"role": "developer", "content": "Be brief."},
         {"type": "function_call_output", "call_id": "c1", "output": "{}"},
         {"role": "user", "content": [{"type": "input_text", "text": "When will my order "},
                                      {"type": "input_text", "text": "arrive?"}]}],
    ],
    ids=["a message", "typed parts", "several items"],
)  # fmt: skip
def test_the_input_may_be_a_list_of_items_whose_last_user_message_is_the_prompt(
    server_url, fast, item
):
    body = httpx.post(server_url + RESPONSES, params=fast, json={**ASK, "input": item}).json()
    assert body["output"][0]["content"][0]["text"] == llm.RUNNING_ANSWER


# --------------------------------------------------------------------------- faults


def test_fail_after_tokens_ends_the_stream_with_response_failed(server_url, fast, read_raw):
    params = {**fast, "fail_after_tokens": 2}
    body, clean = read_raw("POST", server_url + RESPONSES, params=params, json=STREAM)
    reply = read_stream([body], "responses")
    assert clean and reply.text == "Your order" and not reply.complete
    assert reply.error.startswith("event 7 (response.failed): response failed: server_error:")
    assert kinds(body)[-1] == "response.failed"


def test_fail_after_tokens_gives_a_failed_non_streamed_response(server_url, fast):
    params = {**fast, "fail_after_tokens": 1}
    body = httpx.post(server_url + RESPONSES, params=params, json=ASK).json()
    assert (body["status"], body["error"]["code"]) == ("failed", "server_error")
    assert body["output"][0]["content"][0]["text"] == "Your"


@pytest.mark.parametrize("n_bytes", [0, 1, 500, 1500])
def test_drop_after_bytes_sends_exactly_n_body_bytes_and_no_final_event(
    server_url, fast, read_raw, n_bytes
):
    params = {**fast, "drop_after_bytes": n_bytes}
    body, clean = read_raw("POST", server_url + RESPONSES, params=params, json=STREAM)
    assert len(body) == n_bytes and not clean
    reply = read_stream([body], "responses")
    assert not reply.complete and reply.error is None
    assert llm.RUNNING_ANSWER.startswith(reply.text)


def test_heartbeat_ms_sends_ping_comments_during_prefill(server_url, read_raw):
    params = {"prefill_ms": "120", "per_token_ms": "1", "heartbeat_ms": "25"}
    body, _ = read_raw("POST", server_url + RESPONSES, params=params, json=STREAM)
    before_first_token = body.split(b"event: response.output_text.delta")[0]
    assert before_first_token.count(b": ping\n\n") == 4  # at 25, 50, 75, 100 ms (the token at 121)
    assert read_stream([body], "responses").text == llm.RUNNING_ANSWER


def test_stall_ms_pauses_after_half_of_the_tokens(server_url, arrivals):
    params = {"prefill_ms": "0", "per_token_ms": "5", "stall_ms": "1000", "heartbeat_ms": "200"}
    pieces = arrivals("POST", server_url + RESPONSES, params=params, json=STREAM)
    whole = b"".join(piece for _, piece in pieces)
    assert read_stream([whole], "responses").text == llm.RUNNING_ANSWER
    # Where the pause is, without a clock: a ping fills each 200 ms of silence, and the
    # only silence comes after 3 of the 6 deltas.
    lines = [line for line in whole.split(b"\n")
             if line == b": ping" or line == b"event: response.output_text.delta"]  # fmt: skip
    order = "".join("p" if line == b": ping" else "t" for line in lines)
    assert order.startswith("tttpppp") and order.endswith("pttt") and order.count("t") == 6, order
    delta_arrivals_s = [t for t, piece in pieces
                        for _ in range(piece.count(b"event: response.output_text.delta"))]  # fmt: skip
    assert delta_arrivals_s[3] >= 1.0


# --------------------------------------------------------------------------- counters


def test_a_client_that_leaves_a_responses_stream_stops_generation(fresh_server_url, wait_for_stats):
    # 500 ms per token: "one in flight, at most one after" leaves the client a second to
    # hang up and the server to notice, however busy the machine.
    params = {"prefill_ms": "0", "per_token_ms": "500"}
    received = 0
    request = {**STREAM, "input": LONG_PROMPT}
    with httpx.stream("POST", fresh_server_url + RESPONSES, params=params, json=request) as r:
        for piece in r.iter_raw():
            received += piece.count(b"event: response.output_text.delta")
            if received >= 3:
                break
    stats = wait_for_stats(fresh_server_url, lambda s: s["active_streams"] == 0)
    assert (stats["active_streams"], stats["disconnects"]) == (0, 1)
    assert stats["tokens_after_disconnect"] in (0, 1)
    assert stats["tokens_generated"] <= received + 2  # one in flight, at most one after


def test_stats_count_the_tokens_of_a_completed_and_of_a_failed_stream(
    fresh_server_url, get_stats, fast
):
    httpx.post(fresh_server_url + RESPONSES, params=fast, json=STREAM)
    httpx.post(fresh_server_url + RESPONSES, params={**fast, "fail_after_tokens": 2}, json=STREAM)
    stats = get_stats(fresh_server_url)
    assert (stats["streams_completed"], stats["tokens_generated"]) == (2, 8)


# --------------------------------------------------------------------------- bad requests

BAD_REQUESTS = [
    # (name, raw body, the parameter the error names)
    ("invalid json", b'{"model": ', None),
    ("missing model", json.dumps({"input": "hi"}).encode(), "model"),
    ("missing input", json.dumps({"model": "m"}).encode(), "input"),
    ("input a number", json.dumps({**ASK, "input": 5}).encode(), "input"),
    ("input an empty list", json.dumps({**ASK, "input": []}).encode(), "input"),
    ("input item not an object", json.dumps({**ASK, "input": ["hi"]}).encode(), "input[0]"),
    ("unknown role", json.dumps({**ASK, "input": [{"role": "robot", "content": "x"}]}).encode(),
     "input[0]"),
    ("content a number", json.dumps({**ASK, "input": [{"role": "user", "content": 5}]}).encode(),
     "input[0]"),
    ("part without a type",
     json.dumps({**ASK, "input": [{"role": "user", "content": [{"text": "x"}]}]}).encode(),
     "input[0]"),
    ("no user message",
     json.dumps({**ASK, "input": [{"role": "developer", "content": "x"}]}).encode(), "input"),
    ("instructions a number", json.dumps({**ASK, "instructions": 7}).encode(), "instructions"),
    ("stream a string", json.dumps({**ASK, "stream": "yes"}).encode(), "stream"),
    ("max_output_tokens zero", json.dumps({**ASK, "max_output_tokens": 0}).encode(),
     "max_output_tokens"),
    ("max_output_tokens a float", json.dumps({**ASK, "max_output_tokens": 2.5}).encode(),
     "max_output_tokens"),
    ("stream_options a list", json.dumps({**ASK, "stream_options": []}).encode(),
     "stream_options"),
    ("include_obfuscation a string",
     json.dumps({**ASK, "stream_options": {"include_obfuscation": "y"}}).encode(),
     "include_obfuscation"),
]  # fmt: skip


def _check_openai_error(response: httpx.Response, param: str | None) -> None:
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["message"]
    assert error["param"] == param


@pytest.mark.parametrize(("name", "body", "param"), BAD_REQUESTS, ids=[r[0] for r in BAD_REQUESTS])
def test_a_bad_request_gets_400_with_an_openai_style_error_naming_the_parameter(
    server_url, fast, capfd, name, body, param
):
    response = httpx.post(server_url + RESPONSES, params=fast, content=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    _check_openai_error(response, param)
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("value", ["-1", "two", "1.5", "\u00b2"])
def test_a_bad_fail_after_tokens_gets_400_naming_it(server_url, value):
    response = httpx.post(server_url + RESPONSES, params={"fail_after_tokens": value}, json=STREAM)
    assert response.status_code == 400
    _check_openai_error(response, "fail_after_tokens")


def test_the_wrong_method_gets_405_in_openai_style(server_url):
    response = httpx.get(server_url + RESPONSES)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_a_body_over_the_limit_gets_413(server_url):
    response = httpx.post(server_url + RESPONSES, content=b" " * (server.MAX_BODY_BYTES + 1))
    assert response.status_code == 413 and response.json()["error"]["message"]


QUERY_NAMES = ["prefill_ms", "per_token_ms", "drop_after_bytes", "stall_ms", "heartbeat_ms",
               "fail_after_tokens"]  # fmt: skip
QUERY_VALUES = st.one_of(
    st.text(max_size=8),
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["", " 1", "1e3", "0x10", "\u00b2", "\u0663", "-0", "1_000"]),
)


@pytest.fixture(scope="module")
def quick_server_url():
    """A server of this module that answers at once (for many requests in a row)."""
    with server.running(prefill_ms=0, per_token_ms=0) as url:
        yield url


@settings(max_examples=60, deadline=None)
@given(
    query=st.dictionaries(st.sampled_from(QUERY_NAMES), QUERY_VALUES, max_size=4),
    stream=st.booleans(),
)
@example(query={"fail_after_tokens": "\u0663"}, stream=True)
def test_any_query_parameters_get_a_2xx_or_a_json_4xx_never_a_500(quick_server_url, query, stream):
    request = httpx.Request(
        "POST", quick_server_url + RESPONSES, params=query, json={**ASK, "stream": stream}
    )
    with httpx.Client(timeout=30) as client:
        response = client.send(request, stream=True)  # the status comes before any token
        try:
            assert not response.is_server_error
            if response.status_code >= 400:
                response.read()
                _check_openai_error(response, response.json()["error"]["param"])
        finally:
            response.close()
