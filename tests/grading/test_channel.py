"""The grader's end of the pipe to a child: replies are never lost to another channel."""

from __future__ import annotations

import os
import time

import pytest

from lessonkit.grading.channel import Channel, ChildGone


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_closing_a_channel_leaves_its_read_end_to_the_thread_reading_it():
    # Closed from under the reading thread, the number could go to the next channel's
    # pipe, and that thread would read the next channel's first reply.
    up_read, up_write = os.pipe()
    down_read, down_write = os.pipe()
    channel = Channel(up_read, down_write, stop=lambda: None)
    channel.close()
    assert _is_open(up_read) and not _is_open(down_write)
    os.close(up_write)  # the child's end goes away: the reading thread ends and closes its end
    deadline = time.monotonic() + 30
    while _is_open(up_read) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _is_open(up_read)
    os.close(down_read)


def test_every_channel_opened_after_another_closed_gets_its_own_reply():
    for _ in range(200):
        up_read, up_write = os.pipe()
        down_read, down_write = os.pipe()
        os.write(up_write, b'{"op": "ready"}\n')
        channel = Channel(up_read, down_write, stop=lambda w=up_write: os.close(w))
        assert channel.receive(30) == {"op": "ready"}
        channel.close()
        os.close(down_read)


def test_a_child_whose_pipe_ends_is_gone():
    up_read, up_write = os.pipe()
    down_read, down_write = os.pipe()
    os.close(up_write)
    channel = Channel(up_read, down_write, stop=lambda: None)
    with pytest.raises(ChildGone):
        channel.receive(30)
    os.close(down_read)
