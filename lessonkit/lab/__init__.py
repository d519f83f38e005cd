"""What the notebooks show: explorer state per lesson, views, widgets, plots.

May import: lessonkit.core, lessonkit.serve (the live demos start a local server),
ipywidgets, IPython, anywidget, matplotlib, httpx. Never lessonkit.grading.
The lesson modules are pure (state in, state out); views, widgets and plots draw them.

    lesson01       why streaming: decode loop, timeline, stop early, idle timeouts
    lesson02       SSE on the wire: field table, wire inspector, the five-step walkthrough
    lesson03       reading the stream: readers right and wrong, arrival stepper, UTF-8 cuts
    lesson04       practice: the drop explorer, predict then run
    lesson05       the real world: checks that run only at the end, strict JSON
    views          HTML and text views, one colour palette (Okabe-Ito)
    svg            the explorers' live figures as inline SVG (fast enough for a slider)
    binding        bind(controls, readouts, outputs) and the Explorer box with its text twin
    widgets        the explorers, each bind() over its lesson's functions; prediction pickers
    plots          matplotlib figures with fixed sizes (the notebooks' static figures)
    measure        live timings on a real clock, warmed up first
    browser_demo   EventSource and fetch running in the learner's own page
    envcheck       the start notebook's set-up check
"""
