"""What the notebooks show: explorer state per lesson, views, widgets, plots.

May import: lessonkit.core, lessonkit.serve (the live demos start a local server),
ipywidgets, IPython, anywidget, matplotlib (inside plots' functions only; plots.show
draws in a helper process), httpx. Never lessonkit.grading. Inside lab/ imports go one way
(tests/lab/test_lab_layers.py): the lesson modules hold each explorer's state as a pure
readouts function and draw it with views and svg, which import no lesson module; binding
and controls know no lesson; widgets binds controls to the lesson modules.

    lesson01       why streaming: decode loop, timeline, stop early, idle timeouts
    lesson02       SSE on the wire: field table, wire inspector, the five-step walkthrough
    lesson03       reading the stream: readers right and wrong, arrival stepper, UTF-8 cuts
    lesson04       practice: the drop explorer, predict then run
    lesson05       the real world: the flicker demo, checks that run only at the end
    views          HTML and text views; colours from JupyterLab's theme variables
    svg            the explorers' live figures as inline SVG (fast enough for a slider)
    controls       the course's own slider and number box: named, keyboard, Play
    binding        bind(controls, readouts, outputs) and the twinned Explorer box
    widgets        the explorers, each bind() over its lesson's readouts; prediction pickers
    plots          matplotlib figures and their text alternatives (the static figures),
                   drawn by a helper process: the kernel keeps the PNG, not matplotlib
    measure        live timings on a real clock, warmed up first
    browser_demo   EventSource and fetch running in the learner's own page
    demo_reports   what the page reports back from the browser demo: PanelReport, BrowserReport
    eventsource_life  one EventSource from open to closed in the learner's page: story()
                   turns what the page and the server saw into the panel's rows
    in_page        HTTP as widget messages: the browser kernel's network for the demo
    envcheck       the start notebook's set-up check
"""
