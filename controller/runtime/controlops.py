"""The control socket's requests: what each op asks of the running table.

:func:`handle_request` is the handler :class:`~controller.runtime.daemon.TableDaemon` gives
its :class:`~controller.runtime.control.ControlServer`; the ops and their answers are listed
in :mod:`controller.runtime.control` (``status``, ``wager``, ``input``, ``press``,
``rotate-journal``). A request never reaches the table's state: a wager becomes an event on
the runtime's queue, a press a mock pin's change (only with ``[gpio] pin_factory =
"mock"``), a rotation the runtime's own request.
"""

from __future__ import annotations

import time
from typing import Any

from controller import build
from controller.runtime.loop import effect_dict
from controller.table import events as ev


def handle_request(daemon: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Answer one request (``request["op"]``, checked by :func:`.control.answer`) for
    ``daemon``: reads its ``status()`` and ``health()``, submits a wager to its runtime and
    waits for the table's answer, presses mock inputs, or asks for a journal rotation."""
    op = request["op"]
    if op == "status":
        return {
            "ok": True,
            "table": daemon.config.table_id,
            "version": build.version(),
            "build": build.software(),
            "config_checksum": daemon.config.checksum,
            "status": daemon.status(),  # with the meters and why the link is down
            "feed": daemon.runtime.recent(),
            "health": daemon.health(),
        }
    if op == "wager":
        spot, circle, amount = request.get("spot"), request.get("circle"), request.get("amount")
        for name, value in (("spot", spot), ("amount", amount)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return {"ok": False, "error": f"wager: {name} must be a whole number >= 0"}
        if not isinstance(circle, str):
            return {"ok": False, "error": 'wager: circle must be text, e.g. "main"'}
        step = daemon.submit_wait(ev.WagerAmount(spot, circle, amount))
        return {
            "ok": True,
            "accepted": step.accepted,
            "effects": [effect_dict(e, None) for e in step.effects],
        }
    if op in ("input", "press"):
        name = request.get("name")
        if not isinstance(name, str):
            return {"ok": False, "error": f'{op}: name must be text, e.g. "console.next"'}
        if daemon.config.gpio.pin_factory != "mock":
            return {
                "ok": False,
                "error": f'{op} refused: simulated inputs need [gpio] pin_factory = "mock"; '
                "this table has real pins",
            }
        if op == "input":
            active = request.get("active")
            if not isinstance(active, bool):
                return {"ok": False, "error": "input: active must be true or false"}
            daemon.gpio.simulate(name, active)
            return {"ok": True}
        # held, then released, each longer than the debounce time: a shorter gap between
        # two presses is bounce, and the driver rightly counts it as one press
        hold_s = (daemon.config.gpio.pin_map.button_debounce_ms + 15) / 1000
        daemon.gpio.simulate(name, True)
        time.sleep(hold_s)
        daemon.gpio.simulate(name, False)
        time.sleep(hold_s)
        return {"ok": True}
    if op == "rotate-journal":
        by = request.get("by")
        if not isinstance(by, str):
            return {
                "ok": False,
                "error": 'rotate-journal: by must be text: who asks, e.g. "j.smith"',
            }
        return daemon.rotate_journal(by)
    return {
        "ok": False,
        "error": f"unknown op {op!r}; ops are status, wager, input, press, rotate-journal",
    }
