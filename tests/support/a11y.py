"""Accessibility checks in the JupyterLab page: axe-core, themes, and the contrast of SVG text.

axe-core (npm, installed by tools/ensure_axe.sh into .venv/share/axe) runs in the page on
the notebook's outputs. It reports the contrast of HTML text, but not of text inside an
SVG (it marks that "incomplete"), so ``text_contrasts`` measures each SVG text itself, and
each other text axe left "incomplete": its painted colour against what is painted under it,
both read from the page's computed styles, blended with their opacities, and compared with
WCAG's contrast ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labdriver import REPO_ROOT

AXE_JS = REPO_ROOT / ".venv" / "share" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
MISSING_AXE_HELP = (
    f"{AXE_JS} is missing: the accessibility test injects axe-core (npm) into the page.\n"
    "  Install it with:   tools/ensure_axe.sh .venv/share/axe   (make browser does this)"
)
LIGHT, DARK, DARK_HIGH_CONTRAST = (
    "JupyterLab Light",
    "JupyterLab Dark",
    "JupyterLab Dark High Contrast",
)
# WCAG 2.2 A and AA, the rules the learner issue asks for.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
OUTPUTS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-OutputArea-output"
MIN_TEXT_CONTRAST = 4.5


def axe_source(path: Path = AXE_JS) -> str:
    """Return axe.min.js; fail the test with the command that installs it when it is missing."""
    import pytest

    if not path.exists():
        pytest.fail(MISSING_AXE_HELP, pytrace=False)
    return path.read_text(encoding="utf-8")


# True once JupyterLab shows `theme`: it names the theme on <body> as soon as the theme's CSS
# has loaded, but then hides the shell until the next frame and fades its splash screen
# out; axe and the contrast measure must see the page after that, as a learner does.
THEME_SHOWN_JS = """
(theme) => document.body.dataset.jpThemeName === theme
  && !document.getElementById('jupyterlab-splash')
  && !window.jupyterapp.shell.isHidden
"""


def set_theme(page: Any, theme: str, *, timeout_s: float = 60) -> None:
    """Switch JupyterLab to `theme` and return once the page shows it (no splash screen)."""
    page.evaluate(
        "(theme) => window.jupyterapp.commands.execute('apputils:change-theme', { theme })", theme
    )
    page.wait_for_function(THEME_SHOWN_JS, arg=theme, timeout=timeout_s * 1000)


@dataclass(frozen=True)
class Finding:
    """One axe rule that failed on some nodes: its id, impact, help text and where."""

    rule: str
    impact: str
    help: str
    targets: tuple[str, ...]
    summary: str

    def line(self) -> str:
        """Return the finding as one readable line (rule, impact, first places)."""
        places = ", ".join(self.targets[:3]) + (" ..." if len(self.targets) > 3 else "")
        return f"{self.rule} ({self.impact}, {len(self.targets)} nodes): {self.help} at {places}"


# axe judges only what is on screen: JupyterLab's <body> has zero height (its shell is
# positioned over it) and its notebook scrolls inside the shell, so axe would see every output
# as clipped. The scan gives the body the window's height, then scrolls each output to the middle
# and runs axe on it, merging the findings by rule.
RUN_AXE_JS = """
async ([source, selector, tags]) => {
  if (!window.axe) {
    const script = document.createElement('script');
    script.textContent = source;
    document.head.appendChild(script);
  }
  const style = document.createElement('style');
  style.textContent = 'html, body { min-height: 100vh; }';  // removed again when done
  document.head.appendChild(style);
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const merged = { violations: new Map(), incomplete: new Map() };
  const nodes = Array.from(document.querySelectorAll(selector));
  for (const node of nodes) {
    if (!node.isConnected || node.getClientRects().length === 0) continue;
    node.scrollIntoView({ block: 'center' });
    await frame();
    const result = await window.axe.run(node, { runOnly: { type: 'tag', values: tags },
                                               resultTypes: ['violations', 'incomplete'] });
    for (const kind of ['violations', 'incomplete']) {
      for (const v of result[kind]) {
        const known = merged[kind].get(v.id) || { rule: v.id, impact: v.impact || 'minor',
          help: v.help, targets: [], summary: (v.nodes[0] && v.nodes[0].failureSummary) || '' };
        for (const n of v.nodes) {
          const target = n.target.join(' ');
          if (!known.targets.includes(target)) known.targets.push(target);
        }
        merged[kind].set(v.id, known);
      }
    }
  }
  style.remove();
  return { violations: Array.from(merged.violations.values()),
           incomplete: Array.from(merged.incomplete.values()), scanned: nodes.length };
}
"""


def axe_findings(page: Any, selector: str = OUTPUTS) -> tuple[list[Finding], list[Finding]]:
    """Return (violations, incomplete) of axe's WCAG 2.2 A/AA rules on the elements `selector` finds."""
    raw = page.evaluate(RUN_AXE_JS, [axe_source(), selector, AXE_TAGS])

    def findings(items: list[dict]) -> list[Finding]:
        return [
            Finding(i["rule"], i["impact"], i["help"], tuple(i["targets"]), i["summary"])
            for i in items
        ]

    return findings(raw["violations"]), findings(raw["incomplete"])


def failing(violations: list[Finding]) -> list[Finding]:
    """Return the findings the course does not accept: serious, critical, or any contrast."""
    return [v for v in violations if v.impact in ("serious", "critical") or "contrast" in v.rule]


@dataclass(frozen=True)
class TextContrast:
    """One SVG text as painted: its words, its colour, what lies under it, and their ratio."""

    text: str
    colour: str
    background: str
    ratio: float


# For each <text> in an SVG under `selector`, and each element `extra` names (texts axe could
# not judge): scroll it into view, take the paint stack at the middle of its box
# (document.elementsFromPoint, topmost first), and blend from the bottom up: the first
# opaque layer under the text (an HTML background or an SVG fill), each translucent one above
# it, then the text's own colour (an SVG fill, or CSS color) with its opacity.
SVG_TEXT_CONTRAST_JS = """
([selector, extra]) => {
  const parse = (value) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(value || '');
    if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3]));
  const alphaOf = (el, base) => {
    let a = base;
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
      a *= Number(getComputedStyle(node).opacity);
    }
    return a;
  };
  const layerColour = (el) => {
    const style = getComputedStyle(el);
    if (el instanceof SVGElement) {
      if (!(el instanceof SVGGeometryElement) || el instanceof SVGLineElement) return null;
      const fill = parse(style.fill);
      if (!fill || style.fill === 'none') return null;
      return [fill[0], fill[1], fill[2], alphaOf(el, fill[3] * Number(style.fillOpacity))];
    }
    const bg = parse(style.backgroundColor);
    return bg && bg[3] > 0 ? [bg[0], bg[1], bg[2], alphaOf(el, bg[3])] : null;
  };
  const luminance = (rgb) => {
    const c = rgb.map((v) => v / 255).map((v) => v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const ratio = (a, b) => {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  const hex = (rgb) => '#' + rgb.map((v) => Math.round(v).toString(16).padStart(2, '0')).join('');
  const out = [];
  const texts = Array.from(document.querySelectorAll(`${selector} svg text`));
  for (const target of extra) texts.push(...document.querySelectorAll(target));
  for (const text of new Set(texts)) {
    if (!text.textContent.trim() || text.getClientRects().length === 0) continue;
    text.scrollIntoView({ block: 'center', inline: 'center' });
    const box = text.getBoundingClientRect();
    const stack = document.elementsFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    const layers = [];
    let below = false;
    for (const el of stack) {
      if (el === text || text.contains(el)) { below = true; continue; }
      if (!below) continue;
      const colour = layerColour(el);
      if (!colour) continue;
      layers.push(colour);
      if (colour[3] >= 1) break;
    }
    let background = [255, 255, 255];  // the canvas, if nothing opaque was found
    for (const layer of layers.reverse()) background = over(layer, background);
    const style = getComputedStyle(text);
    const svgText = text instanceof SVGElement;
    const fill = parse(svgText ? style.fill : style.color) || [0, 0, 0, 1];
    const alpha = fill[3] * (svgText ? Number(style.fillOpacity) : 1);
    const painted = over([fill[0], fill[1], fill[2], alphaOf(text, alpha)], background);
    out.push({ text: text.textContent.trim(), colour: hex(painted), background: hex(background),
               ratio: Math.round(ratio(painted, background) * 100) / 100 });
  }
  return out;
}
"""


def text_contrasts(
    page: Any, selector: str = OUTPUTS, *, also: tuple[str, ...] = ()
) -> list[TextContrast]:
    """Return the contrast of every visible SVG text in the outputs, and of each element `also` names.

    `also` takes the places axe reports as "incomplete" for contrast (CSS selectors).
    """
    raw = page.evaluate(SVG_TEXT_CONTRAST_JS, [selector, list(also)])
    return [TextContrast(r["text"], r["colour"], r["background"], r["ratio"]) for r in raw]
