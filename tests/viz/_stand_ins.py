"""Stand-ins for the render worker (imported by spawned worker processes: keep imports light)."""

import time


def stuck_after_ready(conn, name, width, height):
    """Stands in for a livelocked renderer: starts, then never answers a render."""
    conn.send(("ready", 0.0))
    conn.recv()
    time.sleep(3600)


def stuck_at_start(conn, name, width, height):
    time.sleep(3600)


def crashes(conn, name, width, height):
    import os

    os._exit(3)  # as a driver abort would
