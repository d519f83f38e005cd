"""The course's culling of idle kernels: a Jupyter server extension that only sets defaults.

Each notebook a learner opens keeps a kernel until it is shut down; after lessons
00-05 that is six kernels, most of them idle (bench/bench_class.py measures it). Jupyter
Server can cull idle kernels, but only when told to, and by default never a kernel
whose tab is still open (``cull_connected`` is False). The course turns both on:

    CULLING   an idle kernel (no code run, no widget moved) is stopped after 20
              minutes, also with its tab open; a busy one never is

A learner who comes back to a culled notebook sees the explorers ask to run the cell
again. Settings given to the server win over these defaults (a hub's own
``c.MappingKernelManager.cull_idle_timeout = ...``, or the command line), and
``jupyter server extension disable lessonkit.serve.jupyter_culling`` turns them off.

Why an extension: Jupyter Server reads its ``jupyter_server_config.d/`` folders for the
list of extensions only; any other setting there is ignored. Enabled by
``etc/jupyter/jupyter_server_config.d/streaming-course.json``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CULLING", "apply_defaults"]

CULLING = {
    "cull_idle_timeout": 20 * 60,  # seconds without activity before an idle kernel stops
    "cull_interval": 60,  # how often (s) the server looks for idle kernels
    "cull_connected": True,  # also when its notebook's tab is still open
    "cull_busy": False,  # never a kernel that is running code
}
# The kernel manager's config sections, most general first (a subclass's section wins).
SECTIONS = ("MappingKernelManager", "AsyncMappingKernelManager")


def apply_defaults(config: Any) -> dict[str, Any]:
    """Put CULLING into a traitlets Config where no section sets the key; return what was set."""
    already = {key for section in SECTIONS if section in config for key in config[section]}
    chosen = {key: value for key, value in CULLING.items() if key not in already}
    for key, value in chosen.items():
        config.MappingKernelManager[key] = value
    return chosen


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Return where Jupyter finds the extension (this module)."""
    return [{"module": "lessonkit.serve.jupyter_culling"}]


def _link_jupyter_server_extension(serverapp: Any) -> None:
    # Linking comes before the server makes its kernel manager, which reads this config.
    chosen = apply_defaults(serverapp.config)
    serverapp.log.info("lessonkit: idle kernels culled with the course's settings %s", chosen)


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Nothing to add at load time: the defaults were set when the extension was linked."""
