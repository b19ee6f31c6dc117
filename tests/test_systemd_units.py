"""The systemd units and the shoe's udev rule in ``systemd/``.

**systemd-analyze verify, and the program path.** CI runs ``systemd-analyze verify`` on both
units and fails on any warning. verify exits 0 on most warnings (an unknown key, a bad
value: "ignoring"), so the test fails on *any* output, not on the exit code alone. verify
also checks that ``ExecStart=`` names an existing executable, and the units name the
installed place, ``/opt/table-controller/venv/bin/...``, which a CI machine or a developer's
checkout does not have; there the console scripts are in ``<repo>/.venv/bin``. The test
therefore copies each unit into a temporary directory changing one thing: the prefix
``/opt/table-controller/venv`` becomes this interpreter's venv (``sys.prefix``), and it
asserts that this is the only change and that it touches only ``Exec*=`` lines. So the
file verified is the shipped file, and the check that the program exists still means
something: the console script the unit names must really be installed by ``pip install``.

The alternatives were worse: ``--root=DIR`` makes verify resolve the program (and every
unit it loads) under DIR, which would need a stub executable planted at
``DIR/opt/table-controller/venv/bin/...`` (verifying a fake, and nothing about the unit's
real dependencies); and dropping the check altogether is not an option verify has.

The test skips only when ``systemd-analyze`` is not installed, and says why;
``scripts/setup.sh`` installs the ``systemd`` package when it is missing, so CI runs it.

**MemoryDenyWriteExecute=yes** is only safe while nothing in the process needs memory that
is writable and executable. Two checks stand behind it: no shared object in the venv asks
for an executable stack or text relocations (any architecture), and the camera decode
(OpenCV, numpy, pyzbar), ctypes callbacks, the jackpot link's libraries and the driver tests'
imports run under a seccomp filter that refuses what systemd's filter refuses (x86-64 only:
the filter is written with its system call numbers).

**The udev rule**: ``udevadm verify`` exists only from systemd 253 (Debian 12 has 252), so it
runs when present; the rule is always parsed here: keys and operators against udev's, the
link name against the shoe URL of the example configs.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SYSTEMD = ROOT / "systemd"
UNITS = ("table-controller.service", "jackpot-controller.service")
INSTALLED_VENV = "/opt/table-controller/venv"
RULES = SYSTEMD / "99-bj-shoe.rules"


def unit_entries(text: str) -> dict[str, list[tuple[str, str]]]:
    """``{section: [(key, value), ...]}`` in file order; comments and blank lines skipped.
    (Not configparser: a unit repeats keys such as DeviceAllow=.)"""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        assert current is not None, f"{line!r} before any section"
        assert not line.endswith("\\"), "no continuation lines: keep each setting on one line"
        key, _, value = line.partition("=")
        current.append((key.strip(), value.strip()))
    return sections


def values(text: str, section: str, key: str) -> list[str]:
    return [v for k, v in unit_entries(text).get(section, []) if k == key]


def one(text: str, section: str, key: str) -> str:
    found = values(text, section, key)
    assert len(found) == 1, f"[{section}] {key}= set {len(found)} times, expected once"
    return found[0]


# -- systemd-analyze verify --------------------------------------------------------------


@pytest.fixture(scope="module")
def systemd_analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip(
            "systemd-analyze is not installed, so the units cannot be verified here; "
            "scripts/setup.sh installs the systemd package (apt) when it is missing"
        )
    return tool


def for_this_checkout(text: str) -> str:
    """The unit with the installed venv prefix replaced by this interpreter's venv."""
    return text.replace(INSTALLED_VENV + "/", sys.prefix + "/")


def verify(tool: str, directory: Path, name: str) -> str:
    """``systemd-analyze verify`` on ``directory/name``: everything it printed."""
    result = subprocess.run(
        [tool, "verify", str(directory / name)],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SYSTEMD_LOG_COLOR": "0", "SYSTEMD_PAGER": ""},
    )
    printed = (result.stdout + result.stderr).strip()
    if result.returncode and not printed:
        printed = f"exit status {result.returncode}"
    return printed


@pytest.mark.parametrize("name", UNITS)
def test_the_only_change_for_verify_is_the_venv_prefix_of_exec_lines(name):
    text = (SYSTEMD / name).read_text()
    rewritten = for_this_checkout(text)
    changed = [
        (old, new)
        for old, new in zip(text.splitlines(), rewritten.splitlines(), strict=True)
        if old != new
    ]
    assert changed, f"{name} names no program under {INSTALLED_VENV}"
    for old, new in changed:
        assert old.startswith("Exec"), f"the venv prefix outside an Exec line: {old!r}"
        assert new == old.replace(INSTALLED_VENV, sys.prefix)
    program = Path(one(rewritten, "Service", "ExecStart").split()[0])
    assert program.is_file() and os.access(program, os.X_OK), (
        f"{program}: the unit's program is not a console script this checkout installs "
        "(pyproject.toml [project.scripts])"
    )


@pytest.mark.parametrize("name", UNITS)
def test_systemd_analyze_verify_prints_nothing(systemd_analyze, tmp_path, name):
    (tmp_path / name).write_text(for_this_checkout((SYSTEMD / name).read_text()))
    printed = verify(systemd_analyze, tmp_path, name)
    assert printed == "", f"systemd-analyze verify {name}:\n{printed}"


def test_verify_does_report_a_misspelt_directive(systemd_analyze, tmp_path):
    """The harness itself: a warning verify exits 0 on must still fail the check above."""
    text = for_this_checkout((SYSTEMD / UNITS[0]).read_text())
    bad = text.replace("NoNewPrivileges=yes", "NoNewPrivilege=yes")
    assert bad != text
    (tmp_path / "bad.service").write_text(bad)
    assert "NoNewPrivilege" in verify(systemd_analyze, tmp_path, "bad.service")


# -- what the units say -------------------------------------------------------------------

HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "PrivateTmp": "yes",
    "ProtectHome": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
    "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes",
    "LockPersonality": "yes",
    "MemoryDenyWriteExecute": "yes",
    "SystemCallArchitectures": "native",
    "CapabilityBoundingSet": "",
    "UMask": "0027",
    "DevicePolicy": "closed",
    "Type": "notify",
    "NotifyAccess": "main",
    "Restart": "on-failure",
    "WatchdogSec": "30",
}


@pytest.mark.parametrize("name", UNITS)
def test_both_units_are_notify_services_with_the_same_hardening(name):
    text = (SYSTEMD / name).read_text()
    for key, value in HARDENING.items():
        assert one(text, "Service", key) == value, f"{name}: {key}"
    # exit 2, a refusal a technician must act on, is not restarted every 5 s (issue 29)
    assert one(text, "Service", "RestartPreventExitStatus") == "2"
    assert one(text, "Install", "WantedBy") == "multi-user.target"
    service = name.removesuffix(".service")
    assert one(text, "Service", "User") == service
    assert one(text, "Service", "StateDirectory") == service
    assert one(text, "Service", "ConfigurationDirectory") == service


def test_the_table_unit_runs_the_daemon_with_its_devices_and_directories():
    text = (SYSTEMD / "table-controller.service").read_text()
    assert one(text, "Service", "ExecStart") == (
        f"{INSTALLED_VENV}/bin/table-controller run --config /etc/table-controller/table.toml"
    )
    assert one(text, "Service", "TimeoutStopSec") == "20"
    assert one(text, "Service", "Group") == "table-controller"
    groups = set(one(text, "Service", "SupplementaryGroups").split())
    assert groups == {"gpio", "i2c", "dialout", "video"}  # i2c: the expanders' /dev/i2c-*
    assert one(text, "Service", "RuntimeDirectory") == "table-controller"
    assert values(text, "Service", "PrivateDevices") == []  # it would hide /dev/gpiochip*
    allowed = {v.split()[0]: v.split()[1] for v in values(text, "Service", "DeviceAllow")}
    assert allowed == {
        "char-gpiochip": "rw",
        "char-i2c": "rw",
        "char-ttyAMA": "rw",
        "char-ttyUSB": "rw",
        "char-ttyACM": "rw",
        "char-video4linux": "rw",
    }
    assert "modprobe@i2c_dev.service" in values(text, "Unit", "Wants")
    # lgpio's FIFO needs a writable working directory: the runtime directory
    assert one(text, "Service", "WorkingDirectory") == "/run/table-controller"
    assert "LG_WD=/run/table-controller" in values(text, "Service", "Environment")


def test_the_jackpot_unit_runs_the_service_on_the_local_broker():
    text = (SYSTEMD / "jackpot-controller.service").read_text()
    command = one(text, "Service", "ExecStart").split()
    assert command[0] == f"{INSTALLED_VENV}/bin/jackpot-controller"
    options = dict(zip(command[1::2], command[2::2], strict=True))
    assert options == {
        "--config": "/etc/jackpot-controller/jackpot.toml",
        "--ledger": "/var/lib/jackpot-controller/ledger.sqlite",
        "--host": "127.0.0.1",
        "--port": "1883",
        "--username": "jackpot-controller",
        "--password-file": "/etc/jackpot-controller/mqtt-password",
    }
    from jackpot.cli import _parser

    _parser().parse_args(command[1:])  # options the program really takes
    assert one(text, "Service", "PrivateDevices") == "yes"
    assert one(text, "Service", "IPAddressAllow") == "localhost"


# -- the backup units (docs/journal.md, "Backups") ---------------------------------------

BACKUPS = ("table-controller-backup", "jackpot-controller-backup")
BACKUP_HARDENING = {
    key: value
    for key, value in HARDENING.items()
    if key not in ("Type", "NotifyAccess", "Restart", "WatchdogSec", "RestrictAddressFamilies")
} | {
    "Type": "oneshot",
    "RestrictAddressFamilies": "AF_UNIX",
    "PrivateNetwork": "yes",
    "PrivateDevices": "yes",
    "UMask": "0077",
}


@pytest.mark.parametrize("name", BACKUPS)
def test_the_backup_units_pass_verify_with_the_venv_prefix_only_changed(
    systemd_analyze, tmp_path, name
):
    for suffix in (".service", ".timer"):
        (tmp_path / (name + suffix)).write_text(
            for_this_checkout((SYSTEMD / (name + suffix)).read_text())
        )
    text = (SYSTEMD / (name + ".service")).read_text()
    changed = [
        old
        for old, new in zip(text.splitlines(), for_this_checkout(text).splitlines(), strict=True)
        if old != new
    ]
    assert changed and all(line.startswith("ExecStart=") for line in changed)
    for suffix in (".service", ".timer"):
        printed = verify(systemd_analyze, tmp_path, name + suffix)
        assert printed == "", f"systemd-analyze verify {name}{suffix}:\n{printed}"


@pytest.mark.parametrize("name", BACKUPS)
def test_the_backup_units_run_daily_as_the_services_user_hardened(name):
    text = (SYSTEMD / (name + ".service")).read_text()
    for key, value in BACKUP_HARDENING.items():
        assert one(text, "Service", key) == value, f"{name}: {key}"
    service = name.removesuffix("-backup")
    assert one(text, "Service", "User") == service
    assert one(text, "Service", "StateDirectory") == service
    assert values(text, "Install", "WantedBy") == []  # started by its timer only
    timer = (SYSTEMD / (name + ".timer")).read_text()
    assert re.fullmatch(r"\*-\*-\* 0[0-5]:[0-5]\d:00", one(timer, "Timer", "OnCalendar"))
    assert one(timer, "Timer", "Persistent") == "true"
    assert re.fullmatch(r"[1-9]\d*min", one(timer, "Timer", "RandomizedDelaySec"))
    assert one(timer, "Install", "WantedBy") == "timers.target"


def test_the_backup_commands_of_the_units_are_what_the_programs_take():
    from controller.cli import build_parser

    table = one((SYSTEMD / "table-controller-backup.service").read_text(), "Service", "ExecStart")
    command = table.split()
    assert command[0] == f"{INSTALLED_VENV}/bin/table-controller"
    args = build_parser().parse_args(command[1:])
    assert (args.command, args.config, args.to) == (
        "backup", "/etc/table-controller/table.toml", None,
    )  # fmt: skip
    jackpot = one((SYSTEMD / "jackpot-controller-backup.service").read_text(), "Service",
                  "ExecStart").split()  # fmt: skip
    assert jackpot[0] == f"{INSTALLED_VENV}/bin/jackpot-controller" and jackpot[1] == "backup"
    options = dict(zip(jackpot[2::2], jackpot[3::2], strict=True))
    assert options["--ledger"] == "/var/lib/jackpot-controller/ledger.sqlite"
    assert options["--to"].startswith("/var/lib/jackpot-controller/")  # its writable place


# -- MemoryDenyWriteExecute=yes ----------------------------------------------------------

PT_GNU_STACK, PF_X, PT_DYNAMIC, DT_TEXTREL = 0x6474E551, 0x1, 2, 22


def elf_problems(path: Path) -> list[str]:
    """``"execstack"`` and/or ``"textrel"`` when the ELF file at ``path`` needs them."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:  # 64-bit ELF only
        return []
    end = "<" if data[5] == 1 else ">"
    phoff, = struct.unpack_from(end + "Q", data, 0x20)  # fmt: skip
    phentsize, phnum = struct.unpack_from(end + "HH", data, 0x36)
    problems = []
    for i in range(phnum):
        base = phoff + i * phentsize
        p_type, p_flags, p_offset = struct.unpack_from(end + "IIQ", data, base)
        p_filesz, = struct.unpack_from(end + "Q", data, base + 0x20)  # fmt: skip
        if p_type == PT_GNU_STACK and p_flags & PF_X:
            problems.append("execstack")
        if p_type == PT_DYNAMIC:
            for off in range(p_offset, p_offset + p_filesz, 16):
                tag, _ = struct.unpack_from(end + "qQ", data, off)
                if tag == DT_TEXTREL:
                    problems.append("textrel")
                if tag == 0:
                    break
    return problems


def test_no_library_in_the_venv_needs_executable_writable_memory():
    """An executable stack makes glibc mprotect(PROT_EXEC) the stack at dlopen, which the
    filter refuses ("cannot enable executable stack"); text relocations need the same."""
    site = Path(sys.prefix) / "lib"
    found = {}
    checked = 0
    for path in site.rglob("*.so*"):
        if path.is_file() and not path.is_symlink():
            checked += 1
            problems = elf_problems(path)
            if problems:
                found[str(path.relative_to(site))] = problems
    assert checked > 10, "no compiled libraries found: is this the project's venv?"
    assert found == {}


# A seccomp filter refusing what systemd's MemoryDenyWriteExecute=yes refuses
# (systemd.exec(5)): mmap with PROT_WRITE and PROT_EXEC, mprotect and pkey_mprotect with
# PROT_EXEC, shmat with SHM_EXEC; all with EPERM. x86-64 system call numbers.
NR = {"mmap": 9, "mprotect": 10, "pkey_mprotect": 329, "shmat": 30, "read": 0}
PROT_WRITE, PROT_EXEC, SHM_EXEC = 2, 4, 0o100000
ALLOW, EPERM = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
ARG2 = 16 + 2 * 8  # offsetof(struct seccomp_data, args[2]): the low half, little-endian
LD, AND, JEQ, RET = 0x20, 0x54, 0x15, 0x06  # BPF_LD|W|ABS, ALU|AND|K, JMP|JEQ|K, RET|K
MDWE_SOURCE = [
    ("ld", 0),
    ("jeq", NR["mmap"], "mmap", None),
    ("jeq", NR["mprotect"], "exec", None),
    ("jeq", NR["pkey_mprotect"], "exec", None),
    ("jeq", NR["shmat"], "shmat", None),
    ("ret", ALLOW),
    "mmap",
    ("ld", ARG2),
    ("and", PROT_WRITE | PROT_EXEC),
    ("jeq", PROT_WRITE | PROT_EXEC, "deny", "allow"),
    "exec",
    ("ld", ARG2),
    ("and", PROT_EXEC),
    ("jeq", PROT_EXEC, "deny", "allow"),
    "shmat",
    ("ld", ARG2),
    ("and", SHM_EXEC),
    ("jeq", SHM_EXEC, "deny", "allow"),
    "deny",
    ("ret", EPERM),
    "allow",
    ("ret", ALLOW),
]


def assemble(source) -> list[tuple[int, int, int, int]]:
    """Labels (strings) and instructions to classic BPF ``(code, jt, jf, k)``."""
    labels, index = {}, 0
    for item in source:
        if isinstance(item, str):
            labels[item] = index
        else:
            index += 1
    program = []
    for item in source:
        if isinstance(item, str):
            continue
        op, k, *targets = item
        if op == "jeq":
            here = len(program) + 1
            jt, jf = (0 if t is None else labels[t] - here for t in targets)
            program.append((JEQ, jt, jf, k))
        else:
            program.append(({"ld": LD, "and": AND, "ret": RET}[op], 0, 0, k))
    return program


def run_bpf(program, nr: int, arg2: int) -> int:
    """What the kernel would answer: a tiny interpreter for the four instructions used."""
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        pc += 1
        if code == LD:
            acc = {0: nr, ARG2: arg2}[k]
        elif code == AND:
            acc &= k
        elif code == JEQ:
            pc += jt if acc == k else jf
        else:
            return k


MDWE = assemble(MDWE_SOURCE)


@pytest.mark.parametrize(
    ("call", "arg2", "answer"),
    [
        ("mmap", PROT_WRITE | PROT_EXEC, EPERM),
        ("mmap", 1 | PROT_WRITE | PROT_EXEC, EPERM),
        ("mmap", 1 | PROT_EXEC, ALLOW),  # how ld.so maps a library's code
        ("mmap", 1 | PROT_WRITE, ALLOW),
        ("mprotect", 1 | PROT_EXEC, EPERM),
        ("mprotect", 1, ALLOW),
        ("pkey_mprotect", PROT_EXEC, EPERM),
        ("shmat", SHM_EXEC, EPERM),
        ("shmat", 0, ALLOW),
        ("read", PROT_EXEC, ALLOW),
    ],
)
def test_the_filter_refuses_what_memory_deny_write_execute_refuses(call, arg2, answer):
    assert run_bpf(MDWE, NR[call], arg2) == answer


UNDER_FILTER = textwrap.dedent(
    """
    import ctypes, json, mmap, struct, sys
    program = json.loads(sys.argv[1])
    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    code = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in program))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(Fprog(len(program),
            ctypes.addressof(code))), 0, 0):  # PR_SET_NO_NEW_PRIVS; PR_SET_SECCOMP, FILTER
        sys.exit(f"cannot install the filter: errno {ctypes.get_errno()}")
    try:
        mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        sys.exit("the filter let a writable executable mapping through")
    except OSError:
        pass
    assert ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 7)() == 7   # libffi closures
    import cv2, numpy, serial, gpiozero, paho.mqtt.client, jsonschema   # noqa
    from gpiozero.pins.mock import MockFactory
    from test_camera import card_frame, read    # OpenCV + numpy + pyzbar (ctypes to libzbar)
    assert read(card_frame("QH")) == ["QH"]
    assert read(card_frame("10D", "code128", angle=20.0, blur=1.0)) == ["10D"]
    ok, png = cv2.imencode(".png", card_frame("AS"))
    assert ok and read(cv2.imdecode(png, cv2.IMREAD_COLOR)) == ["AS"]
    jsonschema.validate({"seq": 1}, {"type": "object", "required": ["seq"]})
    import jackpot.service, drivers.shoe, drivers.gpio   # noqa
    gpiozero.Button(4, pin_factory=MockFactory()).close()
    print("all ran under the filter")
    """
)


@pytest.mark.skipif(
    platform.machine() != "x86_64" or sys.platform != "linux",
    reason="the filter is written with x86-64 system call numbers",
)
def test_the_camera_and_link_libraries_run_without_writable_executable_memory():
    result = subprocess.run(
        [sys.executable, "-c", UNDER_FILTER, json.dumps(MDWE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all ran under the filter" in result.stdout


# -- the udev rule ------------------------------------------------------------------------

MATCH_KEYS = re.compile(r"^(ACTION|KERNEL|SUBSYSTEM|DRIVER|KERNELS|SUBSYSTEMS|DRIVERS"
                        r"|ATTR\{[\w.-]+\}|ATTRS\{[\w.-]+\}|ENV\{\w+\})$")  # fmt: skip
ASSIGN_KEYS = {"SYMLINK": {"+="}, "GROUP": {"=", ":="}, "MODE": {"=", ":="}, "OWNER": {"="}}
PAIR = re.compile(r'\s*([A-Z]+(?:\{[^}]*\})?)\s*(==|!=|\+=|-=|:=|=)\s*"([^"]*)"\s*(?:,|$)')


def rule_pairs(line: str) -> list[tuple[str, str, str]]:
    """``KEY op "value"`` triples of one rule line; the whole line must be such pairs."""
    pairs, pos = [], 0
    while pos < len(line):
        match = PAIR.match(line, pos)
        assert match, f"not udev rule syntax at {line[pos:]!r}"
        pairs.append(match.groups())
        pos = match.end()
    return pairs


def shoe_rules() -> tuple[list[str], list[str]]:
    """(active rule lines, commented-out alternatives) of 99-bj-shoe.rules."""
    active, alternatives = [], []
    for raw in RULES.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            active.append(line)
        elif line.startswith("#") and "SYMLINK" in line:
            alternatives.append(line.lstrip("#").strip())
    return active, alternatives


def check_rule(line: str) -> dict[str, str]:
    pairs = rule_pairs(line)
    keys = [key for key, _, _ in pairs]
    assert len(keys) == len(set(keys)), f"a key twice: {line}"
    for key, op, _ in pairs:
        if key in ASSIGN_KEYS:
            assert op in ASSIGN_KEYS[key], f"{key}{op}: wrong operator"
        else:
            assert MATCH_KEYS.match(key), f"unknown key {key}"
            assert op in ("==", "!="), f"{key}{op}: a match key needs == or !="
    rule = {key: value for key, _, value in pairs}
    assert rule["SUBSYSTEM"] == "tty"  # the tty node, not the USB device above it
    assert (rule["SYMLINK"], rule["GROUP"], rule["MODE"]) == ("bj-shoe", "dialout", "0660")
    return rule


def test_the_udev_rule_names_one_shoe_port_bj_shoe():
    active, alternatives = shoe_rules()
    assert len(active) == 1, "exactly one active rule, or two ports fight over /dev/bj-shoe"
    usb = check_rule(active[0])
    assert re.fullmatch(r"[0-9a-f]{4}", usb["ATTRS{idVendor}"])  # sysfs writes lower-case hex
    assert re.fullmatch(r"[0-9a-f]{4}", usb["ATTRS{idProduct}"])
    assert (usb["ATTRS{idVendor}"], usb["ATTRS{idProduct}"]) == ("0403", "6001")  # FT232R
    assert usb["ATTRS{serial}"]
    assert len(alternatives) == 1
    assert check_rule(alternatives[0])["KERNEL"] == "ttyAMA0"


def test_the_link_is_the_shoe_url_of_the_example_configs():
    urls = {}
    for path in sorted((ROOT / "config").glob("*.toml")):
        shoe = tomllib.loads(path.read_text()).get("shoe", {})
        if str(shoe.get("url", "")).startswith("/dev/bj-"):
            urls[path.name] = shoe["url"]
    if not urls:
        pytest.skip("no example config names a /dev/bj-* shoe")
    assert set(urls.values()) == {"/dev/bj-shoe"}, urls


def test_udevadm_verify_accepts_the_rule_where_it_exists(tmp_path):
    udevadm = shutil.which("udevadm")
    if udevadm is None:
        pytest.skip("udevadm is not installed (package udev); the rule is parsed above")
    version = subprocess.run([udevadm, "--version"], capture_output=True, text=True).stdout
    if not version.strip().isdigit() or int(version.strip()) < 253:
        pytest.skip(f"udevadm {version.strip()}: 'udevadm verify' needs systemd 253 or newer")
    _, alternatives = shoe_rules()
    alternative = tmp_path / "99-bj-shoe-uart.rules"
    alternative.write_text(alternatives[0] + "\n")
    for path in (RULES, alternative):
        result = subprocess.run(
            [udevadm, "verify", str(path)], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stdout + result.stderr
