"""The installer, ``scripts/install-pi.sh`` (issue 18, item 3), run for real into a scratch root.

``--destdir DIR`` puts every file where it goes on a Pi, under DIR, and touches nothing
outside it: no apt, no useradd, no chown, no systemctl or udevadm (each printed as
``would run: ...``, which is how the owners are checked here). The venv is really built
under DIR (the pinned dependencies from the pip cache or PyPI), once for the module; then a
second run is an upgrade that must keep the technician's files and the data.

The installed units are checked with ``systemd-analyze verify`` the way
tests/test_systemd_units.py checks the shipped ones: a copy with only the venv prefix
changed, here to the venv the installer built, so verify finds the very console scripts the
units start. (``verify --root=DIR`` would need systemd's own units under DIR.)
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import PROFILES
from test_systemd_units import INSTALLED_VENV, one, verify

from controller.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "install-pi.sh"
TABLE_UNITS = (
    "table-controller.service",
    "table-controller-backup.service",
    "table-controller-backup.timer",
)
JACKPOT_UNITS = tuple(name.replace("table-", "jackpot-") for name in TABLE_UNITS)
#: Places on the real system the installer writes to without --destdir.
REAL_PLACES = (
    "/opt/table-controller",
    "/etc/table-controller",
    "/var/lib/table-controller",
    "/etc/jackpot-controller",
    "/etc/systemd/system/table-controller.service",
    "/etc/udev/rules.d/99-bj-shoe.rules",
)


def install(destdir: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    # the system's Python makes the venv, as on a Pi (not this test's venv)
    env["PATH"] = path or os.pathsep.join(
        p for p in env["PATH"].split(os.pathsep) if not p.startswith(sys.prefix)
    )
    return subprocess.run(
        [str(SCRIPT), "--destdir", str(destdir), *args],
        cwd=destdir.parent, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip


def real_system() -> dict[str, object]:
    """What the installer could have changed outside a scratch root."""
    users = subprocess.run(["getent", "passwd"], capture_output=True, text=True).stdout
    state = {"users": sorted(line.split(":")[0] for line in users.splitlines())}
    for place in REAL_PLACES:
        state[place] = os.stat(place).st_mtime_ns if os.path.lexists(place) else None
    return state


@dataclass(frozen=True)
class Installed:
    root: Path
    printed: str  # stdout of the first run

    def path(self, place: str) -> Path:
        return self.root / place.lstrip("/")

    def would_run(self) -> list[str]:
        prefix = "would run: "
        return [line[len(prefix):] for line in self.printed.splitlines()
                if line.startswith(prefix)]  # fmt: skip


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("installer") / "root"
    before = real_system()
    result = install(root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert real_system() == before, "the installer changed the real system under --destdir"
    return Installed(root, result.stdout)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# -- what it put where -------------------------------------------------------------------


def test_the_units_and_timers_are_the_shipped_files(installed):
    for name in TABLE_UNITS:
        placed = installed.path(f"/etc/systemd/system/{name}")
        assert placed.read_bytes() == (ROOT / "systemd" / name).read_bytes(), name
        assert mode(placed) == 0o644, name
    assert not installed.path("/etc/systemd/system/jackpot-controller.service").exists()


def test_the_technician_s_files_are_in_place_with_their_modes(installed):
    rule = installed.path("/etc/udev/rules.d/99-bj-shoe.rules")
    assert rule.read_bytes() == (ROOT / "systemd" / "99-bj-shoe.rules").read_bytes()
    assert mode(rule) == 0o644
    config = installed.path("/etc/table-controller/table.toml")
    assert config.read_bytes() == (ROOT / "config" / "table.example.toml").read_bytes()
    assert mode(config) == 0o640  # it may hold the web password hash: not for everyone
    password = installed.path("/etc/table-controller/mqtt-password")
    assert password.read_bytes() == b"" and mode(password) == 0o640
    assert mode(installed.path("/etc/table-controller")) == 0o755
    assert mode(installed.path("/var/lib/table-controller")) == 0o750
    assert mode(installed.path("/opt/table-controller")) == 0o755


def test_the_owners_are_those_the_unit_and_the_docs_expect(installed):
    unit = (ROOT / "systemd" / "table-controller.service").read_text()
    user = one(unit, "Service", "User")
    groups = one(unit, "Service", "SupplementaryGroups").split()
    commands = installed.would_run()
    (useradd,) = [c for c in commands if c.startswith("useradd ")]
    words = useradd.split()
    assert words[-1] == user
    assert {"--system", "--user-group", "--no-create-home"} <= set(words)
    assert sorted(words[words.index("--groups") + 1].split(",")) == sorted(groups)
    assert words[words.index("--home-dir") + 1] == "/var/lib/" + one(unit, "Service",
                                                                    "StateDirectory")  # fmt: skip
    assert words[words.index("--shell") + 1] == "/usr/sbin/nologin"
    chown = dict(reversed(c.split()[1:]) for c in commands if c.startswith("chown "))
    assert chown == {
        "/opt/table-controller": "root:root",
        "/etc/table-controller": "root:root",
        "/var/lib/table-controller": f"{user}:{user}",
        "/etc/table-controller/table.toml": f"root:{user}",
        "/etc/table-controller/mqtt-password": f"root:{user}",
        "/etc/udev/rules.d/99-bj-shoe.rules": "root:root",
    }


def test_what_touches_the_system_is_only_printed(installed):
    commands = installed.would_run()
    (apt,) = [c for c in commands if c.startswith("apt-get install")]
    assert {"python3-venv", "libzbar0"} <= set(apt.split())
    assert "systemctl daemon-reload" in commands
    assert "udevadm control --reload" in commands
    assert not [c for c in commands if c.startswith("systemctl enable")]  # the technician's


def test_the_venv_runs_the_installed_package_not_editable(installed, tmp_path):
    venv = installed.path(INSTALLED_VENV)
    cfg = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = true" in cfg  # apt's python3-lgpio (install.md)
    result = subprocess.run([str(venv / "bin" / "table-controller"), "games"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sorted(line.split()[0] for line in result.stdout.splitlines()) == sorted(PROFILES)
    assert str(venv / "lib") in result.stdout  # the packaged profiles, not the checkout's
    (direct_url,) = (venv / "lib").glob("python3*/site-packages/table_controller-*/direct_url.json")
    assert '"editable": true' not in direct_url.read_text()
    for script in ("table-controller", "jackpot-controller", "jackpot-sign", "shoe-sim"):
        assert os.access(venv / "bin" / script, os.X_OK), script


def test_the_venv_has_the_pinned_versions(installed):
    venv = installed.path(INSTALLED_VENV)
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version.strip()
    names = ("numpy", "opencv-python-headless", "paho-mqtt", "cryptography", "gpiozero")
    script = "import importlib.metadata as m, sys; print(*(m.version(n) for n in sys.argv[1:]))"
    seen = subprocess.run([str(venv / "bin" / "python"), "-c", script, *names],
                          capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert dict(zip(names, seen, strict=True)) == {name: pins[name] for name in names}
    frozen = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--local",
                             "--format=freeze"], capture_output=True, text=True,
                            check=True).stdout  # fmt: skip
    installed_versions = dict(
        line.lower().replace("_", "-").split("==") for line in frozen.splitlines()
    )
    assert "pytest" not in installed_versions  # the runtime only, not the test tools


def test_the_placed_config_checks_ok_with_the_installed_program(installed, tmp_path):
    venv = installed.path(INSTALLED_VENV)
    config = installed.path("/etc/table-controller/table.toml")
    result = subprocess.run(
        [str(venv / "bin" / "table-controller"), "check-config", "--no-files", str(config)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "ok (table hcm-bj-07" in result.stdout


def test_systemd_analyze_verify_accepts_the_installed_units(installed, tmp_path):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed (scripts/setup.sh installs it)")
    venv = str(installed.path(INSTALLED_VENV))
    for name in TABLE_UNITS:
        text = installed.path(f"/etc/systemd/system/{name}").read_text()
        (tmp_path / name).write_text(text.replace(INSTALLED_VENV + "/", venv + "/"))
    for name in TABLE_UNITS:
        printed = verify(tool, tmp_path, name)
        assert printed == "", f"systemd-analyze verify {name} (installed):\n{printed}"
    program = one((tmp_path / TABLE_UNITS[0]).read_text(), "Service", "ExecStart").split()[0]
    assert program == venv + "/bin/table-controller"


def test_what_is_left_is_printed_as_commands_the_program_takes(installed):
    left = installed.printed.split("Left for the technician", 1)[1]
    for topic in ("99-bj-shoe.rules", "pin map", "mqtt-password", "ca.crt"):
        assert topic in left, topic
    program = f"{INSTALLED_VENV}/bin/table-controller"
    commands = [line.strip() for line in left.splitlines() if program + " " in line]
    taken = set()
    for line in commands:
        args = line.split(program + " ", 1)[1].split()
        taken.add(build_parser().parse_args(args).command)
    assert taken == {"link-key", "user", "check-config"}  # accounts, not one password (issue 28)
    assert "sudo -u table-controller " + program + " check-config" in left
    assert "systemctl enable --now table-controller table-controller-backup.timer" in left


# -- run again: an upgrade -----------------------------------------------------------------


@pytest.fixture(scope="module")
def upgraded(installed) -> tuple[Installed, str]:
    """The technician's edits and the table's data, then the installer run a second time."""
    config = installed.path("/etc/table-controller/table.toml")
    config.write_text(config.read_text().replace('id = "hcm-bj-07"', 'id = "hcm-bj-03"'))
    installed.path("/etc/table-controller/mqtt-password").write_text("s3cret\n")
    rule = installed.path("/etc/udev/rules.d/99-bj-shoe.rules")
    rule.write_text(rule.read_text().replace("A10K1XYZ", "FT9QWERT"))
    journal = installed.path("/var/lib/table-controller/journal.sqlite")
    journal.write_bytes(b"the table's journal")
    installed.path("/var/lib/table-controller").chmod(0o700)
    unit = installed.path("/etc/systemd/system/table-controller.service")
    unit.write_text(unit.read_text() + "\n# edited in place\n")
    stale = next(installed.path(INSTALLED_VENV).glob("lib/python3*/site-packages/controller"))
    (stale / "cli.py").write_text("raise SystemExit('the old version')\n")

    result = install(installed.root)
    assert result.returncode == 0, result.stdout + result.stderr
    return installed, result.stdout


def test_a_second_run_keeps_the_technician_s_files_and_the_data(upgraded):
    installed, printed = upgraded
    config = installed.path("/etc/table-controller/table.toml")
    assert tomllib.loads(config.read_text())["table"]["id"] == "hcm-bj-03"
    assert installed.path("/etc/table-controller/mqtt-password").read_text() == "s3cret\n"
    assert "FT9QWERT" in installed.path("/etc/udev/rules.d/99-bj-shoe.rules").read_text()
    journal = installed.path("/var/lib/table-controller/journal.sqlite")
    assert journal.read_bytes() == b"the table's journal"
    assert "kept /etc/table-controller/table.toml" in printed
    assert not [c for c in printed.splitlines() if c.startswith("would run: chown root:")
                and "table.toml" in c]  # fmt: skip
    assert mode(installed.path("/var/lib/table-controller")) == 0o750  # set right again


def test_a_second_run_brings_the_units_and_the_package_up_to_date(upgraded, tmp_path):
    installed, _ = upgraded
    unit = installed.path("/etc/systemd/system/table-controller.service")
    assert unit.read_bytes() == (ROOT / "systemd" / "table-controller.service").read_bytes()
    program = installed.path(INSTALLED_VENV) / "bin" / "table-controller"
    result = subprocess.run([str(program), "games"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr  # the same version number, reinstalled


def test_the_jackpot_role_beside_it(upgraded, tmp_path):
    installed, _ = upgraded
    result = install(installed.root, "--role", "jackpot")
    assert result.returncode == 0, result.stdout + result.stderr
    for name in JACKPOT_UNITS:
        placed = installed.path(f"/etc/systemd/system/{name}")
        assert placed.read_bytes() == (ROOT / "systemd" / name).read_bytes(), name
    config = installed.path("/etc/jackpot-controller/jackpot.toml")
    assert config.read_bytes() == (ROOT / "config" / "jackpot.example.toml").read_bytes()
    assert mode(config) == 0o640
    assert mode(installed.path("/var/lib/jackpot-controller")) == 0o750
    assert "chown root:jackpot-controller /etc/jackpot-controller/jackpot.toml" in result.stdout
    assert (
        "apt-get install -y --no-install-recommends python3-venv mosquitto mosquitto-clients"
        in result.stdout
    )
    venv = str(installed.path(INSTALLED_VENV))
    for name in JACKPOT_UNITS:
        text = installed.path(f"/etc/systemd/system/{name}").read_text()
        (tmp_path / name).write_text(text.replace(INSTALLED_VENV + "/", venv + "/"))
    tool = shutil.which("systemd-analyze")
    if tool is not None:
        for name in JACKPOT_UNITS:
            printed = verify(tool, tmp_path, name)
            assert printed == "", f"systemd-analyze verify {name} (installed):\n{printed}"


# -- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("machine", "arch"),
    [("armv7l", "armhf"), ("aarch64", "armhf")],  # the 32-bit OS, also on a 64-bit kernel
)
def test_a_32_bit_arm_system_is_refused_before_anything_is_done(tmp_path, machine, arch):
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, answer in (("uname", machine), ("dpkg", arch)):
        (stubs / name).write_text(f"#!/bin/sh\necho {answer}\n")
        (stubs / name).chmod(0o755)
    root = tmp_path / "root"
    result = install(root, path=f"{stubs}{os.pathsep}{os.environ['PATH']}")
    assert result.returncode == 1
    assert "32-bit ARM" in result.stderr and "64-bit" in result.stderr
    assert "no armv7 wheels of OpenCV or numpy" in result.stderr
    assert list(root.iterdir()) == []


def test_an_unknown_role_is_refused(tmp_path):
    result = install(tmp_path / "root", "--role", "sign")
    assert result.returncode == 2
    assert "--role must be table or jackpot" in result.stderr


def test_the_suite_runs_on_the_interpreter_a_table_s_venv_is_made_with():
    """A lab's evidence is the tests of what runs: the installer makes a table's venv with
    Debian's own Python, and ``scripts/setup.sh`` makes the suite's ``.venv`` with the same
    one where the machine has it (issue 32: pyenv's build, found first on ``PATH`` here, is
    another interpreter, and one without Debian's optimisation)."""
    default = re.search(r"^PYTHON=\$\{PYTHON:-(\S+)\}$", SCRIPT.read_text(), re.M)
    assert default, "install-pi.sh names no default interpreter"
    tables = Path(default[1])
    if not tables.exists():
        pytest.skip(f"{tables} is not on this machine (not Debian)")
    running = Path(getattr(sys, "_base_executable", sys.executable))
    assert running.resolve() == tables.resolve(), (
        f"the tests run on {running}, a table on {tables}: make .venv anew "
        "(rm -rf .venv && bash scripts/setup.sh)"
    )
