"""The running table: one loop owns the state, drivers and the link only submit events.

- :mod:`controller.runtime.loop`: :class:`TableRuntime`, the queue, the effects' adapters,
  ticks, fault latching;
- :mod:`controller.runtime.watch`: pure fault watchers (drivers lost, jackpot link down);
- :mod:`controller.runtime.control`: the local control socket (JSON Lines);
- :mod:`controller.runtime.daemon`: ``table-controller run``, wiring it all from the config.
"""
