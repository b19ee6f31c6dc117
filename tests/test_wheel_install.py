"""The wheel a table installs is self-contained (issue 18, item 1).

Built from a copy of the source (``pip wheel``), installed NOT editable with the pinned
constraints (constraints.txt) into a clean venv, then run from an empty folder with no
PYTHONPATH: it must list the shipped profiles, check the example configs, compute a par sheet
and validate jackpot link messages, with nothing read from a checkout. Slow (a venv and the
dependencies from the pip cache or PyPI), built once for the module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import PROFILES

from controller import build
from controller.link.messages import envelope
from controller.table.effects import Publish

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DATA = {
    "controller/profiles": ROOT / "controller" / "profiles",
    "controller/link/schemas": ROOT / "controller" / "link" / "schemas",
}
#: The file checks the example table config fails on a machine that is not yet provisioned:
#: the files config/table.example.toml says the technician puts under /etc/table-controller,
#: and data_dir (/var/lib/table-controller) where this user may not create it.
UNPROVISIONED = {"password_file", "signing_key", "tls_ca", "data_dir"}


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    empty: Path  # the working directory of every command: nothing of the project in it
    env: dict[str, str]

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        program = args[0] if args[0].startswith("/") else str(self.venv / "bin" / args[0])
        return subprocess.run(
            [program, *args[1:]], cwd=self.empty, env=self.env, input=stdin,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip


def _pip(*args: str, cwd: Path, python: str = sys.executable, env=None) -> None:
    result = subprocess.run(
        [python, "-m", "pip", *args], cwd=cwd, capture_output=True, text=True, timeout=900,
        env=env,
    )  # fmt: skip
    assert result.returncode == 0, f"pip {' '.join(args)}:\n{result.stdout}\n{result.stderr}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # a copy: a build in the checkout leaves build/ with stale files
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for package in ("controller", "drivers", "jackpot"):
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    # the copy has no .git: the version is the checkout's, told as setuptools-scm documents.
    # The build backend is this test venv's, at the versions pyproject.toml's [build-system]
    # pins (constraints.txt; scripts/setup.sh installs them): no isolated build venv made again
    pretend = {**os.environ, "SETUPTOOLS_SCM_PRETEND_VERSION": build.version()}
    _pip("wheel", "--no-deps", "--no-build-isolation", "--quiet", "--wheel-dir",
         str(work / "dist"), str(source), cwd=work, env=pretend)  # fmt: skip
    (wheel,) = (work / "dist").glob("table_controller-*.whl")

    # a clean venv (no system site packages, nothing of this one), the wheel and its pinned
    # dependencies installed into it by this venv's pip (--python): the venv needs no pip of
    # its own, and no byte-code is compiled ahead (Python compiles what it imports)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)  # fmt: skip
    python = str(venv / "bin" / "python")
    _pip("--python", python, "install", "--quiet", "--no-compile", "-c",
         str(ROOT / "constraints.txt"), str(wheel), cwd=work)  # fmt: skip

    empty = work / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.pop("TABLE_CONTROLLER_GAMES", None)
    env.pop(build.MANIFEST_ENV, None)
    return Installed(wheel, venv, empty, env)


def test_the_wheel_carries_every_profile_and_schema_byte_for_byte(installed):
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        for inside, folder in PACKAGE_DATA.items():
            files = sorted(folder.iterdir())
            assert files, folder
            for path in files:
                assert wheel.read(f"{inside}/{path.name}") == path.read_bytes(), path.name
    assert not [n for n in names if n.startswith(("config/", "docs/", "tests/"))]


def test_the_installed_package_is_the_venv_s_not_the_checkout_s(installed):
    result = installed.run(
        "python", "-c", "import controller, controller.link.messages as m, jackpot.service; "
        "print(controller.__file__); print(m.schema_dir()); print(jackpot.service.__file__)",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    package, schemas, central = result.stdout.split()
    site = installed.venv / "lib"
    assert Path(package).is_relative_to(site), package
    assert Path(schemas).is_relative_to(site), schemas
    assert Path(central).is_relative_to(site), central  # the jackpot controller, its own package
    # no git and no release manifest beside the venv: the version the build wrote (issue 29)
    result = installed.run("table-controller", "--version")
    assert result.stdout == f"table-controller {build.version()} (unverified build)\n"
    for program in ("jackpot-controller", "jackpot-sign"):
        shown = installed.run(program, "--help")
        assert shown.returncode == 0 and "usage:" in shown.stdout, program + shown.stderr


def test_games_lists_the_packaged_profiles(installed):
    result = installed.run("table-controller", "games")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert sorted(line.split()[0] for line in lines) == sorted(PROFILES)
    for line in lines:
        path = Path(line.rsplit("(", 1)[1].rstrip(")"))
        assert path.is_relative_to(installed.venv / "lib"), line
        assert path.parent.name == "profiles" and path.is_file(), line


def test_the_example_configs_pass_once_their_files_exist(installed):
    folder = installed.empty
    for name in ("table", "jackpot"):
        shutil.copy(ROOT / "config" / f"{name}.example.toml", folder / f"{name}.toml")

    jackpot = installed.run("jackpot-controller", "check-config", "jackpot.toml")
    assert jackpot.returncode == 0, jackpot.stdout + jackpot.stderr
    assert jackpot.stdout.startswith("jackpot.toml: ok (jackpot:")

    as_shipped = installed.run("table-controller", "check-config", "table.toml")
    assert as_shipped.returncode == 2, as_shipped.stdout + as_shipped.stderr
    errors = as_shipped.stderr.splitlines()
    assert errors and all(e.startswith("table.toml: [") for e in errors), errors
    keys = {e.split("key '", 1)[1].split("'", 1)[0] for e in errors}
    assert keys <= UNPROVISIONED, errors
    assert "Traceback" not in as_shipped.stderr

    no_files = installed.run("table-controller", "check-config", "--no-files", "table.toml")
    assert no_files.returncode == 0, no_files.stderr
    assert "table.toml: ok (table hcm-bj-07, game pa-standard" in no_files.stdout

    # provisioned as the example's comments say, under this folder instead of /etc and /var
    etc = folder / "etc"
    etc.mkdir()
    (etc / "mqtt-password").write_text("a-broker-password\n", encoding="utf-8")
    (etc / "mqtt-password").chmod(0o640)  # as the installer makes it
    (etc / "ca.crt").write_text(
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", encoding="utf-8"
    )
    key = installed.run(
        "table-controller", "link-key", "--out", str(etc / "link-signing.key"),
        "--key-id", "hcm-bj-07-1",
    )  # fmt: skip
    assert key.returncode == 0, key.stderr
    text = (folder / "table.toml").read_text(encoding="utf-8")
    for old, new in (("/etc/table-controller", etc), ("/var/lib/table-controller", folder / "d")):
        assert old in text, old
        text = text.replace(old, str(new))
    (folder / "table.toml").write_text(text, encoding="utf-8")
    provisioned = installed.run("table-controller", "check-config", "table.toml")
    assert provisioned.returncode == 0, provisioned.stderr
    assert "table.toml: ok (table hcm-bj-07" in provisioned.stdout
    assert "files not checked" not in provisioned.stdout


def test_a_par_sheet_from_the_wheel_is_the_checkout_s(installed):
    """The side bets' par sheet and the main game's strategy chart (controller/rules/ev/)
    from the wheel equal the checkout's. (The main game's EV on top would take 9 s of CPU a
    side for Double Up; tests/test_main_ev.py checks it.)"""
    printed = {}
    for args in (("--json", "--no-main"), ("--strategy",)):
        result = installed.run("table-controller", "par-sheet", "--game", "double-up", *args)
        assert result.returncode == 0, result.stderr
        here = subprocess.run(
            [sys.executable, "-m", "controller", "par-sheet", "--game", "double-up", *args],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        assert result.stdout == here.stdout, args
        printed[args[0]] = result.stdout
    assert 0 < json.loads(printed["--json"])["bets"]["bonus_16"]["house_edge"] < 1
    assert "Us Double Up, else stand" in printed["--strategy"]


VALIDATE = """
import json, sys
from controller.link.messages import LinkMessageError, parse_message
for topic, message in json.load(sys.stdin):
    try:
        kind, table, parsed = parse_message(topic, json.dumps(message).encode())
        print("ok", kind, table, parsed["payload"]["stake"])
    except LinkMessageError as exc:
        print("refused", exc.field)
"""


def test_link_messages_validate_with_the_installed_schemas(installed):
    payload = {"round": 4, "game": "pa-standard", "spot": 2, "wager": "blazing_7s",
               "pool": "blazing_7s", "stake": 500, "mystery": True}  # fmt: skip
    publish = Publish("contribution", "round-4/spot-2/blazing_7s/contribution", payload)
    good = envelope("hcm-bj-07", 2, 17, publish, 1_700_000_000_000)
    fractional = json.loads(json.dumps(good))
    fractional["payload"]["stake"] = 5.0  # money is a JSON integer of cents, never 5.0
    topic = "bj/v1/table/hcm-bj-07/contribution"
    cases = [(topic, good), (topic, fractional), ("bj/v1/table/hcm-bj-08/contribution", good)]
    result = installed.run("python", "-c", VALIDATE, stdin=json.dumps(cases))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "ok contribution hcm-bj-07 500",
        "refused payload.stake",
        "refused table",
    ]


def test_the_demo_says_it_needs_a_checkout(installed):
    result = installed.run("table-controller", "demo", "--rounds", "1")
    assert result.returncode == 2
    assert "the demo runs from a clone of the repository" in result.stderr
    assert "Traceback" not in result.stderr and not result.stdout
