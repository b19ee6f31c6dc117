"""The running table: one loop owns the state, drivers and the link only submit events.

- :mod:`controller.runtime.loop`: :class:`TableRuntime`, the queue, the effects' adapters,
  ticks, fault latching;
- :mod:`controller.runtime.watch`: pure fault watchers (drivers lost, jackpot link down);
- :mod:`controller.runtime.control`: the local control socket (JSON Lines);
- :mod:`controller.runtime.controlops`: what each control socket request does to the table;
- :mod:`controller.runtime.daemon`: ``table-controller run``, the daemon's start, run and stop;
- :mod:`controller.runtime.assembly`: the parts the daemon opens at start, from the config;
- :mod:`controller.runtime.readside`: what the web pages and the history read of the daemon.
"""
