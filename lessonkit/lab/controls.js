// The course's own controls (lessonkit/lab/controls.py), drawn in the learner's page.
//
// A slider is a native <input type="range">, so the browser gives it the keyboard (arrow
// keys, Home, End, Page Up, Page Down) and a screen reader its name (the <label>) and its
// value (aria-valuetext, "400 ms"). Beside it a number box takes a typed value; a Play
// button, when the slider has one, steps the value in the page at play_interval_ms. A typed
// value outside the range is moved into it and the status line under the control says so.
// data-lm-suppress-shortcuts, on each input and button (JupyterLab reads it on the element
// that has the focus), keeps the notebook's shortcuts (arrows move between cells) away from
// keys pressed here.

// Each control gets an id of its own for its <label for=...>: two with one id would be read
// with each other's label (anywidget may load this module once per widget, so no counter).
const newId = (kind) => `lk-${kind}-${crypto.getRandomValues(new Uint32Array(2)).join("-")}`;

function element(tag, props = {}) {
  const el = document.createElement(tag);
  Object.assign(el, props);
  return el;
}

function valueText(model, value) {
  const unit = model.get("unit");
  return unit ? `${value} ${unit}` : String(value);
}

// Return [value to use, message]: a typed text as a number inside min..max (whole for a
// slider), and what was changed to get there ("" when nothing was).
export function fitTyped(text, { min, max, whole }) {
  const typed = String(text).trim();
  const number = Number(typed);
  if (typed === "") return [null, `Type a number from ${min} to ${max}.`];
  if (!Number.isFinite(number)) {
    return [null, `"${typed}" is not a number: type one from ${min} to ${max}.`];
  }
  let value = whole ? Math.round(number) : number;
  let message = value !== number ? `${typed} is not a whole number: set to ${value}.` : "";
  if (value < min) {
    [value, message] = [min, `${typed} is below the smallest value, ${min}: set to ${min}.`];
  } else if (value > max) {
    [value, message] = [max, `${typed} is above the largest value, ${max}: set to ${max}.`];
  }
  return [value, message];
}

function renderControl({ model, el }) {
  const slider = model.get("kind") === "slider";
  el.classList.add("lk-control", slider ? "lk-slider" : "lk-number-box");
  const id = newId(slider ? "slider" : "number");
  const label = element("label", { htmlFor: id });
  const range = slider ? element("input", { type: "range", id }) : null;
  const number = element("input", { type: "number", id: slider ? `${id}-typed` : id });
  const play = slider && model.get("play_interval_ms") > 0 ? element("button", { type: "button" }) : null;
  const message = element("span", { className: "lk-control-message" });
  message.setAttribute("role", "status"); // announced politely when it changes
  number.classList.add("lk-control-typed");
  if (play) play.classList.add("lk-control-play");
  for (const part of [range, number, play].filter(Boolean)) part.dataset.lmSuppressShortcuts = "true";
  el.append(...[label, play, range, number, message].filter(Boolean));

  let timer = null;
  const name = () => model.get("description");
  const limits = () => ({ min: model.get("min"), max: model.get("max"), whole: slider });
  const show = () => {
    label.textContent = name();
    for (const input of [range, number].filter(Boolean)) {
      input.min = String(model.get("min"));
      input.max = String(model.get("max"));
      input.step = String(model.get("step"));
      if (document.activeElement !== input || input === range) input.value = String(model.get("value"));
    }
    if (range) {
      range.setAttribute("aria-valuetext", valueText(model, model.get("value")));
      number.setAttribute("aria-label", `${name()}, typed`);
    }
    if (play) {
      play.textContent = timer ? "⏸ Pause" : "▶ Play"; // the visible words begin its name
      play.setAttribute("aria-label", `${timer ? "Pause" : "Play"} ${name()}`);
    }
  };
  const set = (value) => {
    model.set("value", value);
    model.save_changes();
    show();
  };
  const typed = () => {
    const [value, note] = fitTyped(number.value, limits());
    message.textContent = note;
    if (value === null) {
      number.value = String(model.get("value"));
      return;
    }
    set(value);
    number.value = String(value);
  };
  const stop = () => {
    clearInterval(timer);
    timer = null;
    show();
  };
  const start = () => {
    // At the end already: playing starts again from the beginning.
    if (model.get("value") >= model.get("max")) set(model.get("min"));
    timer = setInterval(() => {
      const next = Math.min(model.get("value") + model.get("step"), model.get("max"));
      set(next);
      if (next >= model.get("max")) stop();
    }, model.get("play_interval_ms"));
    show();
  };

  if (range) {
    range.addEventListener("input", () => {
      message.textContent = "";
      set(Number(range.value));
    });
  }
  number.addEventListener("change", typed); // leaving the box after typing
  number.addEventListener("keydown", (event) => {
    if (event.key === "Enter") typed();
  });
  if (play) play.addEventListener("click", () => (timer ? stop() : start()));
  model.on("change:value change:min change:max change:step change:description change:unit", show);
  show();
  return () => {
    clearInterval(timer);
    model.off("change:value change:min change:max change:step change:description change:unit", show);
  };
}

export default { render: renderControl };
