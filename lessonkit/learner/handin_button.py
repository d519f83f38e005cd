"""The hand-in button ``submit()`` shows: save the open notebooks, hand in, offer the zip.

An anywidget (handin_button.js) with one button. Pressed, the page saves every open
notebook with unsaved edits -- through JupyterLab's own "Save All" command, which the
course's settings expose to the page (``LabApp.expose_app_in_browser``; JupyterLite's
``exposeAppInBrowser``) -- then sends one message to the kernel, saying whether it could
save. The kernel hands in (``hand_in``, given by ``submit()``) and sends back the table,
the receipt and the zip, which a second button downloads from the page with one click:
in JupyterLite that is how the work leaves the browser.

Nothing runs until the button is pressed, so nbval and ``lessonkit grade`` (no page,
nobody to press it) never hand in. ``submit()`` shows it in a twinned box
(``lessonkit.lab.binding.Twinned``): a page without the live widget says how to hand in.
The widget computes nothing itself: ``hand_in``,
``table`` and ``saved_warning`` are plain functions, tested headless.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

__all__ = ["HandInButton"]

_ESM = Path(__file__).with_name("handin_button.js")
_CSS = """
.lk-handin { color: var(--jp-ui-font-color1); font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1); margin: 4px 0; }
.lk-handin button { color: var(--jp-ui-font-color1); background: var(--jp-layout-color2);
  border: 1px solid var(--jp-border-color1); border-radius: 3px; padding: 3px 10px;
  margin-right: 8px; font: inherit; cursor: pointer; min-height: 24px; }
.lk-handin button:disabled { cursor: progress; color: var(--jp-ui-font-color2); }
.lk-handin button:focus-visible { outline: 2px solid var(--jp-brand-color1); outline-offset: 1px; }
.lk-handin pre { color: var(--jp-content-font-color1); background: var(--jp-layout-color1);
  border: 1px solid var(--jp-border-color1); padding: 6px; white-space: pre-wrap; }
.lk-handin-status { font-style: italic; }
"""


class HandInButton(anywidget.AnyWidget):
    """A button that hands in when pressed; shows the table and offers the zip."""

    _esm = _ESM
    _css = _CSS
    status = traitlets.Unicode("").tag(sync=True)  # what is happening, for a screen reader too
    report = traitlets.Unicode("").tag(sync=True)  # the table, the receipt and any warning
    zip_name = traitlets.Unicode("").tag(sync=True)
    zip_base64 = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        hand_in: Callable[[], Any],
        table: Callable[[Any], str],
        saved_warning: Callable[[Any], str],
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._hand_in, self._table, self._saved_warning = hand_in, table, saved_warning
        self.on_msg(self._on_message)

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("event") != "hand-in":
            return
        self.report, self.zip_base64 = "", ""
        self.status = "Running the public checks of each exercise ..."
        try:
            handed = self._hand_in()
        except Exception as problem:  # the learner sees it in the page, the kernel goes on
            self.status = f"Could not hand in: {problem}"
            return
        text = self._table(handed)
        if not content.get("saved"):
            text += "\n\n" + self._saved_warning(handed)
        self.report = text
        self.zip_name = handed.zip_path.name
        self.zip_base64 = base64.b64encode(handed.data).decode("ascii")
        self.status = f"Handed in. Receipt: {handed.receipt}"
