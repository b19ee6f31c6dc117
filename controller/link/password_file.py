"""Who may read the broker password file (issue 26).

Both products read their broker password from a file: the table from ``[mqtt] password_file``,
the jackpot controller from ``--password-file``. The installer lays it out 0640, owner root,
group the service's user (``scripts/install-pi.sh``, ``hardware/install.md``): the service
reads it, nobody else does, and only root changes it. A file others may read (0644 is what a
new file gets from a shell or an editor) or the group or others may write is refused by
``check-config`` and when the daemon starts, with the command that puts it right.
"""

from __future__ import annotations

import os
import stat
from os import PathLike

#: The mode the installer gives the password file (owner root, group the service's user).
INSTALLED_MODE = 0o640


def password_mode_problem(path: str | PathLike[str], service: str) -> str | None:
    """Why the password file at ``path`` is open to others, or None: readable by others
    (o+r), or writable by its group or others. 0640 and 0600 pass. ``service``: the
    service's user and group (``table-controller``, ``jackpot-controller``), for the hint.
    Raises OSError if the file cannot be looked at."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    loose = [
        what
        for bit, what in (
            (stat.S_IROTH, "readable by others"),
            (stat.S_IWGRP, "writable by its group"),
            (stat.S_IWOTH, "writable by others"),
        )
        if mode & bit
    ]
    if not loose:
        return None
    return (
        f"{path} is mode {mode:04o}, {' and '.join(loose)}: the broker password must be "
        f"readable by root and the service only; chmod {INSTALLED_MODE:o} (owner root, group "
        f"{service}): sudo chown root:{service} {path} && sudo chmod {INSTALLED_MODE:o} {path}"
    )
