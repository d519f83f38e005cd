"""WS /v1/ws: the same answer over a WebSocket, for the SSE vs WebSockets comparison.

Messages are JSON: ``{"delta": t}`` per token, ``{"done": true, "finish_reason": ...}``
at the end, ``{"ping": true}`` heartbeats. Unlike SSE the client may talk back
while the answer streams: ``{"stop": true}`` ends it politely.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable, Iterator

from starlette.websockets import WebSocket, WebSocketDisconnect

from lessonkit.core import llm, network
from lessonkit.serve.checks import (
    BadRequest,
    Pace,
    Settings,
    check_unicode,
    json_field,
    positive_int,
    query_number,
    read_pace,
)
from lessonkit.serve.pacing import Pacer, Stats, TokenClock
from lessonkit.serve.state import ServerState, token_times


async def websocket_stream(websocket: WebSocket) -> None:
    """WS /v1/ws: the same answer as JSON messages {"delta": t} ... {"done": true}.

    The prompt comes from ``?prompt=`` or, if absent, from the first message the client
    sends (a JSON object {"prompt": ..., "max_tokens": ...} or plain text). While the
    answer streams the client may send {"stop": true}: the two-way talk SSE cannot do.
    """
    state: ServerState = websocket.app.state.lessonkit
    await websocket.accept()
    try:
        pace = read_pace(websocket.query_params, state.settings)
        prompt = websocket.query_params.get("prompt")
        max_tokens = query_number(websocket.query_params, "max_tokens", integer=True, low=1)
        if not prompt:
            prompt, max_tokens = _ws_prompt(await websocket.receive_text(), max_tokens)
    except BadRequest as exc:
        await websocket.send_json({"error": exc.message})
        await websocket.close(code=1008)
        return
    except WebSocketDisconnect:
        state.stats.disconnects += 1
        return
    answer = llm.answer_for(prompt, max_tokens=max_tokens)
    writes, tokens = _ws_plan(answer, pace, state.settings)
    pacer = state.pacer(asyncio.get_running_loop().time())  # the clock starts at the prompt
    listener = asyncio.ensure_future(_ws_listen(websocket, pacer))
    state.pacers.add(pacer)
    state.stats.active_streams += 1
    try:
        await _ws_play(websocket, state.stats, pacer, writes, tokens, pace.drop_after_bytes)
    except (WebSocketDisconnect, RuntimeError):  # the client went away while we were sending
        state.stats.disconnects += 1
    finally:
        state.stats.active_streams -= 1
        state.pacers.discard(pacer)
        listener.cancel()


PING = {"ping": True}


def _ws_plan(
    answer: llm.Answer, pace: Pace, settings: Settings
) -> tuple[Iterator[tuple[float, dict]], TokenClock]:
    """Return the timed WebSocket messages of an answer (faults applied) and its token clock."""
    times = token_times(len(answer.tokens), pace, settings)
    plan = [(t, {"delta": tok}) for t, tok in zip(times, answer.tokens, strict=True)]
    end_ms = times[-1] if times else pace.prefill_ms
    plan.append((end_ms, {"done": True, "finish_reason": answer.finish_reason}))
    after_ms = network.stall_point_ms(times)
    writes = iter(network.stall(plan, after_ms=after_ms, stall_ms=pace.stall_ms))
    if pace.heartbeat_ms:
        writes = network.with_heartbeats(writes, heartbeat_ms=pace.heartbeat_ms, ping=PING)
    made = network.stalled_times(times, after_ms=after_ms, stall_ms=pace.stall_ms)
    return writes, TokenClock(made)


async def _ws_play(
    websocket: WebSocket,
    stats: Stats,
    pacer: Pacer,
    writes: Iterable[tuple[float, dict]],
    tokens: TokenClock,
    drop_after_bytes: int | None,
) -> None:
    """Send each message when it is due; stop early if the client leaves or says stop."""
    sent_bytes = 0
    for at_ms, message in writes:
        if not await pacer.sleep_until(at_ms):
            if pacer.reason == "stop":  # the client asked to stop: end politely
                stats.streams_stopped += 1
                await websocket.send_json({"done": True, "finish_reason": "stopped"})
                await websocket.close()
            elif pacer.reason == "shutdown":
                await websocket.close(code=1001)  # 1001: going away
            else:
                stats.disconnects += 1
            return
        stats.tokens_generated += tokens.advance(at_ms)
        text = json.dumps(message, ensure_ascii=False)
        sent_bytes += len(text.encode())
        if drop_after_bytes is not None and sent_bytes > drop_after_bytes:
            # Messages are atomic on a WebSocket: stop before the one that crosses the
            # limit and close with 1011 (server error) instead of a done message.
            stats.streams_dropped += 1
            await websocket.close(code=1011)
            return
        await websocket.send_text(text)
    stats.streams_completed += 1
    await websocket.close()


def _ws_prompt(first_message: str, max_tokens: int | None) -> tuple[str, int | None]:
    """Return (prompt, max_tokens) from the client's first WebSocket message."""
    try:
        value = json.loads(first_message)
    except ValueError:
        return first_message, max_tokens
    if not isinstance(value, dict):
        return first_message, max_tokens
    check_unicode(value)
    prompt = json_field(value, "prompt", (str,), required=True)
    return prompt, positive_int(value, "max_tokens") or max_tokens


async def _ws_listen(websocket: WebSocket, pacer: Pacer) -> None:
    """Hang up the pacer when the client disconnects or sends {"stop": true}."""
    try:
        while True:
            message = await websocket.receive_text()
            with contextlib.suppress(ValueError):
                if json.loads(message) == {"stop": True}:
                    pacer.hang_up("stop")
                    return
    except (WebSocketDisconnect, RuntimeError):
        pacer.hang_up("gone")
