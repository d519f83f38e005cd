"""Matplotlib figures for the notebooks: fixed sizes, Okabe-Ito colours, labelled axes.

Every function returns a Figure and never calls plt.show().
"""

from __future__ import annotations
