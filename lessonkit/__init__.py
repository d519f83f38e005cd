"""lessonkit: the code behind the token-streaming course, in four layers.

    core/      the pure core: bytes, events and time as plain values (no sockets,
               clocks or widgets): sse, dialects, client, network, llm, timeline,
               practice, framing, render
    lab/       what the notebooks show: one module of explorer state per lesson
               (lesson01 ... lesson05), views (HTML, one palette), widgets, plots,
               browser_demo, envcheck
    serve/     the edge with sockets and clocks: the local streaming server (app,
               checks, state, pacing, websocket, background, cli), proxy, rawhttp,
               demo_socket, and the Jupyter server extensions jupyter_route and
               jupyter_culling
    grading/   graded exercises: check() in the notebook, one module per exercise
               (ex1_response_times ... ex6_parse_sse), the engine, `lessonkit grade`

The core imports nothing from the other three; they import the core
(tests/course/test_layers.py checks it). Each layer's __init__ says what it may import.
``lessonkit.sse``, ``lessonkit.client`` and ``lessonkit.server`` are kept as the
course contract names them; their code lives in core/ and serve/.
"""

__version__ = "0.1.0"
