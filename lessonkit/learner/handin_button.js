// The hand-in button (lessonkit/learner/handin_button.py), drawn in the learner's page.
//
// Pressed: save every open notebook through JupyterLab's own "Save All" (the app is
// exposed to the page by the course's settings), then ask the kernel to hand in, telling
// it whether the save happened. The kernel answers with the table and the zip; "Download"
// turns the zip into a file the browser saves (a Blob and an <a download>, no pop-up).
// The status line is a live region, so a screen reader hears each step.

function element(tag, props = {}) {
  const el = document.createElement(tag);
  Object.assign(el, props);
  return el;
}

async function saveAll() {
  const app = window.jupyterapp;
  if (!app || !app.commands || !app.commands.hasCommand("docmanager:save-all")) return false;
  try {
    await app.commands.execute("docmanager:save-all");
    return true;
  } catch (error) {
    return false;
  }
}

function download(name, base64) {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const url = URL.createObjectURL(new Blob([bytes], { type: "application/zip" }));
  const link = element("a", { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function render({ model, el }) {
  el.classList.add("lk-handin");
  const handIn = element("button", { type: "button", textContent: "Hand in my work" });
  const save = element("button", { type: "button", hidden: true });
  const status = element("p", { className: "lk-handin-status" });
  const report = element("pre", { hidden: true });
  status.setAttribute("role", "status");
  report.setAttribute("aria-label", "What was handed in");
  for (const button of [handIn, save]) button.dataset.lmSuppressShortcuts = "true";
  el.append(handIn, save, status, report);

  handIn.addEventListener("click", async () => {
    handIn.disabled = true;
    save.hidden = true;
    status.textContent = "Saving your open notebooks ...";
    const saved = await saveAll();
    status.textContent = saved
      ? "Saved. Running the public checks of each exercise ..."
      : "Could not save from this page: handing in what was last saved ...";
    model.send({ event: "hand-in", saved });
  });
  save.addEventListener("click", () => download(model.get("zip_name"), model.get("zip_base64")));

  const show = () => {
    status.textContent = model.get("status");
    const text = model.get("report");
    report.textContent = text;
    report.hidden = !text;
    const zip = model.get("zip_base64");
    save.hidden = !zip;
    save.textContent = `Download ${model.get("zip_name")}`;
    if (model.get("status") && !model.get("status").startsWith("Running")) handIn.disabled = false;
  };
  for (const name of ["status", "report", "zip_base64", "zip_name"]) model.on(`change:${name}`, show);
  show();
}

export default { render };
