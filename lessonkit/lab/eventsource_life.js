// Lesson 03's EventSource life cycle: one real EventSource in the learner's browser,
// watched from `new EventSource(url)` to CLOSED.
//
// The page only observes. watchEventSource() notes every event the browser fires and the
// readyState right after it, with the time since the object was made, and hands each
// note to the kernel as a widget message. The kernel (lessonkit/lab/eventsource_life.py)
// decides what they mean, with its pure story(), and sends back the rows this panel
// shows: so the meaning is written once, in Python, and tested without a browser.
//
// Like the browser demo (browser_demo.js) the page never calls the kernel's server
// itself: it opens the URL the Jupyter server that served this page routes to the
// kernel's socket, <Jupyter base URL>lessonkit/demo/<socket name>/v1/stream?...
// (lessonkit/serve/jupyter_route.py), so it works where the page runs on another machine.
//
// In the zero-install edition (model transport "widget") the kernel lives in this tab and
// answers widget messages, not URLs: an EventSource has nothing to open. The panel then
// shows a stored run, recorded in a real browser, for the choices the learner picks.

const ROUTE = "lessonkit/demo"; // the same path is in lessonkit/serve/jupyter_route.py

/** Return the URL of `path` on the demo server `socketName`, through the Jupyter server
 * (as browser_demo.js's demoUrl: the base URL is in JupyterLab's PageConfig). */
export function routeUrl(socketName, path, doc = document, origin = window.location.origin) {
  let base = "/";
  const script = doc.getElementById("jupyter-config-data");
  try {
    base = (script && JSON.parse(script.textContent || "{}").baseUrl) || base;
  } catch (error) {
    // an unreadable PageConfig: the server's root
  }
  if (!base.endsWith("/")) base += "/";
  return new URL(`${base}${ROUTE}/${socketName}${path}`, origin).href;
}

/**
 * Open an EventSource on `url` and call onSeen(note) for everything it does.
 *
 * A note is {at_ms, kind, ready_state, data, last_event_id}: kind is "created", "open",
 * "message", "done" (the server's last event), "error", "close" (close() was called: the
 * browser fires no event for it, so the page notes it itself) or "quiet" (quietMs after
 * CLOSED: still closed, a moment to count the server's requests). On "done" the page
 * calls close(), as a page that has the whole answer does. Returns {close, stop}:
 * close() as a learner's button does; stop() ends everything silently.
 */
export function watchEventSource(url, onSeen, { quietMs = 0 } = {}) {
  const started = performance.now();
  const source = new EventSource(url); // GET, Accept: text/event-stream, no other headers
  let quietTimer = null;
  const note = (kind, event) => onSeen({
    at_ms: Math.round(performance.now() - started),
    kind,
    ready_state: source.readyState,
    data: event && typeof event.data === "string" ? event.data : "",
    last_event_id: event && typeof event.lastEventId === "string" ? event.lastEventId : "",
  });
  const whenClosed = () => {
    if (quietMs > 0 && quietTimer === null) {
      quietTimer = setTimeout(() => note("quiet"), quietMs);
    }
  };
  const close = () => {
    if (source.readyState === EventSource.CLOSED) return;
    source.close(); // readyState becomes CLOSED at once, and no event is fired
    note("close");
    whenClosed();
  };
  note("created");
  source.addEventListener("open", (event) => note("open", event));
  source.addEventListener("message", (event) => note("message", event));
  source.addEventListener("done", (event) => {
    note("done", event);
    close();
  });
  source.addEventListener("error", (event) => {
    note("error", event);
    if (source.readyState === EventSource.CLOSED) whenClosed(); // failed for good
  });
  return {
    close,
    stop() {
      source.close();
      if (quietTimer !== null) clearTimeout(quietTimer);
    },
  };
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function choice(model, name, label, trait, options) {
  const wrap = element("label", `lk-life-choice lk-life-${name}`);
  wrap.append(element("span", "lk-life-choice-label", label));
  const select = element("select");
  for (const [value, text] of model.get(options)) {
    const option = element("option", "", text);
    option.value = value;
    select.append(option);
  }
  select.value = model.get(trait);
  select.addEventListener("change", () => {
    model.set(trait, select.value);
    model.save_changes();
  });
  model.on(`change:${trait}`, () => {
    select.value = model.get(trait);
  });
  wrap.append(select);
  return wrap;
}

function drawRows(model, table) {
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const row of model.get("rows")) {
    const tr = element("tr", `lk-life-row lk-life-row-${row.kind}`);
    tr.dataset.kind = row.kind;
    tr.dataset.readyState = String(row.ready_state);
    tr.dataset.atMs = String(row.at_ms);
    if (row.delay_ms !== null && row.delay_ms !== undefined) tr.dataset.delayMs = String(row.delay_ms);
    for (const key of ["at", "state", "event", "meaning"]) tr.append(element("td", `lk-life-${key}`, row[key]));
    body.append(tr);
  }
}

function render({ model, el }) {
  el.classList.add("lk-life");
  const live = model.get("transport") !== "widget";
  el.dataset.edition = live ? "live" : "stored";
  el.append(element("div", "lk-life-title", "EventSource, from open to closed"));
  const controls = element("div", "lk-life-controls");
  controls.append(
    choice(model, "ending", "The server's ending", "ending", "endings"),
    choice(model, "retry", "retry:", "retry", "retries"),
  );
  const open = element("button", "lk-life-open", "Open an EventSource");
  const closeButton = element("button", "lk-life-close", "close()");
  closeButton.disabled = true;
  if (live) controls.append(open, closeButton);
  el.append(controls);
  const note = element("div", "lk-life-note");
  const url = element("div", "lk-life-url");
  const table = element("table", "lk-life-rows");
  table.append(element("caption", "", "What the browser's EventSource did, ms after new EventSource(url)"));
  const head = element("tr");
  for (const name of ["time", "readyState", "event", "what it means"]) head.append(element("th", "", name));
  table.append(element("thead"), element("tbody"));
  table.tHead.append(head);
  const server = element("ul", "lk-life-server");
  const summary = element("div", "lk-life-summary");
  summary.setAttribute("aria-live", "polite");
  el.append(note, url, table, server, summary);

  const draw = () => {
    note.textContent = model.get("note");
    url.textContent = model.get("url");
    drawRows(model, table);
    server.replaceChildren(...model.get("server_lines").map((line) => element("li", "", line)));
    summary.textContent = model.get("summary").join(" ");
    el.dataset.status = model.get("status");
  };
  for (const name of ["note", "url", "rows", "server_lines", "summary", "status"]) {
    model.on(`change:${name}`, draw);
  }
  draw();

  let watching = null;
  let run = "";
  const stop = () => {
    if (watching) watching.stop();
    watching = null;
    closeButton.disabled = true;
  };
  open.addEventListener("click", () => {
    stop();
    // The choices go along: a trait change may still wait in ipywidgets' send buffer.
    // The kernel answers "go" with the run's path.
    model.send({ type: "open", ending: model.get("ending"), retry: model.get("retry") });
  });
  closeButton.addEventListener("click", () => {
    if (watching) watching.close();
  });
  const onMessage = (message) => {
    if (!message || message.type !== "go") return;
    stop();
    run = message.run;
    const target = routeUrl(model.get("socket_name"), message.path);
    model.set("url", target);
    model.save_changes();
    closeButton.disabled = false;
    watching = watchEventSource(target, (seen) => {
      if (seen.kind === "close" || (seen.kind === "error" && seen.ready_state === 2)) {
        closeButton.disabled = true;
      }
      model.send({ type: "seen", run, seen });
    }, { quietMs: message.quiet_ms });
  };
  model.on("msg:custom", onMessage);
  return () => {
    model.off("msg:custom", onMessage);
    stop();
  };
}

export default { render };
