// The lifeline of a twinned box (lessonkit/lab/binding.py): an invisible view that marks
// its box .lk-stale once the kernel behind it is gone, so the box's twin ("Run this cell
// ...") takes its place (views.TWIN_CSS) instead of a widget that no longer answers.
//
// ipywidgets itself marks its views .jupyter-widgets-disconnected when the kernel
// restarts. A kernel that is shut down (an idle kernel culled on a hub, "Shut Down
// Kernel") or replaced by another one (a new kernel for the same notebook) leaves the
// views looking alive, so this watches the notebook's kernel through the widget manager,
// the one JupyterLab and JupyterLite give every widget. Elsewhere (no such manager) it
// does nothing.

const GONE = new Set(["dead", "restarting", "autorestarting", "terminating"]);

function render({ model, el }) {
  el.classList.add("lk-lifeline");
  el.setAttribute("aria-hidden", "true");
  const manager = model.widget_manager;
  const session = manager && manager.context && manager.context.sessionContext;
  const kernel = manager && manager.kernel;
  if (!session || !kernel) return undefined;
  const kernelId = kernel.id;
  const markStale = () => {
    const box = el.closest(".lk-twinned");
    if (box) box.classList.add("lk-stale");
  };
  const onStatus = (_, status) => {
    if (GONE.has(status)) markStale();
  };
  const onKernel = (_, change) => {
    if (!change.newValue || change.newValue.id !== kernelId) markStale();
  };
  const onDisposed = () => markStale();
  kernel.statusChanged.connect(onStatus);
  kernel.disposed.connect(onDisposed);
  session.kernelChanged.connect(onKernel);
  if (GONE.has(kernel.status) || kernel.isDisposed) markStale();
  return () => {
    kernel.statusChanged.disconnect(onStatus);
    kernel.disposed.disconnect(onDisposed);
    session.kernelChanged.disconnect(onKernel);
  };
}

export default { render };
