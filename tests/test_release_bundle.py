"""The signed release bundle (``scripts/release.sh``) and the off-line, checked install from it
(``scripts/install-pi.sh --bundle``), issue 29 items 2, 3 and 7.

The bundle is built once for the run (shared with ``tests/test_verify.py``) with a release key
made here (the CI's test key), with the wheels of both machines: the aarch64 download takes
seconds from the index, and it is what a table's Pi installs from. The install runs in a
network namespace with no route (``unshare -rn``), so any download the installer still made
would fail it, into a scratch root (``--destdir``). A tampered file, an added file and a bundle
signed by another key are refused before anything is installed, naming the file (N.J.A.C.
13:69E-1.28B(d); 9 NYCRR 5321.18(b)(3)(iv)).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import PROFILES
from test_installer import INSTALLED_VENV

from controller.link.signing import new_signing_key, public_key_text, save_signing_key

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "scripts" / "release.sh"


def offline() -> list[str]:
    """The prefix that runs a command in a network namespace with no route."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -rn is not allowed here: {probe.stderr.decode().strip()}")
    return ["unshare", "-rn"]


def install(script: Path, bundle: Path, root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PATH"] = os.pathsep.join(
        p for p in env["PATH"].split(os.pathsep) if not p.startswith(sys.prefix)
    )
    return subprocess.run(
        [*offline(), str(script), "--bundle", str(bundle), "--destdir", str(root), *args],
        cwd=root.parent, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip


@dataclass(frozen=True)
class Bundle:
    path: Path
    public_key: Path  # the line release.sh prints, as the casino pins it
    printed: str

    def members(self) -> dict[str, bytes]:
        with tarfile.open(self.path) as tar:
            return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}

    def altered(self, out: Path, change) -> Path:
        """A copy of the bundle with ``change(files)`` applied to its {name: bytes}."""
        files = self.members()
        change(files)
        with tarfile.open(out, "w") as tar:
            for name, data in sorted(files.items()):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o755 if name.endswith(".sh") else 0o644
                tar.addfile(info, io.BytesIO(data))
        return out


def _build_bundle(work: Path) -> Bundle:
    key = new_signing_key()
    save_signing_key(work / "release.key", key)
    result = subprocess.run(
        ["bash", str(RELEASE), "--key", str(work / "release.key"), "--out", str(work / "dist")],
        cwd=work, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (path,) = (work / "dist").glob("table-controller-*.tar")
    public = public_key_text(key)
    assert public in result.stdout  # printed for the casino to pin
    (work / "release-key.txt").write_text(public + "\n")
    (work / "printed.txt").write_text(result.stdout)
    return Bundle(path, work / "release-key.txt", result.stdout)


def _shared_folder(tmp_path_factory) -> Path:
    """This run's folder for what its xdist workers share (the bundle, its install)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # this run's folder, shared by its workers
    work = base / "release-bundle"
    work.mkdir(exist_ok=True)
    return work


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Bundle:
    """One bundle for the run: this module and tests/test_verify.py take the same one, built
    by whichever xdist worker asks first while the other waits on a lock (a bundle build is
    about two minutes; pytest-xdist's documented way to run a session fixture once)."""
    work = _shared_folder(tmp_path_factory)
    with open(work / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = sorted((work / "dist").glob("table-controller-*.tar"))
        if built and (work / "printed.txt").is_file():
            printed = (work / "printed.txt").read_text()
            return Bundle(built[0], work / "release-key.txt", printed)
        return _build_bundle(work)


def test_the_bundle_holds_both_machines_wheels_and_a_signed_manifest(bundle):
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    files = bundle.members()
    top = bundle.path.name.removesuffix(".tar")
    names = {name.split("/", 1)[1] for name in files}
    wheels = {n for n in names if n.startswith("wheels/")}
    for package in ("numpy", "cryptography", "opencv_python_headless", "psycopg_binary"):
        for arch in ("aarch64", "x86_64"):
            assert any(n.startswith(f"wheels/{package}-") and arch in n for n in wheels), (
                package, arch)  # fmt: skip
    assert any(n.startswith("wheels/lgpio-0.2.2.0-") and "aarch64" in n for n in wheels)
    assert any(n.startswith("wheels/setuptools-84.2.1-") for n in wheels)  # the backend, pinned
    assert any(n.startswith("wheels/table_controller-") for n in wheels)
    assert {"scripts/install-pi.sh", "constraints.txt", "release-key.pem",
            "systemd/table-controller.service", "systemd/99-bj-shoe.rules",
            "config/table.example.toml", "config/jackpot.example.toml"} <= names  # fmt: skip
    assert {f"profiles/{p}.toml" for p in PROFILES} <= names
    manifest = files[f"{top}/MANIFEST.sha256"]
    listed = {line.split("  ", 1)[1] for line in manifest.decode().splitlines()}
    assert listed == names - {"MANIFEST.sha256", "MANIFEST.sig"}
    key = load_pem_public_key(files[f"{top}/release-key.pem"])
    key.verify(files[f"{top}/MANIFEST.sig"], manifest)  # raises if it does not verify


def _install_offline(bundle: Bundle, work: Path) -> tuple[Path, subprocess.CompletedProcess]:
    unpacked = work / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    unpacked.mkdir(parents=True)
    # as the operator unpacks it (docs/release.md, hardware/install.md): tar -xf. Not
    # tarfile's extractall(filter="data"): Debian 12's Python 3.11.2, the tables', lacks the
    # filter argument (3.11.4)
    subprocess.run(["tar", "-xf", str(bundle.path), "-C", str(unpacked)], check=True)
    (script,) = unpacked.glob("*/scripts/install-pi.sh")  # the bundle's own installer
    root = work / "root"
    shutil.rmtree(root, ignore_errors=True)  # a run stopped half-way: from the start
    result = install(script, bundle.path, root, "--release-key", str(bundle.public_key))
    assert result.returncode == 0, result.stdout + result.stderr
    (work / "installed.out").write_text(result.stdout)  # last: the install is complete
    return root, result


@pytest.fixture(scope="module")
def _offline_install(bundle, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """One off-line install of the bundle for the run, like the bundle: this module and
    tests/test_verify.py use the same scratch root, installed by the worker that asks first."""
    work = _shared_folder(tmp_path_factory) / "offline"
    work.mkdir(exist_ok=True)
    with open(work / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (work / "installed.out").is_file():
            printed = (work / "installed.out").read_text()
            return work / "root", subprocess.CompletedProcess([], 0, printed, "")
        return _install_offline(bundle, work)


@pytest.fixture
def installed(_offline_install) -> Iterator[tuple[Path, subprocess.CompletedProcess]]:
    """The run's off-line install, one test at a time (a test of tests/test_verify.py alters
    a file of it and puts it back): an exclusive lock held for the whole test."""
    root, _result = _offline_install
    with open(root.parent / ".use-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield _offline_install


def test_an_offline_install_from_the_bundle_runs_and_keeps_the_signed_manifest(
    installed, bundle, tmp_path
):
    root, result = installed
    venv = root / INSTALLED_VENV.lstrip("/")
    games = subprocess.run([str(venv / "bin" / "table-controller"), "games"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert games.returncode == 0, games.stderr
    assert sorted(line.split()[0] for line in games.stdout.splitlines()) == sorted(PROFILES)
    # only the bundle's packages: verify can check every file of the venv
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    release = root / "opt/table-controller/release"
    top = bundle.path.name.removesuffix(".tar")
    files = bundle.members()
    for name in ("MANIFEST.sha256", "MANIFEST.sig"):
        assert (release / name).read_bytes() == files[f"{top}/{name}"], name
    assert (release / "release-key.pem").read_bytes() == files[f"{top}/release-key.pem"]
    (apt,) = [line for line in result.stdout.splitlines() if "apt-get install" in line]
    assert "--no-install-recommends" in apt.split() and "python3-lgpio" not in apt


def _tamper_wheel(files: dict[str, bytes]) -> None:
    name = next(n for n in files if "/wheels/paho_mqtt-" in n)
    files[name] += b"\0"


def _add_wheel(files: dict[str, bytes]) -> None:
    top = next(iter(files)).split("/", 1)[0]
    files[f"{top}/wheels/paho_mqtt-9.9.9-py3-none-any.whl"] = b"not the vendor's"


@pytest.mark.parametrize(
    ("change", "named"),
    [(_tamper_wheel, "wheels/paho_mqtt-2.2.0-py3-none-any.whl: its SHA-256 differs"),
     (_add_wheel, "not in the signed manifest: wheels/paho_mqtt-9.9.9-py3-none-any.whl")],
)  # fmt: skip
def test_a_changed_or_added_file_is_refused_naming_it(bundle, tmp_path, change, named):
    altered = bundle.altered(tmp_path / bundle.path.name, change)
    root = tmp_path / "root"
    script = ROOT / "scripts" / "install-pi.sh"
    result = install(script, altered, root, "--release-key", str(bundle.public_key))
    assert result.returncode == 1, result.stdout + result.stderr
    assert named in result.stderr
    assert not (root / "opt").exists()  # refused before anything was done


def test_a_bundle_signed_by_another_key_is_refused(bundle, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text(public_key_text(new_signing_key()) + "\n")
    root = tmp_path / "root"
    script = ROOT / "scripts" / "install-pi.sh"
    result = install(script, bundle.path, root, "--release-key", str(other))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "MANIFEST.sig: the signature of MANIFEST.sha256 does not verify" in result.stderr
    assert not (root / "opt").exists()


def test_release_needs_an_ed25519_key(tmp_path):
    (tmp_path / "not-a-key").write_text("hello\n")
    result = subprocess.run(["bash", str(RELEASE), "--key", str(tmp_path / "not-a-key"),
                             "--out", str(tmp_path)], capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert result.returncode == 1
    assert "not an Ed25519 private key" in result.stderr and "openssl genpkey" in result.stderr


def test_a_later_bundle_must_be_signed_by_the_key_the_table_kept(installed, bundle, tmp_path):
    from cryptography.hazmat.primitives import serialization

    root, _ = installed
    other = new_signing_key()

    def resign(files: dict[str, bytes]) -> None:  # a bundle re-signed by someone else's key
        top = next(iter(files)).split("/", 1)[0]
        files[f"{top}/release-key.pem"] = other.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        lines = files[f"{top}/MANIFEST.sha256"].decode().splitlines()
        digest = hashlib.sha256(files[f"{top}/release-key.pem"]).hexdigest()
        lines = [f"{digest}  release-key.pem" if line.endswith("  release-key.pem") else line
                 for line in lines]  # fmt: skip
        files[f"{top}/MANIFEST.sha256"] = ("\n".join(lines) + "\n").encode()
        files[f"{top}/MANIFEST.sig"] = other.sign(files[f"{top}/MANIFEST.sha256"])

    altered = bundle.altered(tmp_path / bundle.path.name, resign)
    kept = (root / "opt/table-controller/release/MANIFEST.sha256").read_bytes()
    result = install(ROOT / "scripts" / "install-pi.sh", altered, root)  # no --release-key
    assert result.returncode == 1, result.stdout + result.stderr
    assert "MANIFEST.sig: the signature of MANIFEST.sha256 does not verify" in result.stderr
    assert "the last install's" in result.stderr
    assert (root / "opt/table-controller/release/MANIFEST.sha256").read_bytes() == kept
