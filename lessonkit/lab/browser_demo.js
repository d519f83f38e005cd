// The two ways a web page reads a token stream, running in the learner's browser.
//
//   EventSource  GET only, no custom headers; the browser parses SSE for us.
//   fetch        any method and headers (an API key); we read response.body as a
//                stream of bytes and parse the events ourselves, like lessonkit.client.
//
// The page never calls the kernel's server itself: it listens on a Unix socket file
// next to the kernel, not on a network port, and on JupyterHub, Binder or a remote
// workstation the browser runs on another machine anyway. Every request goes to the
// Jupyter server that served this page, at
//
//     <the page's Jupyter base URL>lessonkit/demo/<socket name>/<path>
//
// and the course's route there (lessonkit/serve/jupyter_route.py) passes it on to that
// socket in this user's private folder, sending each piece of the answer back as it
// comes. The base URL comes from the page (PageConfig `baseUrl`): "/user/<name>/" on
// JupyterHub, "/" under a plain `jupyter lab`. Same origin as the page, so no CORS,
// and the Jupyter login cookie goes along; a POST also carries Jupyter's XSRF token.
//
// Each token is appended to `.lk-text` as its own <span class="lk-token">; `.lk-status`
// says "streaming", then "done" (or "error: ..."); `.lk-timing` shows arrival times.
// When a panel starts and ends, the page also POSTs what it received to the kernel's
// server (REPORT_PATH): a running cell cannot read widget messages, but that server
// runs in a thread of the kernel, so the cell after the demo can (BrowserStreamDemo.
// browser_report()).
//
// In the zero-install edition (JupyterLite, the kernel in this tab, model transport
// "widget") there is no Jupyter server and no socket: each request goes to the kernel as
// a widget message, the kernel runs the same app and sends each piece of the body back
// as a widget message the moment the app writes it (lessonkit/lab/in_page.py), and
// kernelFetch() below turns those into a Response whose body is a ReadableStream. The
// fetch panel reads it with the same code; the EventSource panel, since an EventSource
// cannot be given a stream, reads the same GET by EventSource's rules (EventBlocks).

const REPORT_PATH = "/lessonkit-demo/report";
const ROUTE = "lessonkit/demo"; // the same path is in lessonkit/serve/jupyter_route.py

/** Return the Jupyter server's base URL as the page knows it, ending in "/". */
export function jupyterBaseUrl(doc = document) {
  const withSlash = (path) => (path.endsWith("/") ? path : `${path}/`);
  const script = doc.getElementById("jupyter-config-data"); // JupyterLab 4, Notebook 7
  if (script) {
    try {
      const base = JSON.parse(script.textContent || "{}").baseUrl;
      if (base) return withSlash(base);
    } catch (error) {
      // an unreadable PageConfig: fall through to the classic Notebook's place
    }
  }
  const legacy = doc.body && doc.body.dataset.baseUrl; // classic Notebook 6
  return legacy ? withSlash(legacy) : "/";
}

/** Return the absolute URL of `path` on the demo server `socketName`, through the Jupyter server. */
export function demoUrl(socketName, path, doc = document, origin = window.location.origin) {
  return new URL(`${jupyterBaseUrl(doc)}${ROUTE}/${socketName}${path}`, origin).href;
}

/** Return the headers a POST to the Jupyter server needs: its XSRF token, from the _xsrf cookie. */
export function xsrfHeaders(doc = document) {
  const cookie = doc.cookie.split("; ").find((c) => c.startsWith("_xsrf="));
  return cookie ? { "X-XSRFToken": decodeURIComponent(cookie.slice("_xsrf=".length)) } : {};
}

/**
 * The events of an SSE body, fed as decoded text in whatever pieces the reads bring.
 *
 * feed(text) returns the data of every event the text completes (an event without
 * data lines, such as a ": ping" comment, gives nothing). Lines end at CRLF, LF or CR.
 * A CR that ends one piece ends its line at once; if the next piece starts with LF,
 * that LF is the second half of the same CRLF and is skipped (turning each piece's
 * "\r\n" into "\n" on its own would count such a pair as two line ends: a blank line
 * in the middle of an event).
 */
export class EventBlocks {
  constructor() {
    this.buffer = ""; // text after the last complete event, line ends already "\n"
    this.afterCR = false; // the last piece ended with CR
    this.searchFrom = 0; // "\n\n" cannot start before here: each character is scanned once
  }

  feed(text) {
    return this.feedEvents(text).map((event) => event.data);
  }

  /** Like feed(), with each event's type: [{type, data}] ("message" without an event: line). */
  feedEvents(text) {
    if (!text) return [];
    let piece = text;
    if (this.afterCR && piece.startsWith("\n")) piece = piece.slice(1);
    this.afterCR = piece.endsWith("\r");
    this.buffer += piece.replace(/\r\n?/g, "\n");
    const events = [];
    let end;
    // while, not if: one read may complete many events
    while ((end = this.buffer.indexOf("\n\n", this.searchFrom)) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      this.searchFrom = 0;
      const lines = block.split("\n");
      const data = lines
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      const named = lines.filter((line) => line.startsWith("event:")).pop();
      const type = named ? named.slice(6).replace(/^ /, "") : "message";
      if (data) events.push({ type: type || "message", data });
    }
    this.searchFrom = Math.max(0, this.buffer.length - 1);
    return events;
  }
}

// --- the zero-install edition: HTTP over widget messages ---------------------------------

const IN_PAGE_ORIGIN = "http://lessonkit.local"; // what the panels show as the server

/**
 * Return a fetch() that sends each request to the kernel as a widget message.
 *
 * Its Response's body is a ReadableStream fed by the kernel's messages, one chunk per
 * write of the app, as they come: the same stream a network would give.
 */
export function kernelFetcher(model) {
  const open = new Map(); // request id -> {resolve, reject, controller}
  let next = 0;
  const onMessage = (message, buffers) => {
    const entry = message && open.get(message.id);
    if (!entry) return;
    if (message.type === "response-start") {
      const body = new ReadableStream({
        start(controller) {
          entry.controller = controller;
        },
        cancel() {
          open.delete(message.id);
          model.send({ type: "abort", id: message.id });
        },
      });
      entry.resolve(new Response(body, { status: message.status, headers: message.headers }));
    } else if (message.type === "response-body" && entry.controller) {
      for (const buffer of buffers || []) {
        const view = buffer instanceof ArrayBuffer ? new Uint8Array(buffer)
          : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
        entry.controller.enqueue(view.slice()); // a copy: the message's buffer is not ours
      }
    } else if (message.type === "response-end") {
      open.delete(message.id);
      if (!entry.controller) entry.reject(new Error(message.error || "no response"));
      else if (message.error) entry.controller.error(new Error(message.error));
      else entry.controller.close();
    }
  };
  model.on("msg:custom", onMessage);
  const fetchInKernel = (path, init = {}) => new Promise((resolve, reject) => {
    const id = `r${(next += 1)}`;
    const entry = { resolve, reject, controller: null };
    open.set(id, entry);
    const body = init.body ? [new TextEncoder().encode(init.body)] : [];
    model.send({ type: "request", id, method: init.method || "GET", path, headers: init.headers || {} },
      undefined, body.map((b) => b.buffer));
    if (init.signal) {
      init.signal.addEventListener("abort", () => {
        if (!open.has(id)) return;
        open.delete(id);
        model.send({ type: "abort", id });
        const error = new DOMException("aborted", "AbortError");
        if (entry.controller) entry.controller.error(error);
        else reject(error);
      });
    }
  });
  fetchInKernel.dispose = () => model.off("msg:custom", onMessage);
  return fetchInKernel;
}

// How a panel reaches the server: through the Jupyter server's route (the full edition)
// or through the kernel's widget messages (the zero-install edition).
function network(model) {
  if (model.get("transport") === "widget") {
    const inKernel = kernelFetcher(model);
    return {
      inPage: true,
      url: (path) => `${IN_PAGE_ORIGIN}${path}`,
      fetch: (path, init) => inKernel(path, init),
      dispose: inKernel.dispose,
    };
  }
  return {
    inPage: false,
    url: (path) => demoUrl(model.get("socket_name"), path),
    fetch: (path, init) => fetch(demoUrl(model.get("socket_name"), path), init),
    dispose: () => {},
  };
}

function panel(el, kind, title, detail) {
  const box = document.createElement("div");
  box.className = `lk-browser-demo-panel lk-browser-demo-${kind}`;
  box.dataset.kind = kind;
  box.innerHTML = `<div class="lk-title"></div><div class="lk-detail"></div><div class="lk-url"></div>
    <div class="lk-text"></div><div class="lk-status">waiting</div><div class="lk-timing"></div>`;
  box.querySelector(".lk-title").textContent = title;
  box.querySelector(".lk-detail").textContent = detail;
  el.appendChild(box);
  return {
    box,
    url: box.querySelector(".lk-url"),
    text: box.querySelector(".lk-text"),
    status: box.querySelector(".lk-status"),
    timing: box.querySelector(".lk-timing"),
  };
}

// True if the kernel's server made this demo. A notebook reopened later shows the demo
// from its saved state, with a socket name that no longer belongs to it: nothing is streamed then.
async function serverKnowsDemo(model) {
  if (model.get("transport") === "widget") return true; // the kernel that drew it serves it
  if (!model.get("reports")) return true; // a demo made from a socket name: nothing to ask
  const query = `?demo=${encodeURIComponent(model.get("demo_id"))}`;
  const url = demoUrl(model.get("socket_name"), `${REPORT_PATH}${query}`);
  try {
    return (await fetch(url)).ok;
  } catch (error) {
    return false;
  }
}

function reportToKernel(model, report) {
  if (!model.get("reports")) return; // a demo made from a socket name has no report book
  if (model.get("transport") === "widget") {
    model.send({ type: "report", report: { demo: model.get("demo_id"), ...report } });
    return;
  }
  fetch(demoUrl(model.get("socket_name"), REPORT_PATH), {
    method: "POST",
    headers: { "Content-Type": "application/json", ...xsrfHeaders() },
    body: JSON.stringify({ demo: model.get("demo_id"), ...report }),
  }).catch((error) => console.warn("lessonkit browser demo: report not delivered", error));
}

// One run of one panel: shows each token as it arrives; syncs text and status to the
// widget model; reports the run to the kernel when it starts and when it ends.
function recorder(model, view, kind, run, url) {
  const start = performance.now();
  const times = [];
  let text = "";
  let reads = 0;
  const report = (status) => {
    view.status.textContent = status;
    view.box.dataset.times = times.join(","); // ms after the request, for the curious and tests
    view.box.dataset.reads = String(reads);
    model.set(`${kind}_text`, text);
    model.set(`${kind}_status`, status);
    model.save_changes();
    reportToKernel(model, { kind, run, status, text, times_ms: times, reads, url });
  };
  view.url.textContent = url;
  view.box.dataset.url = url;
  view.box.dataset.run = String(run);
  view.text.textContent = "";
  view.timing.textContent = "";
  model.set(`${kind}_url`, url);
  report("streaming");
  return {
    read() {
      reads += 1;
    },
    token(delta) {
      const span = document.createElement("span");
      span.className = "lk-token";
      span.textContent = delta;
      view.text.appendChild(span);
      text += delta;
      times.push(Math.round(performance.now() - start));
      view.box.dataset.times = times.join(",");
      view.timing.textContent = `${times.length} tokens, first at ${times[0]} ms, latest at ${times[times.length - 1]} ms`;
      model.set(`${kind}_text`, text);
      model.save_changes();
    },
    finish(status) {
      report(status);
    },
  };
}

async function httpError(response) {
  const status = response.status;
  if (status === 404) {
    let said = null; // the course's route explains its 404s in JSON; Jupyter's own 404 is a page
    try {
      said = (await response.json()).error;
    } catch (error) {
      // not the course's route
    }
    return said
      ? `error: HTTP 404: ${said}`
      : `error: HTTP 404: the Jupyter server has no ${ROUTE}/ route (install the course where it runs with pip install ., then restart it)`;
  }
  if (status >= 500) {
    return `error: HTTP ${status}: the kernel's server did not answer (press Stream again, or rerun the notebook)`;
  }
  return `error: HTTP ${status}`;
}

// The EventSource panel in the page's kernel: the same GET, read by EventSource's rules
// (an EventSource object can only open a URL, and there is none to open here).
function runEventSourceInKernel(net, model, view, run) {
  const path = `/v1/stream?prompt=${encodeURIComponent(model.get("prompt"))}`;
  const rec = recorder(model, view, "eventsource", run, net.url(path));
  const controller = new AbortController();
  (async () => {
    try {
      const response = await net.fetch(path, { headers: { Accept: "text/event-stream" }, signal: controller.signal });
      if (!response.ok) {
        rec.finish(`error: HTTP ${response.status}`);
        return;
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder("utf-8");
      const events = new EventBlocks();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const event of events.feedEvents(decoder.decode(value, { stream: true }))) {
          if (event.type === "done") {
            controller.abort(); // as source.close(): no reconnecting
            rec.finish("done");
            return;
          }
          if (event.type === "message") rec.token(JSON.parse(event.data).delta);
        }
      }
      rec.finish("error: the stream ended without its done event");
    } catch (error) {
      if (error.name !== "AbortError") rec.finish(`error: ${error.message}`);
    }
  })();
  return () => controller.abort();
}

function runEventSource(net, model, view, run) {
  if (net.inPage) return runEventSourceInKernel(net, model, view, run);
  const url = demoUrl(model.get("socket_name"), `/v1/stream?prompt=${encodeURIComponent(model.get("prompt"))}`);
  const rec = recorder(model, view, "eventsource", run, url);
  const source = new EventSource(url); // sends Accept: text/event-stream itself
  source.onmessage = (event) => rec.token(JSON.parse(event.data).delta);
  source.addEventListener("done", () => {
    source.close(); // otherwise EventSource reconnects when the server ends the response
    rec.finish("done");
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {
      rec.finish("error: connection failed (the kernel's server or the Jupyter server refused it)");
    }
  };
  return () => source.close();
}

async function runFetch(net, model, view, run, signal) {
  const url = net.url("/v1/chat/completions");
  const rec = recorder(model, view, "fetch", run, url);
  const headers = {
    "Content-Type": "application/json",
    // A pretend key, to show that fetch can send headers. Not `Authorization`: the
    // Jupyter server reads that header as a login token of its own.
    "X-Api-Key": "sk-demo-not-a-real-key",
    ...xsrfHeaders(),
  };
  // What an SSE client asks for. The course's route streams whatever it says; some
  // proxies (jupyter-server-proxy among them) stream only for exactly this value.
  const accept = model.get("fetch_accept");
  if (accept) headers.Accept = accept;
  try {
    const response = await net.fetch("/v1/chat/completions", {
      method: "POST",
      headers,
      body: JSON.stringify({
        model: "lessonkit-sim",
        stream: true,
        messages: [{ role: "user", content: model.get("prompt") }],
      }),
      signal,
    });
    if (!response.ok) {
      rec.finish(await httpError(response));
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder("utf-8");
    const events = new EventBlocks();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rec.read();
      // { stream: true }: a character cut between two reads waits for its other bytes
      for (const data of events.feed(decoder.decode(value, { stream: true }))) {
        if (data === "[DONE]") { // checked before JSON.parse: it is not JSON
          rec.finish("done");
          return;
        }
        const delta = JSON.parse(data).choices?.[0]?.delta?.content;
        if (delta) rec.token(delta);
      }
    }
    rec.finish("error: the stream ended without [DONE]");
  } catch (error) {
    if (error.name !== "AbortError") rec.finish(`error: ${error.message}`);
  }
}

function render({ model, el }) {
  el.classList.add("lk-browser-demo");
  const kinds = model.get("panels");
  const net = network(model);
  const views = {};
  if (kinds.includes("eventsource")) {
    views.eventsource = panel(el, "eventsource", "EventSource", "GET /v1/stream (no headers, no body)");
  }
  if (kinds.includes("fetch")) {
    const accept = model.get("fetch_accept") ? `Accept: ${model.get("fetch_accept")}` : "no Accept header";
    views.fetch = panel(el, "fetch", "fetch + ReadableStream", `POST /v1/chat/completions, stream: true, ${accept}`);
  }
  const button = document.createElement("button");
  button.className = "lk-browser-demo-run";
  button.textContent = "Stream again";
  el.appendChild(button);
  model.set("page_base_url", jupyterBaseUrl());
  model.save_changes();

  let run = 0;
  let stopEventSource = () => {};
  let controller = new AbortController();
  const start = async () => {
    stopEventSource();
    controller.abort();
    controller = new AbortController();
    run += 1;
    const thisRun = run;
    if (!(await serverKnowsDemo(model))) {
      for (const view of Object.values(views)) {
        view.status.textContent = "error: this demo's server is gone (the kernel restarted?): run the notebook's cells again";
      }
      return;
    }
    if (thisRun !== run) return; // a newer start came in meanwhile
    if (views.eventsource) stopEventSource = runEventSource(net, model, views.eventsource, run);
    if (views.fetch) runFetch(net, model, views.fetch, run, controller.signal);
  };
  button.addEventListener("click", () => {
    // If the kernel's server was stopped, the kernel starts it again and says so (below).
    model.send({ type: "ensure-server" });
    start();
  });
  const onMessage = (message) => {
    if (message && message.type === "server-restarted") start();
  };
  model.on("msg:custom", onMessage);
  if (model.get("socket_name")) start();
  return () => {
    model.off("msg:custom", onMessage);
    stopEventSource();
    controller.abort();
    net.dispose();
  };
}

export default { render };
