"""lessonkit: the code behind the token-streaming course.

The pure core knows no sockets, clocks or widgets:

    sse       the SSE wire format: SSEDecoder, Event, encode
    dialects  what one event means in the lesson, OpenAI and Anthropic formats
    client    read_stream(chunks, dialect) -> Reply
    network   the network as data: cuts, drops and arrival times
    llm       a deterministic simulated LLM that writes (at_ms, bytes)
    timeline  time to first token, total time and frame(t) for the animations

The edges import the core, never the reverse:

    plots, widgets, explore   figures and thin ipywidgets front-ends
    server, proxy             a real HTTP streaming server on 127.0.0.1
    grading, grade, assign    exercise checks and headless grading
    cli                       the `lessonkit` command
"""

__version__ = "0.1.0"
