"""The technician's pages in hardware/ agree with the config and with the repository:
the wiring diagram is valid SVG naming the right header pins, every Pi pin and every spot
board line of config/gpio.example.toml is in hardware/pinout.md with its function, the pin
maps of the other games keep the same console and boards, and every link and repository path
the pages give exists."""

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
PIN_MAPS = sorted((ROOT / "config").glob("gpio.*.toml"))

# BCM GPIO number -> physical pin of the 40-pin header (every Pi with one: Pi 2 to Pi 5)
PHYSICAL = {2: 3, 3: 5, 4: 7, 5: 29, 6: 31, 7: 26, 8: 24, 9: 21, 10: 19, 11: 23, 12: 32,
            13: 33, 14: 8, 15: 10, 16: 36, 17: 11, 18: 12, 19: 35, 20: 38, 21: 40, 22: 15,
            23: 16, 24: 18, 25: 22, 26: 37, 27: 13}  # fmt: skip
# MCP23017 line -> chip pin (GPB0-7 are pins 1-8, GPA0-7 pins 21-28)
CHIP_PIN = {f"GPA{i}": 21 + i for i in range(8)} | {f"GPB{i}": 1 + i for i in range(8)}
DEFAULT_SAFE = {"lockout": "on", "alarm": "blink"}  # others: off (hardware/gpio.md)


def example_pins() -> dict[str, tuple[int, dict]]:
    """The Pi pins of the example: ``{"console.next": (8, {}), "lights.alarm": (23, {...}),
    "expanders.spot1": (16, {...}), "i2c.1.sda": (2, {})}``."""
    pins = {}
    for section in ("sensors", "console", "lights"):
        for key, value in EXAMPLE[section].items():
            spec = value if isinstance(value, dict) else {"pin": value}
            if "pin" in spec:
                pins[f"{section}.{key}"] = (spec["pin"], spec)
    for name, spec in EXAMPLE["expanders"].items():
        pins[f"expanders.{name}"] = (spec["interrupt"], spec)
    if any(spec.get("bus", 1) == 1 for spec in EXAMPLE["expanders"].values()):
        pins["i2c.1.sda"], pins["i2c.1.scl"] = (2, {}), (3, {})
    return pins


def example_lines() -> dict[str, tuple[str, str, dict]]:
    """The expander lines of the example: ``{"sensors.3.main": ("spot3", "GPA0", {...})}``."""
    lines = {}
    for section in ("sensors", "console", "lights"):
        for key, value in EXAMPLE[section].items():
            if isinstance(value, dict) and "expander" in value:
                lines[f"{section}.{key}"] = (value["expander"], value["line"], value)
    return lines


def tables(first: str) -> dict[str, dict[str, str]]:
    """hardware/pinout.md's tables whose first column is ``first``, by config key."""
    rows, header = {}, None
    for line in (HARDWARE / "pinout.md").read_text().splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] in ("BCM", "line"):
            header = cells if cells[0] == first else None
        elif header and not set(cells[0]) <= {"-", ":"}:
            row = dict(zip(header, cells, strict=True))
            rows[row["config key"].strip("`")] = row
    return rows


def test_every_example_pin_is_in_the_pinout_with_its_function():
    rows = tables("BCM")
    pins = example_pins()
    assert set(rows) == set(pins), "pinout.md lists exactly the example's Pi pins"
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
            assert "light" in row["function"], key
        elif section == "i2c":
            assert "I2C bus 1" in row["function"], key
        else:
            assert row["direction"] == "input", key
            assert row["pull"].startswith("up"), key  # bare numbers: internal pull-up
            assert row["active"] == "low", key
            word = {"expanders": "interrupt"}.get(section, "button")
            if key == "console.supervisor_key":
                word = "key switch"
            assert word in row["function"], key
            if section == "expanders":
                assert f"0x{spec['address']:02x}" in row["function"], key
        assert row["wire colour"], key


def test_every_spot_board_line_is_in_the_pinout_the_same_on_every_board():
    rows = tables("line")
    lines = example_lines()
    # console buttons on one board each: JACKPOT PAID on spot 1's GPA7 (issue 28), RECALL LAST
    # on spot 2's GPA7 (issue 30)
    single = {k: v[:2] for k, v in lines.items() if not re.search(r"\.(\d)(\.|$)", k)}
    assert single == {
        "console.jackpot_paid": ("spot1", "GPA7"),
        "console.recall_last": ("spot2", "GPA7"),
    }
    pinout = (HARDWARE / "pinout.md").read_text()
    assert "`console.jackpot_paid`" in pinout and "spot 1's board, GPA7" in pinout
    assert "`console.recall_last`" in pinout and "spot 2's board, GPA7" in pinout
    lines = {k: v for k, v in lines.items() if k not in single}
    for key, (expander, line, _spec) in lines.items():
        spot = re.search(r"\.(\d)(\.|$)", key)
        assert spot, key
        pattern = key.replace(f".{spot.group(1)}", ".N", 1)
        assert pattern in rows, f"{key} ({expander}.{line}) is not in pinout.md as {pattern}"
        row = rows[pattern]
        assert expander == f"spot{spot.group(1)}", f"{key}: spot N is on spot board N"
        assert row["line"] == line and row["chip pin"] == str(CHIP_PIN[line]), key
        if key.startswith("lights."):
            assert (row["direction"], row["active"], row["safe state"]) == ("output", "high", "off")
        else:
            assert (row["direction"], row["active"]) == ("input", "low"), key
    used = {pattern for pattern in rows if pattern != "-"}
    assert len(lines) == 7 * len(used), "every board line the pinout lists is used on all seven"


def test_the_table_example_uses_the_same_pin_map():
    table = tomllib.loads((ROOT / "config" / "table.example.toml").read_text()).get("gpio")
    if table is None:
        pytest.skip("config/table.example.toml has no [gpio] section")
    for section in ("expanders", "sensors", "console", "lights"):
        assert table[section] == EXAMPLE[section], section


@pytest.mark.parametrize("path", PIN_MAPS, ids=lambda p: p.name)
def test_every_games_pin_map_keeps_the_console_and_the_boards(path):
    """One table build for every game: the same Pi pins for the console and table lights,
    the same seven spot boards; and hardware/gpio.md names the file."""
    gpio = tomllib.loads(path.read_text())["gpio"]
    for key, pin in EXAMPLE["console"].items():
        if isinstance(pin, int):
            assert gpio["console"][key] == pin, (path.name, key)
    for key in ("lockout", "alarm"):
        assert gpio["lights"][key] == EXAMPLE["lights"][key], (path.name, key)
    for name, spec in EXAMPLE["expanders"].items():
        assert gpio["expanders"][name] == spec, (path.name, name)
    assert f"config/{path.name}" in (HARDWARE / "gpio.md").read_text()


def test_the_wiring_diagram_is_svg_naming_the_example_pins():
    root = ET.parse(HARDWARE / "wiring.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = " ".join("".join(node.itertext()) for node in root.iter())
    labels = re.findall(r"GPIO(\d+) \(pin (\d+)\)", texts)
    assert labels, "no 'GPIOn (pin m)' labels"
    for bcm, physical in labels:
        assert PHYSICAL[int(bcm)] == int(physical), f"GPIO{bcm} is pin {PHYSICAL[int(bcm)]}"
    assert {int(bcm) for bcm, _ in labels} == {pin for pin, _ in example_pins().values()}
    for word in ("ULN2803A", "K1 NC contact", "Supervisor key switch", "Bet sensor", "MCP23017"):
        assert word in texts
    for spec in EXAMPLE["expanders"].values():
        assert f"MCP23017 0x{spec['address']:02x}" in texts


def test_the_bill_of_materials_counts_the_example():
    """hardware/bom.md orders what config/gpio.example.toml wires."""
    bom = (HARDWARE / "bom.md").read_text()
    boards = len(EXAMPLE["expanders"])
    sensors = len(EXAMPLE["sensors"])
    buttons = sum(1 for key in EXAMPLE["console"] if key != "supervisor_key")
    assert re.search(rf"\| {boards} \| I/O expander", bom), "one MCP23017 per spot board"
    assert re.search(rf"\| {sensors} \| bet sensor", bom), "a bet sensor per circle"
    assert re.search(rf"\| {buttons} \| arcade push button", bom), "every console button"
    lamps = sum(1 for key in EXAMPLE["lights"] if key != "alarm")
    assert re.search(rf"\| {lamps} \| lamp or LED module", bom), "every lamp but the tower"


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
