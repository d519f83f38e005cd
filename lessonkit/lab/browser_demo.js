// The two ways a web page reads a token stream, running in the learner's browser.
//
//   EventSource  GET only, no custom headers; the browser parses SSE for us.
//   fetch        any method and headers (an API key); we read response.body as a
//                stream of bytes and parse the events ourselves, like lessonkit.client.
//
// Each token is appended to `.lk-text` as its own <span class="lk-token">; `.lk-status`
// says "streaming", then "done" (or "error: ..."); `.lk-timing` shows arrival times.

function panel(el, kind, title, detail) {
  const box = document.createElement("div");
  box.className = `lk-browser-demo-panel lk-browser-demo-${kind}`;
  box.innerHTML = `<div class="lk-title"></div><div class="lk-detail"></div>
    <div class="lk-text"></div><div class="lk-status">waiting</div><div class="lk-timing"></div>`;
  box.querySelector(".lk-title").textContent = title;
  box.querySelector(".lk-detail").textContent = detail;
  el.appendChild(box);
  return {
    text: box.querySelector(".lk-text"),
    status: box.querySelector(".lk-status"),
    timing: box.querySelector(".lk-timing"),
  };
}

function recorder(model, view, kind) {
  const start = performance.now();
  const times = [];
  let text = "";
  const sync = (status) => {
    view.status.textContent = status;
    model.set(`${kind}_text`, text);
    model.set(`${kind}_status`, status);
    model.save_changes();
  };
  view.text.textContent = "";
  view.timing.textContent = "";
  sync("streaming");
  return {
    token(delta) {
      const span = document.createElement("span");
      span.className = "lk-token";
      span.textContent = delta;
      view.text.appendChild(span);
      text += delta;
      times.push(Math.round(performance.now() - start));
      view.timing.textContent = `${times.length} tokens, first at ${times[0]} ms, latest at ${times[times.length - 1]} ms`;
      model.set(`${kind}_text`, text);
      model.save_changes();
    },
    finish(status) {
      sync(status);
    },
  };
}

function runEventSource(model, view) {
  const rec = recorder(model, view, "eventsource");
  const url = `${model.get("base_url")}/v1/stream?prompt=${encodeURIComponent(model.get("prompt"))}`;
  const source = new EventSource(url);
  source.onmessage = (event) => rec.token(JSON.parse(event.data).delta);
  source.addEventListener("done", () => {
    source.close(); // otherwise EventSource reconnects when the server ends the response
    rec.finish("done");
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) rec.finish("error: connection failed");
  };
  return () => source.close();
}

async function runFetch(model, view, signal) {
  const rec = recorder(model, view, "fetch");
  try {
    const response = await fetch(`${model.get("base_url")}/v1/chat/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: "Bearer sk-demo-not-a-real-key" },
      body: JSON.stringify({
        model: "lessonkit-sim",
        stream: true,
        messages: [{ role: "user", content: model.get("prompt") }],
      }),
      signal,
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const reader = response.body.getReader();
    const decoder = new TextDecoder("utf-8"); // {stream: true} below keeps half characters
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) { // while, not if: one read may hold many events
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).replace(/^ /, ""))
          .join("\n");
        if (!data) continue; // a comment such as ": ping"
        if (data === "[DONE]") { // checked before JSON.parse
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
  const views = {
    eventsource: panel(el, "eventsource", "EventSource", "GET /v1/stream (no headers, no body)"),
    fetch: panel(el, "fetch", "fetch + ReadableStream", "POST /v1/chat/completions, stream: true"),
  };
  const button = document.createElement("button");
  button.className = "lk-browser-demo-run";
  button.textContent = "Stream again";
  el.appendChild(button);
  let stopEventSource = () => {};
  let controller = new AbortController();
  const start = () => {
    stopEventSource();
    controller.abort();
    controller = new AbortController();
    stopEventSource = runEventSource(model, views.eventsource);
    runFetch(model, views.fetch, controller.signal);
  };
  button.addEventListener("click", start);
  if (model.get("base_url")) start();
  return () => {
    stopEventSource();
    controller.abort();
  };
}

export default { render };
