"""The build identity (issue 29 item 1; 58 Pa. Code 605a.4(c), N.J.A.C. 13:69E-1.28B(d)): one
version from git, the same in a checkout, a built wheel and a copy with no git; the build id
adds the release manifest's SHA-256 and is what ``--version`` and the ledger's meta say.
(The status answer, /metrics, /diag, the journal's runs and the birth message: the live tests
of tests/test_ops_metrics.py, test_web_browser.py and test_journal_upgrade.py.)"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from controller import build
from jackpot.ledger import Ledger
from jackpot.pools import load_config
from jackpot.service import bump_boot

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(*argv: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


def test_version_names_the_commit_and_the_release_manifest_digest(tmp_path):
    head = run("git", "rev-parse", "HEAD").strip()
    version = build.version()
    assert version != "0.1.0" and ("+g" + head[:7] in version or version.count(".") == 2)
    manifest = tmp_path / "MANIFEST.sha256"
    manifest.write_text("ab  controller/__init__.py\n", encoding="utf-8")
    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()
    env = {**os.environ, build.MANIFEST_ENV: str(manifest)}
    for prog in ("table-controller", "jackpot-controller"):
        out = run(str(BIN / prog), "--version", env=env)
        assert out == f"{prog} {version} (manifest sha256:{digest})\n"
    env[build.MANIFEST_ENV] = str(tmp_path / "none")  # a development checkout: no manifest
    out = run(str(BIN / "table-controller"), "--version", env=env)
    assert out == f"table-controller {version} (unverified build)\n"


def test_a_built_wheel_carries_the_version_to_a_copy_without_git(tmp_path):
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
        "-w", str(tmp_path / "dist"), str(ROOT))  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path / "site")
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        assert f"\nVersion: {build.version()}\n" in z.read(meta).decode()
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "", build.MANIFEST_ENV: "/nonexistent"}
    code = "from controller import build; print(build.build_id().version, build.software())"
    out = run(sys.executable, "-S", "-c", code, env=env, cwd=tmp_path)  # no site: no venv
    assert out == f"{build.version()} {build.version()} (unverified build)\n"


def test_each_start_of_the_jackpot_controller_records_its_build_in_the_ledger(tmp_path):
    config = load_config(ROOT / "config" / "jackpot.example.toml")
    with Ledger(tmp_path / "ledger.sqlite", config) as ledger:
        assert ledger.meta("build") is None
        assert bump_boot(ledger) == 1
        assert ledger.meta("build") == build.software()
        assert ledger.meta("build").startswith(build.version())
