"""lessonkit: the code behind the token-streaming course.

The pure core knows no sockets, clocks or widgets:

    sse            the SSE wire format: SSEDecoder, Event, encode
    dialects       what one event means in the lesson, OpenAI and Anthropic formats
    client         read_stream(chunks, dialect) -> Reply
    network        the network as data: cuts, drops and arrival times
    llm            a deterministic simulated LLM that writes (at_ms, bytes)
    timeline       time to first token, total time and frame(t) for the animations
    explore        the state behind each explorer widget (state in, state out)
    render         a markdown renderer that does not flicker while text streams in
    checker        a learner's function against the reference -> findings
    exercises_ref  the reference answers the checker compares with

The edges import the core, never the reverse:

    plots, widgets          matplotlib figures and thin ipywidgets front-ends
    browser_demo            EventSource and fetch running in the learner's page
    server, proxy           a real HTTP streaming server on 127.0.0.1, a buffering proxy
    rawhttp                 a plain-socket HTTP client and timed requests for the lessons
    grading, grade, assign  check() in notebooks, headless grading (grade_child runs the
                            learner's code), exercise generation
    envcheck, cli           the start notebook's set-up check; the `lessonkit` command
"""

__version__ = "0.1.0"
