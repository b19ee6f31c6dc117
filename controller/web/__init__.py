"""The table's local web pages: the technicians' diagnostics page and the dealer display.

:mod:`.auth` (password hashes, login throttle, sessions, CSRF), :mod:`.views` (pure: what
the pages show, built from the runtime's public status; ``/metrics``), :mod:`.server` (the
HTTP server, on the daemon's ``[web]`` address). docs/web.md describes the pages.
"""
