"""A real PostgreSQL for tests: Debian's server binaries, a temporary cluster, a free loopback port.

Use it from a test file with::

    from pg_server import pg_dsn, pg_server  # noqa: F401

- ``pg_server`` (session): a started :class:`PgServer`, stopped at the end of the session;
- ``pg_dsn``: a fresh, empty database for one test (``CREATE DATABASE``, owned by the
  unprivileged login role :data:`TEST_ROLE`), as a ``postgresql://`` URL; dropped afterwards.

The cluster is made by ``initdb`` in a temporary folder and run by ``pg_ctl``; as root (CI)
both run as Debian's ``postgres`` user through ``runuser -u postgres --`` (PostgreSQL refuses
to run as root), in a folder that user owns. The server listens on 127.0.0.1 only, on a free
port, with its unix socket inside the folder; ``pg_hba.conf`` trusts loopback connections
(the tests need no password). Durability is production's: ``fsync`` and
``synchronous_commit`` stay on. :meth:`PgServer.kill` is a ``kill -9`` of the postmaster and
:meth:`PgServer.restart` starts it again on the same port with the same data (for the tests of
a lost database).

The binaries: ``$PG_BINDIR``, else the newest ``/usr/lib/postgresql/*/bin`` (Debian 12:
15). Without them the fixtures skip on a developer machine, and fail when ``$CI`` is set
(scripts/setup.sh installs ``postgresql`` there, so a skip would hide a missing test).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.demo.files import free_port

SUPERUSER = "postgres"
TEST_ROLE = "jackpot_test"
RUN_AS = "postgres"  # Debian's system user for the server when the tests run as root


def find_bindir() -> Path | None:
    """The directory of ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    given = os.environ.get("PG_BINDIR")
    candidates = [Path(given)] if given else []
    candidates += sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    for path in candidates:
        if all((path / exe).is_file() for exe in ("initdb", "pg_ctl", "postgres")):
            return path
    return None


class PgServerError(RuntimeError):
    """The test server did not start or stop (its log is in the message)."""


class PgServer:
    """One PostgreSQL cluster under ``workdir`` on ``127.0.0.1:port``."""

    host = "127.0.0.1"

    def __init__(self, workdir: Path | None = None, bindir: Path | None = None) -> None:
        self.bindir = bindir or find_bindir()
        if self.bindir is None:
            raise PgServerError("PostgreSQL's server binaries are not installed (apt postgresql)")
        self.as_root = os.geteuid() == 0
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="pg-test-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data = self.workdir / "data"
        self.socket_dir = self.workdir / "sock"
        self.log_path = self.workdir / "postgres.log"
        self.port = free_port()
        self._names = itertools.count(1)
        if self.as_root:  # the postgres user must own the folder it runs in
            shutil.chown(self.workdir, RUN_AS, RUN_AS)
            self.workdir.chmod(0o700)
        self._run("initdb", "-D", self.data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8", "--no-instructions")  # fmt: skip
        self.socket_dir.mkdir()
        if self.as_root:
            shutil.chown(self.socket_dir, RUN_AS, RUN_AS)
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(
                f"\nlisten_addresses = '{self.host}'\nport = {self.port}\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                "max_connections = 100\nlog_min_messages = warning\n"
            )
        (self.data / "pg_hba.conf").write_text(
            "# tests/pg_server.py: loopback only, trusted (no passwords in tests)\n"
            "local all all trust\n"
            f"host all all {self.host}/32 trust\n",
            encoding="utf-8",
        )

    def _command(self, exe: str, *args: object) -> list[str]:
        cmd = [str(self.bindir / exe), *map(str, args)]
        return ["runuser", "-u", RUN_AS, "--", *cmd] if self.as_root else cmd

    def _run(self, exe: str, *args: object, timeout: float = 60) -> str:
        done = subprocess.run(
            self._command(exe, *args), capture_output=True, text=True, timeout=timeout,
            cwd=self.workdir,
        )  # fmt: skip
        if done.returncode != 0:
            raise PgServerError(f"{exe} failed ({done.returncode}): {done.stderr}\n{self.log()}")
        return done.stdout

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-4000:]
        except OSError:
            return ""

    @property
    def pid(self) -> int | None:
        """The postmaster's pid (postmaster.pid), None when it is not running."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (OSError, ValueError, IndexError):
            return None
        # a killed postmaster whose parent (pg_ctl) is gone may stay a zombie: dead
        return None if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X") else pid

    def start(self) -> None:
        self._run("pg_ctl", "-D", self.data, "-l", self.log_path, "-w", "-t", "30", "start")
        # the superuser's own setup, once: a login role without privileges
        self.sql(
            f"DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='{TEST_ROLE}') "
            f"THEN CREATE ROLE {TEST_ROLE} LOGIN; END IF; END$$"
        )

    def stop(self, mode: str = "fast") -> None:
        if self.pid is not None:
            self._run("pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "30", "stop")

    def kill(self) -> None:
        """``kill -9`` of the postmaster (its backends end with it)."""
        pid = self.pid
        if pid is None:
            return
        os.kill(pid, signal.SIGKILL)
        # its backends notice the postmaster's death and exit; a new postmaster refuses to
        # start while they hold the old shared memory
        deadline = time.monotonic() + 120  # a loaded machine ends them late
        while self._processes() and time.monotonic() < deadline:
            time.sleep(0.02)

    def _processes(self) -> list[int]:
        """The server's processes still alive (their working directory is the data folder)."""
        alive = []
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and (proc / "cwd").resolve() == self.data.resolve():
                    alive.append(int(proc.name))
            except OSError:
                continue
        return alive

    def restart(self) -> None:
        """Start again on the same port with the same data (after :meth:`kill` too)."""
        if self.pid is None:  # a killed postmaster's lock files (its pid may be a zombie's)
            (self.data / "postmaster.pid").unlink(missing_ok=True)
            for leftover in self.socket_dir.iterdir():
                leftover.unlink(missing_ok=True)
        self.start()

    def close(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def dsn(self, dbname: str = "postgres", user: str | None = None) -> str:
        return f"postgresql://{user or TEST_ROLE}@{self.host}:{self.port}/{dbname}"

    def sql(self, statement: str, dbname: str = "postgres") -> None:
        """Run one statement as the superuser (autocommit)."""
        import psycopg

        with psycopg.connect(self.dsn(dbname, SUPERUSER), autocommit=True) as conn:
            conn.execute(statement)

    def create_database(self) -> str:
        """A fresh database owned by :data:`TEST_ROLE`; its URL."""
        name = f"t{os.getpid()}_{next(self._names)}"
        self.sql(f"CREATE DATABASE {name} OWNER {TEST_ROLE} TEMPLATE template0")
        return self.dsn(name)

    def drop_database(self, dsn: str) -> None:
        name = dsn.rsplit("/", 1)[1]
        self.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must run the PostgreSQL tests (scripts/setup.sh)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    if find_bindir() is None:
        _missing("PostgreSQL's server binaries are not installed (scripts/setup.sh installs them)")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        _missing("running as root needs runuser (util-linux) to start PostgreSQL as postgres")
    server = PgServer()
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def pg_dsn(pg_server: PgServer) -> Iterator[str]:
    if pg_server.pid is None:  # a test killed it and did not bring it back
        pg_server.restart()
    dsn = pg_server.create_database()
    try:
        yield dsn
    finally:
        if pg_server.pid is not None:
            pg_server.drop_database(dsn)


#: The ledger's backends, as ``ledger_at`` runs them.
BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def ledger_at(request, tmp_path: Path) -> Iterator:
    """``ledger_at(name="ledger")``: a new ledger's location, an SQLite file in ``tmp_path`` or
    a fresh PostgreSQL database (the same name gives the same one): a test taking it runs on
    both backends."""
    if request.param == "sqlite":
        yield lambda name="ledger": tmp_path / f"{name}.db"
        return
    server = request.getfixturevalue("pg_server")
    if server.pid is None:
        server.restart()
    made: dict[str, str] = {}

    def make(name: str = "ledger") -> str:
        if name not in made:
            made[name] = server.create_database()
        return made[name]

    yield make
    if server.pid is not None:
        for dsn in made.values():
            server.drop_database(dsn)
