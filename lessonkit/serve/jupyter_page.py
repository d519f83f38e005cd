"""The course's page setting: JupyterLab's app object within reach of the hand-in button.

``submit()`` shows a button (lessonkit.learner.handin_button) that saves every open
notebook before it hands in: JupyterLab autosaves only every 120 s, and a learner's last
edits must not be left out. The page saves through JupyterLab's own "Save All" command,
which a widget can only reach through ``window.jupyterapp``. JupyterLab puts its app there
when the page config says ``exposeAppInBrowser`` (``LabApp.expose_app_in_browser``, off by
default), and this extension says so for the course's Jupyter server.

Why an extension: Jupyter Server reads its ``jupyter_server_config.d/`` folders for the
list of extensions only. Extensions load in the order of their names, so this one runs
after JupyterLab has written its page config, and changes that one key. ``jupyter server
extension disable lessonkit.serve.jupyter_page`` turns it off; the button then hands in
what was last saved, and says when each notebook was saved.
Enabled by ``etc/jupyter/jupyter_server_config.d/streaming-course.json``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PAGE_CONFIG"]

PAGE_CONFIG = {"exposeAppInBrowser": True}


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Return where Jupyter finds the extension (this module)."""
    return [{"module": "lessonkit.serve.jupyter_page"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    # JupyterLab ("jupyterlab" < "lessonkit...") has set its page config by now.
    serverapp.web_app.settings.setdefault("page_config_data", {}).update(PAGE_CONFIG)
    serverapp.log.info("lessonkit: the page's JupyterLab app is exposed for the hand-in button")
