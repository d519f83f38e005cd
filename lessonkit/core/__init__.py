"""The pure core: bytes, events and time as plain values. No sockets, clocks or widgets.

May import: the standard library (but no clock, socket, thread or event loop:
``time``, ``datetime``, ``socket``, ``select``, ``threading``, ``asyncio``) and
other modules of ``lessonkit.core``. Never ``lessonkit.lab``, ``lessonkit.serve``
or ``lessonkit.grading``; they import the core, not the reverse
(tests/course/test_layers.py checks it).

    sse        the SSE wire format: SSEDecoder, Event, encode (the WHATWG algorithm)
    dialects   what one event means in the lesson, OpenAI (Chat Completions, Responses), Anthropic
               and EventSource formats
    client     read_stream(chunks, dialect) -> Reply, and the incremental StreamReader
    network    the network as data: cuts, drops, stalls, heartbeats, arrival times
    llm        a deterministic simulated LLM whose answers are plans of (at_ms, bytes) writes
    responses  the Responses API's typed events and Response object, as llm writes them
    wordbank   the sentences the simulated model's longer answers are made of
    timeline   time on the user's side: TTFT, total time, frame(t)
    practice   the lesson's practice stream and its reader, with the "now change it" switches
    framing    HTTP framing on the wire: the response head, chunked encoding, HTTP/2-3 frames
    render     a markdown renderer that does not flicker while text streams in
"""
