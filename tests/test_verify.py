"""``table-controller verify`` on a table installed off-line from a signed bundle (issue 29
item 4; N.J.A.C. 13:69E-1.28B(d); 58 Pa. Code 605a.4(c)): ok with the build id; a changed, an
added or a missing file named, exit 1; a manifest whose signature fails refused; the
challenge's HMAC the same from the table and from the bundle, and not once a file changed.

The bundle and the install (``unshare -rn``, ``--destdir``) are test_release_bundle's
fixtures, one of each for the run, shared with that module: each test holds the install's
lock and puts back what it changed.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

from test_installer import INSTALLED_VENV
from test_release_bundle import _offline_install, bundle, installed  # noqa: F401  (its fixtures)

ROOT = Path(__file__).resolve().parent.parent


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def table_controller(root: Path) -> str:
    return str(root / INSTALLED_VENV.lstrip("/") / "bin" / "table-controller")


def site_packages(root: Path) -> Path:
    (site,) = (root / INSTALLED_VENV.lstrip("/") / "lib").glob("python3*/site-packages")
    return site


def test_verify_says_ok_and_names_a_changed_added_or_missing_file(installed, tmp_path):  # noqa: F811
    root, _ = installed
    command = [table_controller(root), "verify"]
    ok = run(command, tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("ok: build 0.") and "manifest sha256:" in ok.stdout
    assert "files of the table role check" in ok.stdout
    # a jackpot controller started on a table's install (the demo does) checks the list of
    # the role installed there (release/ROLE), which covers the same package: ok, not a
    # refusal for the jackpot role's units, which a table never installs
    jackpot_controller = str(Path(table_controller(root)).with_name("jackpot-controller"))
    jackpot = run([jackpot_controller, "verify"], tmp_path)
    assert jackpot.returncode == 0 and "files of the table role check" in jackpot.stdout, (
        jackpot.stdout + jackpot.stderr
    )
    site = site_packages(root)
    changed = site / "paho" / "mqtt" / "client.py"
    original = changed.read_bytes()
    unit = root / "etc/systemd/system/table-controller.service"
    unit_text = unit.read_bytes()
    added = site / "paho" / "sitecustom.py"
    try:
        changed.write_bytes(original + b"\n# altered\n")
        added.write_text("print('not the vendor's')\n")
        unit.unlink()
        failed = run(command, tmp_path)
    finally:
        changed.write_bytes(original)
        added.unlink(missing_ok=True)
        unit.write_bytes(unit_text)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert f"{changed}: its SHA-256 differs from the signed list" in failed.stdout
    assert f"{added}: not in the signed list (a file added)" in failed.stdout
    assert f"{unit}: missing" in failed.stdout
    assert run(command, tmp_path).returncode == 0  # all back as installed


def test_a_manifest_whose_signature_fails_is_refused(installed, tmp_path):  # noqa: F811
    root, _ = installed
    release = root / "opt/table-controller/release"
    manifest = release / "MANIFEST.sha256"
    original = manifest.read_bytes()
    try:  # a file added to the manifest, which the signature no longer covers
        manifest.write_bytes(original + b"0" * 64 + b"  wheels/evil-1-py3-none-any.whl\n")
        result = run([table_controller(root), "verify"], tmp_path)
    finally:
        manifest.write_bytes(original)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{release}/MANIFEST.sig: the signature of MANIFEST.sha256 does not verify" in (
        result.stdout
    )


def test_the_challenge_answers_as_the_bundle_says_and_changes_with_a_file(
    installed,  # noqa: F811
    bundle,  # noqa: F811
    tmp_path,
):
    root, _ = installed
    seed = "inspector-7f3a"
    table = [table_controller(root), "verify", "--challenge", seed]
    expected = run([sys.executable, "-m", "controller.cli", "verify", "--challenge", seed,
                    "--bundle", str(bundle.path), "--machine", platform.machine(),
                    "--release-key", str(bundle.public_key)], ROOT)  # fmt: skip
    assert expected.returncode == 0, expected.stderr
    answer = run(table, tmp_path)
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip() == expected.stdout.strip()
    assert len(answer.stdout.strip()) == 64
    other = run([*table[:-1], "another seed"], tmp_path)
    assert other.stdout.strip() != answer.stdout.strip()
    changed = site_packages(root) / "controller" / "verify.py"
    original = changed.read_bytes()
    try:
        changed.write_bytes(original.replace(b"FAILED", b"FAILEd"))
        altered = run(table, tmp_path)
    finally:
        changed.write_bytes(original)
    assert altered.stdout.strip() != expected.stdout.strip()


def test_a_development_checkout_is_an_unverified_build_and_says_so(tmp_path):
    result = run([sys.executable, "-m", "controller.cli", "verify"], ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("unverified build: no signed release manifest")
    jackpot = run([sys.executable, "-m", "jackpot.cli", "verify"], ROOT)
    assert jackpot.returncode == 0 and jackpot.stdout.startswith("unverified build")


START_CHECK = """
import json, sys
from controller.games import load_game
from controller.journal import JournaledTable
from controller.runtime.software import SoftwareWatch
from controller.selfcheck import SelfCheck
from controller.table.settings import TableSettings

table = JournaledTable(sys.argv[1], load_game("pa-standard"), TableSettings(spots=2))
watch = SoftwareWatch(SelfCheck("table"), table.journal, latched=False)  # as the daemon starts
for event in watch(1):
    table.handle(event)
lockout = table.handle(__import__("controller.table.events").table.events.Lockout(t=2))
print(json.dumps({"faults": table.state.faults, "meta": table.journal.meta()["software_check"],
                  "lockout": lockout.accepted}))
table.close()
"""


def test_a_changed_file_latches_the_software_fault_at_the_tables_start(installed, tmp_path):  # noqa: F811
    import json

    root, _ = installed
    python = str(root / INSTALLED_VENV.lstrip("/") / "bin" / "python")
    changed = site_packages(root) / "paho" / "mqtt" / "client.py"
    original = changed.read_bytes()
    try:
        changed.write_bytes(original + b"\n# altered\n")
        started = run([python, "-c", START_CHECK, str(tmp_path / "j.sqlite")], tmp_path)
    finally:
        changed.write_bytes(original)
    assert started.returncode == 0, started.stderr
    seen = json.loads(started.stdout)
    detail, present = seen["faults"]["software"]
    assert present and f"{changed}: its SHA-256 differs from the signed list" in detail
    assert seen["lockout"] is False  # no new round while it is latched
    assert seen["meta"]["result"] == "failed" and seen["meta"]["utc"].endswith("Z")
    dev = run([sys.executable, "-c", START_CHECK, str(tmp_path / "dev.sqlite")], ROOT)
    assert dev.returncode == 0, dev.stderr
    assert json.loads(dev.stdout)["faults"] == {}  # a development checkout runs, marked so
    assert json.loads(dev.stdout)["meta"]["result"] == "unverified"
