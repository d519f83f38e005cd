"""The course's culling defaults: idle kernels stop, also with their tab open; a hub's own settings win."""

from __future__ import annotations

import httpx
import pytest
from jupyterserver import jupyter_server
from labdriver import wait_for
from traitlets.config import Config
from websockets.sync.client import connect

from lessonkit.serve.jupyter_culling import CULLING, apply_defaults

pytestmark = pytest.mark.server


def test_the_course_culls_idle_kernels_with_their_tab_open_but_never_a_busy_one():
    assert CULLING["cull_idle_timeout"] > 0 and CULLING["cull_interval"] > 0
    assert CULLING["cull_connected"] is True and CULLING["cull_busy"] is False


def test_an_empty_config_gets_every_course_default():
    config = Config()
    assert apply_defaults(config) == CULLING
    assert dict(config.MappingKernelManager) == CULLING


@pytest.mark.parametrize("section", ["MappingKernelManager", "AsyncMappingKernelManager"])
def test_a_setting_the_server_already_has_wins_over_the_course_default(section):
    config = Config()
    config[section].cull_idle_timeout = 3600
    config[section].cull_connected = False
    chosen = apply_defaults(config)
    assert set(chosen) == {"cull_interval", "cull_busy"}
    assert config[section].cull_idle_timeout == 3600 and config[section].cull_connected is False


def test_a_real_server_culls_an_idle_kernel_whose_tab_stays_open(tmp_path):
    # The server reads this environment's settings: the culling extension is enabled there.
    # Only the times are shortened, as bench/bench_class.py does.
    shorter = (
        "--MappingKernelManager.cull_idle_timeout=3",
        "--MappingKernelManager.cull_interval=1",
    )
    with jupyter_server(tmp_path, *shorter) as server:
        kernels = f"{server.url}/api/kernels"
        kernel = httpx.post(kernels, headers=server.auth, json={"name": "python3"}, timeout=60)
        kernel_id = kernel.json()["id"]
        channels = f"{server.url.replace('http', 'ws', 1)}/api/kernels/{kernel_id}/channels"
        with connect(channels, additional_headers=server.auth):  # the notebook's tab, open
            assert (
                httpx.get(f"{kernels}/{kernel_id}", headers=server.auth).json()["connections"] == 1
            )
            wait_for(
                lambda: httpx.get(f"{kernels}/{kernel_id}", headers=server.auth).status_code == 404,
                timeout_s=60,
                what="the idle kernel to be culled",
            )
        assert "Culling kernels even with connected clients" in server.log()
