"""The technician's pages in hardware/ agree with the config and with the repository:
the wiring diagram is valid SVG naming the right header pins, every pin of
config/gpio.example.toml is in hardware/pinout.md with its function, and every link and
repository path the pages give exists."""

from __future__ import annotations

import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HARDWARE = ROOT / "hardware"
PAGES = sorted(HARDWARE.glob("*.md"))
EXAMPLE = tomllib.loads((ROOT / "config" / "gpio.example.toml").read_text())["gpio"]

# BCM GPIO number -> physical pin of the 40-pin header (every Pi with one: Pi 2 to Pi 5)
PHYSICAL = {2: 3, 3: 5, 4: 7, 5: 29, 6: 31, 7: 26, 8: 24, 9: 21, 10: 19, 11: 23, 12: 32,
            13: 33, 14: 8, 15: 10, 16: 36, 17: 11, 18: 12, 19: 35, 20: 38, 21: 40, 22: 15,
            23: 16, 24: 18, 25: 22, 26: 37, 27: 13}  # fmt: skip
DEFAULT_SAFE = {"lockout": "on", "alarm": "blink"}  # others: off (hardware/gpio.md)


def example_pins() -> dict[str, tuple[int, dict]]:
    """``{"sensors.1.main": (4, {}), "lights.alarm": (23, {"active_high": False, ...})}``."""
    pins = {}
    for section in ("sensors", "console", "lights"):
        for key, value in EXAMPLE[section].items():
            spec = value if isinstance(value, dict) else {"pin": value}
            pins[f"{section}.{key}"] = (spec["pin"], spec)
    return pins


def pinout_rows() -> dict[str, dict[str, str]]:
    """hardware/pinout.md's pin tables, by config key: the cells by column name."""
    rows, header = {}, None
    for line in (HARDWARE / "pinout.md").read_text().splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] == "BCM":
            header = cells
        elif header and not set(cells[0]) <= {"-", ":"}:
            row = dict(zip(header, cells, strict=True))
            rows[row["config key"].strip("`")] = row
    return rows


def test_every_example_pin_is_in_the_pinout_with_its_function():
    rows = pinout_rows()
    pins = example_pins()
    assert set(rows) == set(pins), "pinout.md lists exactly the example's pins"
    for key, (pin, spec) in pins.items():
        row = rows[key]
        section, name = key.split(".", 1)
        assert row["BCM"] == str(pin), key
        assert row["pin"] == str(PHYSICAL[pin]), f"{key}: GPIO {pin} is header pin {PHYSICAL[pin]}"
        if section == "lights":
            assert row["direction"] == "output", key
            assert row["active"] == ("high" if spec.get("active_high", True) else "low"), key
            safe = spec.get("safe", DEFAULT_SAFE.get(name, "off"))
            assert row["safe state"] == safe, key
        else:
            assert row["direction"] == "input", key
            assert row["pull"].startswith("up"), key  # bare numbers: internal pull-up
            assert row["active"] == "low", key
        word = {"sensors": "bet sensor", "lights": "light"}.get(section, "button")
        if key == "console.supervisor_key":
            word = "key switch"
        assert word in row["function"], key
        assert row["wire colour"], key


def test_the_table_example_uses_the_same_pin_map():
    table = tomllib.loads((ROOT / "config" / "table.example.toml").read_text()).get("gpio")
    if table is None:
        pytest.skip("config/table.example.toml has no [gpio] section")
    for section in ("sensors", "console", "lights"):
        assert table[section] == EXAMPLE[section], section


def test_the_wiring_diagram_is_svg_naming_the_example_pins():
    root = ET.parse(HARDWARE / "wiring.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = " ".join("".join(node.itertext()) for node in root.iter())
    labels = re.findall(r"GPIO(\d+) \(pin (\d+)\)", texts)
    assert labels, "no 'GPIOn (pin m)' labels"
    for bcm, physical in labels:
        assert PHYSICAL[int(bcm)] == int(physical), f"GPIO{bcm} is pin {PHYSICAL[int(bcm)]}"
    assert {int(bcm) for bcm, _ in labels} == {pin for pin, _ in example_pins().values()}
    for word in ("ULN2803A", "K1 NC contact", "Supervisor key switch", "Bet sensor"):
        assert word in texts


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
REPO_PATH = re.compile(
    r"`((?:hardware|config|systemd|docs|tests|drivers|controller|scripts|bench)/[\w./-]*)`"
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page.name}: link to {target} resolves to nothing"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_repository_path_named_exists(page):
    for path in REPO_PATH.findall(page.read_text()):
        assert (ROOT / path).exists(), f"{page.name} names `{path}`, which does not exist"
