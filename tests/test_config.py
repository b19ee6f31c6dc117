"""The table config file: every example passes, every mistake is named with file, section,
key and what is allowed (docs/config.md). Real files in tmp_path; no mocks."""

from __future__ import annotations

import hashlib
import re
from datetime import time as dt_time
from pathlib import Path

import pytest
from conftest import run_cli

from controller.config import (
    KEYS,
    ConfigError,
    ConfigErrors,
    check_config,
    check_config_file,
    check_paths,
    link_keys,
    load_table_config,
    read_password,
)
from controller.journal.rotation import GamingDay
from controller.link.signing import make_link_key
from controller.web.auth import hash_password
from drivers.gpio_pins import load_pin_map
from jackpot.cli import main as jackpot_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "config" / "table.example.toml"
EXAMPLE_TEXT = EXAMPLE.read_text(encoding="utf-8")


def edited(*replacements: tuple[str, str], text: str = EXAMPLE_TEXT) -> str:
    """The example with each ``(old, new)`` replaced once; an ``old`` not in it is a test
    error, so an edit never silently does nothing."""
    for old, new in replacements:
        assert old in text, f"{old!r} is not in the example"
        text = text.replace(old, new, 1)
    return text


LAST_SENSOR = '"7.blazing_7s" = { expander = "spot7", line = "GPA3" }'
"""The last line of the example's [gpio.sensors]: a test adds keys after it."""


def with_pin_map(text: str, game: str) -> str:
    """``text`` (a table config) with its pin map swapped for ``config/gpio.GAME.toml``'s."""
    pin_map = (ROOT / "config" / f"gpio.{game}.toml").read_text(encoding="utf-8")
    gpio = pin_map[pin_map.index("[gpio]\n") :].replace(
        "[gpio]\n", '[gpio]\npin_factory = "default"\n', 1
    )
    start, end = text.index("[gpio]\n"), text.index("[camera]")
    return text[:start] + gpio + "\n" + text[end:]


def write(tmp_path: Path, *replacements: tuple[str, str], name: str = "table.toml") -> Path:
    path = tmp_path / name
    path.write_text(edited(*replacements), encoding="utf-8")
    return path


def errors_of(path: Path) -> list[ConfigError]:
    with pytest.raises(ConfigErrors) as caught:
        load_table_config(path)
    return caught.value.errors


def one_error(path: Path, section: str, key: str | None) -> ConfigError:
    errors = errors_of(path)
    assert len(errors) == 1, [str(e) for e in errors]
    error = errors[0]
    assert (error.source, error.section, error.key) == (str(path), section, key), str(error)
    where = f"{path}: [{section}]" + (f" key '{key}'" if key else "")
    assert str(error).startswith(where + ": "), str(error)
    return error


def on_this_machine(tmp_path: Path, password: str = "s3cret\n") -> Path:
    """The example with its files in tmp_path: password, CA, data_dir."""
    secret = tmp_path / "mqtt-password"
    secret.write_text(password, encoding="utf-8")
    secret.chmod(0o640)  # as the installer lays it out (root:table-controller)
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    key = tmp_path / "link-signing.key"
    make_link_key(key, "hcm-bj-07-1")
    return write(
        tmp_path,
        ('"/etc/table-controller/mqtt-password"', f'"{secret}"'),
        ('"/etc/table-controller/ca.crt"', f'"{ca}"'),
        ('"/etc/table-controller/link-signing.key"', f'"{key}"'),
        ('"/var/lib/table-controller"', '"data"'),  # relative: beside the config file
    )


# -- the example -----------------------------------------------------------------------------


def test_the_table_example_loads_as_documented():
    config = load_table_config(EXAMPLE)
    assert (config.table_id, config.property, config.game) == ("hcm-bj-07", "hcm", "pa-standard")
    assert config.rules.name == "pa-standard"
    s = config.settings
    assert (s.spots, s.card_source) == (7, "shoe")
    assert (s.main_minimum, s.main_maximum, s.side_minimum, s.side_maximum) == (
        1000,
        100_000,
        100,
        10_000,
    )
    assert config.data_dir == Path("/var/lib/table-controller")
    assert config.journal_path == Path("/var/lib/table-controller/journal.sqlite")
    assert config.tick_ms == 100
    assert config.shoe.url == "/dev/bj-shoe"
    assert (config.shoe.heartbeat_timeout_ms, config.shoe.fault_after_s) == (3000, 30)
    assert (config.shoe.reconnect_min_ms, config.shoe.reconnect_max_ms) == (200, 5000)
    assert config.gpio.pin_factory == "default"
    assert config.camera.enabled is False
    assert config.camera.source == "/dev/video0"
    mqtt = config.mqtt
    assert (mqtt.host, mqtt.port, mqtt.username) == ("hcm.jackpot.example", 8883, "hcm-bj-07")
    assert mqtt.password_file == Path("/etc/table-controller/mqtt-password")
    assert mqtt.tls_ca == Path("/etc/table-controller/ca.crt")
    assert (mqtt.keepalive_s, mqtt.window, mqtt.link_fault_after_s, mqtt.ack_timeout_s) == (
        30,
        256,
        300,
        30,
    )
    assert (config.web.bind, config.web.port, config.web.password_hash) == ("127.0.0.1", 8080, "")
    assert config.control.socket == Path("/run/table-controller/control.sock")
    assert config.checksum == hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()
    assert config.source == str(EXAMPLE)


def test_the_table_example_has_exactly_the_pins_of_the_gpio_example(pa):
    from controller.table.machine import table_circles

    pins = load_pin_map(ROOT / "config" / "gpio.example.toml", circles=table_circles(pa), spots=7)
    table = load_table_config(EXAMPLE).gpio.pin_map
    assert table.pins() == pins.pins()
    assert (table.inputs, table.lights) == (pins.inputs, pins.lights)
    assert table.button_debounce_ms == pins.button_debounce_ms == 30


EXAMPLES = sorted(
    {*ROOT.glob("config/**/*.toml"), *ROOT.glob("docs/**/*.toml")}
    | {*ROOT.glob("controller/profiles/*.toml")},
)


def test_every_example_config_in_the_repo_passes_check_config(capsys):
    assert EXAMPLE in EXAMPLES and len(EXAMPLES) >= 7
    jackpot = [p for p in EXAMPLES if check_config_file(p, files=False)[0] == "jackpot"]
    assert ROOT / "config" / "jackpot.example.toml" in jackpot
    names = [str(p.relative_to(ROOT)) for p in EXAMPLES if p not in jackpot]
    result = run_cli("check-config", *names, "--no-files")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert [line.split(": ok (", 1)[0] for line in lines] == names
    assert any(
        line.startswith("config/table.example.toml: ok (table hcm-bj-07, game pa-standard (pack")
        for line in lines
    )
    # the jackpot controller's configs: by the product that reads them
    assert jackpot_cli(["check-config", *map(str, jackpot)]) == 0
    printed = capsys.readouterr()
    assert printed.err == ""
    assert [line.split(": ok (jackpot: ", 1)[0] for line in printed.out.splitlines()] == [
        str(p) for p in jackpot
    ]


def test_sections_left_out_take_their_defaults(tmp_path):
    text = EXAMPLE_TEXT.split("\n[camera]", 1)[0]
    text = re.sub(r"\n(side_m\w+|tick_ms|data_dir|card_source) = [^\n]*", "", text)
    mqtt = '\n[mqtt]\nhost = "127.0.0.1"\n'
    assert "side_minimum" not in text and "tick_ms" not in text
    path = tmp_path / "table.toml"
    path.write_text(text + mqtt, encoding="utf-8")
    config = load_table_config(path)
    assert (config.settings.side_minimum, config.settings.side_maximum) == (100, 10_000)
    assert config.camera.enabled is False and config.camera.forget_after_frames == 5
    assert (config.web.bind, config.web.port) == ("127.0.0.1", 8080)
    assert config.control.socket == Path("/run/table-controller/control.sock")
    assert (config.mqtt.port, config.mqtt.tls_ca, config.mqtt.username) == (1883, None, "hcm-bj-07")
    assert config.mqtt.password_file == Path("/etc/table-controller/mqtt-password")
    assert (config.settings.card_source, config.tick_ms) == ("shoe", 100)
    assert config.data_dir == Path("/var/lib/table-controller")


# -- every error, named ----------------------------------------------------------------------


def test_errors_in_several_sections_are_all_reported(tmp_path):
    path = write(
        tmp_path,
        ("spots = 7 ", "spots = 9 "),
        ("heartbeat_timeout_ms = 3000", 'heartbeat_timeout_ms = "3s"'),
        ('pin_factory = "default"', 'pin_factory = "gpiod"'),
        ("forget_after_frames = 5", "forget_after_frames = 0"),
        ("port = 8883", "port = 70000"),
        ("keepalive_s = 30", "keepalive_s = 1"),
        ("port = 8080", "port = 0"),
    )
    errors = errors_of(path)
    got = {(e.section, e.key): e.problem for e in errors}
    assert list(got) == [
        ("table", "spots"),
        ("shoe", "heartbeat_timeout_ms"),
        ("gpio", "pin_factory"),
        ("camera", "forget_after_frames"),
        ("mqtt", "port"),
        ("mqtt", "keepalive_s"),
        ("web", "port"),
    ]
    assert got[("table", "spots")] == "must be a whole number from 1 to 7, got 9"
    assert "from 100 to 60000 (ms), got '3s'" in got[("shoe", "heartbeat_timeout_ms")]
    assert "default, mock, lgpio, rpigpio, pigpio, native" in got[("gpio", "pin_factory")]
    assert "from 1 to 1000" in got[("camera", "forget_after_frames")]
    assert "from 1 to 65535, got 70000" in got[("mqtt", "port")]
    assert "from 5 to 3600 (s), got 1" in got[("mqtt", "keepalive_s")]
    assert "from 1 to 65535, got 0" in got[("web", "port")]
    for error in errors:
        assert str(error).startswith(f"{path}: [{error.section}] key '{error.key}': ")
    message = str(ConfigErrors(errors))
    assert message.splitlines() == [str(e) for e in errors]


def test_check_config_prints_every_error_one_per_line_and_exits_2(tmp_path):
    path = write(
        tmp_path,
        ("spots = 7 ", "spots = 0 "),
        ('url = "/dev/bj-shoe"', 'url = "bj-shoe"'),
        ("window = 256", "window = 0"),
    )
    result = run_cli("check-config", str(path), "--no-files")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 3, result.stderr
    assert lines[0] == f"{path}: [table] key 'spots': must be a whole number from 1 to 7, got 0"
    assert lines[1].startswith(f"{path}: [shoe] key 'url': 'bj-shoe' is neither a device path")
    assert lines[2].startswith(f"{path}: [mqtt] key 'window': must be a whole number from 1 to")
    assert "Traceback" not in result.stderr


def test_an_unknown_key_names_the_keys_allowed(tmp_path):
    path = write(tmp_path, ("reconnect_min_ms = 200", "reconnect_min_ms = 200\nbaud = 9600"))
    error = one_error(path, "shoe", "baud")
    assert error.problem == (
        "unknown key; keys of [shoe] are: url, heartbeat_timeout_ms, reconnect_min_ms, "
        "reconnect_max_ms, fault_after_s"
    )


def test_an_unknown_gpio_key_names_pin_factory_too(tmp_path):
    path = write(tmp_path, ("blink_ms = 500", "blink_ms = 500\nblink = 500"))
    error = one_error(path, "gpio", "blink")
    assert "pin_factory, game, button_debounce_ms" in error.problem and "lights" in error.problem


def test_an_unknown_section_and_a_missing_one(tmp_path):
    text = edited(("[web]", "[webb]"))
    text = text.replace("\n[shoe]\n", "\n[shoe_reader]\n", 1)
    path = tmp_path / "table.toml"
    path.write_text(text, encoding="utf-8")
    got = {(e.section, e.key): e.problem for e in errors_of(path)}
    assert got == {
        ("shoe_reader", None): got[("shoe_reader", None)],
        ("webb", None): got[("webb", None)],
        ("shoe", None): "missing: the file needs a [shoe]",
    }
    assert got[("webb", None)].startswith(
        "unknown section; sections are: table, shoe, gpio, camera, mqtt, web, control"
    )


def test_a_missing_required_key(tmp_path):
    path = write(tmp_path, ('url = "/dev/bj-shoe" ', ""))
    error = one_error(path, "shoe", "url")
    assert error.problem.startswith("missing; it is required, e.g. url = ")


@pytest.mark.parametrize(
    "money", ['"ten dollars"', '"$10.5.0"', '"$1,0000"', "10.5", '"-$5"', "true"]
)
def test_bad_money_text_says_how_to_write_it(tmp_path, money):
    path = write(tmp_path, ('main_minimum = "$10"', f"main_minimum = {money}"))
    error = one_error(path, "table", "main_minimum")
    assert "is not an amount" in error.problem
    assert '"$10", "$1,000" or "$2.50"' in error.problem and "whole cents" in error.problem


def test_money_as_cents_and_with_cents(tmp_path):
    path = write(
        tmp_path,
        ('main_minimum = "$10"', "main_minimum = 2500"),
        ('side_minimum = "$1"', 'side_minimum = "$2.50"'),
    )
    settings = load_table_config(path).settings
    assert (settings.main_minimum, settings.side_minimum) == (2500, 250)


@pytest.mark.parametrize("money", ['"$0"', "0", '"$0.005"'])
def test_money_below_a_cent_is_refused(tmp_path, money):
    path = write(tmp_path, ('side_minimum = "$1"', f"side_minimum = {money}"))
    assert "must be at least $0.01" in one_error(path, "table", "side_minimum").problem


def test_a_minimum_above_its_maximum(tmp_path):
    path = write(
        tmp_path,
        ('main_minimum = "$10"', 'main_minimum = "$2,000"'),
        ('side_maximum = "$100"', 'side_maximum = "$0.50"'),
    )
    got = {(e.section, e.key): e.problem for e in errors_of(path)}
    assert got == {
        ("table", "main_minimum"): "$2,000 is above main_maximum $1,000: the minimum must be at "
        "most the maximum",
        ("table", "side_minimum"): "$1 is above side_maximum $0.50: the minimum must be at "
        "most the maximum",
    }


@pytest.mark.parametrize(
    "table_id", ["HCM-bj-07", "hcm_bj_07", "hcm", "hcm-bj-07-a-b", "h-bj-07", "hcm-bj 07", ""]
)
def test_a_bad_table_id(tmp_path, table_id):
    path = write(tmp_path, ('id = "hcm-bj-07"', f'id = "{table_id}"'))
    errors = errors_of(path)
    assert (errors[0].section, errors[0].key) == ("table", "id")
    if table_id:
        assert "is not a table id: lower-case letters, digits and '-'" in errors[0].problem
    # the property is checked against the id only when the id is good
    assert [e.key for e in errors] == ["id"]


def test_a_table_id_may_not_be_a_broker_user(tmp_path):
    path = write(
        tmp_path,
        ('id = "hcm-bj-07"', 'id = "sign-bj-07"'),
        ('property = "hcm"', 'property = "sign"'),
    )
    assert "kept for the broker's own users" in one_error(path, "table", "id").problem


def test_the_property_must_be_the_ids_first_segment(tmp_path):
    path = write(tmp_path, ('property = "hcm"', 'property = "hcy"'))
    error = one_error(path, "table", "property")
    assert error.problem == (
        "'hcy' is not the first segment of the table id 'hcm-bj-07' ('hcm'): fix the id or the "
        "property"
    )


def test_an_unknown_game_lists_the_known_profiles(tmp_path):
    path = write(tmp_path, ('game = "pa-standard"', 'game = "pa-standrad"'))
    error = one_error(path, "table", "game")
    assert error.problem.startswith("'pa-standrad': no game profile of that name; known profiles:")
    assert "pa-standard" in error.problem and "double-up" in error.problem


def test_a_game_path_is_taken_from_the_config_files_folder(tmp_path):
    profile = (ROOT / "controller" / "profiles" / "double-up.toml").read_text(encoding="utf-8")
    (tmp_path / "house.toml").write_text(profile, encoding="utf-8")
    digest = hashlib.sha256(profile.encode()).hexdigest()
    path = tmp_path / "table.toml"
    path.write_text(
        with_pin_map(
            edited(('game = "pa-standard"', f'game = "house.toml"\ngame_sha256 = "{digest}"')),
            "double-up",
        ),
        encoding="utf-8",
    )
    config = load_table_config(path)
    assert (config.game, config.rules.name) == ("house.toml", "double-up")
    assert (config.game_sha256, config.game_packaged) == (digest, False)
    missing = write(tmp_path, ('game = "pa-standard"', 'game = "nothere.toml"'), name="b.toml")
    assert "no such profile file" in one_error(missing, "table", "game").problem


def test_a_broken_game_profile_is_named(tmp_path):
    (tmp_path / "house.toml").write_text("[split]\nmax_hand = 3\n", encoding="utf-8")
    path = write(tmp_path, ('game = "pa-standard"', 'game = "house.toml"'))
    error = one_error(path, "table", "game")
    assert f"{tmp_path / 'house.toml'}: [split] key 'max_hand': unknown key" in error.problem


def test_a_pin_for_a_circle_the_game_lacks(tmp_path):
    path = write(tmp_path, (LAST_SENSOR, f'{LAST_SENSOR}\n"1.blackjack_tie.tie_18" = 5'))
    error = one_error(path, "gpio.sensors", "1.blackjack_tie.tie_18")
    assert "'blackjack_tie.tie_18' is no bet circle of this game; use one of: main," in str(error)
    assert "lucky_ladies" in error.problem


def test_a_pin_for_a_spot_the_table_lacks(tmp_path):
    path = write(tmp_path, ("spots = 7 ", "spots = 3 "))
    error = one_error(path, "gpio.sensors", "4.main")
    assert "spot 4 is not a spot at this table: spots are 1 to 3" in error.problem


def test_the_pin_map_is_still_checked_when_the_game_does_not_load(tmp_path):
    path = write(
        tmp_path,
        ('game = "pa-standard"', 'game = "nope"'),
        (LAST_SENSOR, f'{LAST_SENSOR}\n"2.bogus" = 5'),
    )
    got = {(e.section, e.key): e.problem for e in errors_of(path)}
    assert list(got) == [("table", "game"), ("gpio.sensors", "2.bogus")]
    assert got[("gpio.sensors", "2.bogus")].endswith(
        "(checked against every game's circles: [table] game did not load)"
    )


def test_a_bad_pin_factory(tmp_path):
    path = write(tmp_path, ('pin_factory = "default"', 'pin_factory = "RPi.GPIO"'))
    error = one_error(path, "gpio", "pin_factory")
    assert error.problem == (
        "must be one of default, mock, lgpio, rpigpio, pigpio, native; got 'RPi.GPIO'"
    )


def test_the_mock_pin_factory_still_needs_a_good_pin_map(tmp_path):
    path = write(
        tmp_path,
        ('pin_factory = "default"', 'pin_factory = "mock"'),
        ("lockout = 7", "lockout = 16"),
    )
    error = one_error(path, "gpio.console", "lockout")
    assert "GPIO 16 is already used by [gpio.expanders] 'spot1'" in error.problem
    ok = write(tmp_path, ('pin_factory = "default"', 'pin_factory = "mock"'), name="ok.toml")
    assert load_table_config(ok).gpio.pin_factory == "mock"


def test_the_shoe_url_and_backoff(tmp_path):
    for url in ("socket://127.0.0.1:7000", "loop://", "spy:///dev/ttyUSB0?file=/tmp/x.txt"):
        path = write(tmp_path, ('url = "/dev/bj-shoe"', f'url = "{url}"'))
        assert load_table_config(path).shoe.url == url
    path = write(tmp_path, ('url = "/dev/bj-shoe"', 'url = "tcp://127.0.0.1:7000"'))
    assert "pyserial has no tcp:// handler" in one_error(path, "shoe", "url").problem
    path = write(tmp_path, ("reconnect_max_ms = 5000", "reconnect_max_ms = 100"))
    assert (
        "100 is below reconnect_min_ms 200" in one_error(path, "shoe", "reconnect_max_ms").problem
    )


def test_the_camera_must_match_the_card_source(tmp_path):
    path = write(tmp_path, ('card_source = "shoe"', 'card_source = "both"'))
    assert "set enabled = true" in one_error(path, "camera", "enabled").problem
    path = write(tmp_path, ("enabled = false", "enabled = true"))
    assert (
        "card_source = 'shoe' does not use the camera"
        in one_error(path, "camera", "enabled").problem
    )
    path = write(
        tmp_path,
        ('card_source = "shoe"', 'card_source = "camera"'),
        ("enabled = false", "enabled = true"),
        ('source = "/dev/video0"', "source = 0"),
    )
    config = load_table_config(path)
    assert (config.settings.card_source, config.camera.source) == ("camera", "0")
    path = write(tmp_path, ('card_source = "shoe"', 'card_source = "hole-card"'))
    assert "must be one of shoe, camera, both" in one_error(path, "table", "card_source").problem


def test_plain_tcp_only_to_this_machine_and_ports_that_fit(tmp_path):
    path = write(tmp_path, ('tls_ca = "/etc/table-controller/ca.crt"', 'tls_ca = ""'))
    got = {(e.section, e.key): e.problem for e in errors_of(path)}
    assert list(got) == [("mqtt", "port"), ("mqtt", "tls_ca")]
    assert got[("mqtt", "port")].startswith("8883 is MQTT's TLS port, but tls_ca is empty")
    assert "password would cross the network to 'hcm.jackpot.example'" in got[("mqtt", "tls_ca")]
    path = write(
        tmp_path,
        ('tls_ca = "/etc/table-controller/ca.crt"', 'tls_ca = ""'),
        ('host = "hcm.jackpot.example"', 'host = "127.0.0.1"'),
        ("port = 8883", "port = 1883"),
    )
    mqtt = load_table_config(path).mqtt
    assert (mqtt.tls_ca, mqtt.port) == (None, 1883)
    path = write(tmp_path, ("port = 8883", "port = 1883"))
    assert "1883 is MQTT's plain TCP port" in one_error(path, "mqtt", "port").problem


def test_web_and_control(tmp_path):
    path = write(
        tmp_path,
        ('bind = "127.0.0.1"', 'bind = "my-pi"'),
        ('password_hash = ""', 'password_hash = "hunter2"'),
        ('socket = "/run/table-controller/control.sock"', f'socket = "/run/{"x" * 120}.sock"'),
    )
    got = {(e.section, e.key): e.problem for e in errors_of(path)}
    assert list(got) == [("web", "bind"), ("web", "password_hash"), ("control", "socket")]
    assert "never the password itself" in got[("web", "password_hash")]
    assert "a unix socket path is at most 107" in got[("control", "socket")]
    # a truncated paste of a real hash is caught at check-config, not at the first login
    stored = hash_password("long enough pass", n=2**10)
    for broken, problem in (
        (stored[:-28], "salt or key is too short"),
        (stored.replace("$1024$", "$1000$"), "out of range"),
        ("scrypt$16384$8$1$c2FsdA", "6 fields"),
    ):
        path = write(tmp_path, ('password_hash = ""', f'password_hash = "{broken}"'))
        (error,) = errors_of(path)
        assert (error.section, error.key) == ("web", "password_hash") and problem in str(error)
        assert "table-controller hash-password" in str(error)
    path = write(
        tmp_path,
        ('bind = "127.0.0.1"', 'bind = "0.0.0.0"'),
        ('password_hash = ""', f'password_hash = "{stored}"'),
        ('socket = "/run/table-controller/control.sock"', 'socket = "control.sock"'),
    )
    config = load_table_config(path)
    assert config.web.bind == "0.0.0.0" and config.web.password_hash == stored
    assert config.web.enabled
    assert config.control.socket == tmp_path / "control.sock"
    assert config.web.login_wait_s == 1  # the example's (and the default's) first wait
    # the login throttle's first wait: whole seconds 1-60, a bad value named with its range
    for bad in ("0", "61", "1.5", '"10"'):
        path = write(tmp_path, ("login_wait_s = 1 ", f"login_wait_s = {bad} "))
        (error,) = errors_of(path)
        assert (error.section, error.key) == ("web", "login_wait_s"), error
        assert "whole number from 1 to 60 (seconds)" in error.problem
    path = write(tmp_path, ("login_wait_s = 1 ", "login_wait_s = 45 "))
    assert load_table_config(path).web.login_wait_s == 45


def test_check_config_refuses_a_web_port_the_service_cannot_bind(tmp_path):
    """docs/web.md: the port is above 1023 (the service has no CAP_NET_BIND_SERVICE)."""
    for port in (80, 443, 1023):
        path = write(tmp_path, ("port = 8080", f"port = {port}"))
        error = one_error(path, "web", "port")
        assert error.problem.startswith(f"{port} is below 1024: the service has no capability")
        assert "use 8080 or another from 1024 to 65535" in error.problem
    result = run_cli("check-config", str(path), "--no-files")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"{path}: [web] key 'port': {error.problem}\n"
    for port in (1024, 8080, 65535):
        path = write(tmp_path, ("port = 8080", f"port = {port}"))
        assert load_table_config(path).web.port == port


def test_the_journal_section_as_given_and_left_out(tmp_path):
    example = load_table_config(EXAMPLE)
    assert example.gaming_day == GamingDay(dt_time(6, 0), None)  # "": the system's zone
    assert (example.journal.keep_days, example.journal.rotate_on_upgrade) == (400, True)
    path = write(
        tmp_path,
        ('gaming_day_starts = "06:00"', 'gaming_day_starts = "4:30"'),
        ('timezone = ""', 'timezone = "America/New_York"'),
        ("keep_days = 400", "keep_days = 3650"),
        ("rotate_on_upgrade = true", "rotate_on_upgrade = false"),
    )
    config = load_table_config(path)
    assert config.gaming_day == GamingDay(dt_time(4, 30), "America/New_York")
    assert (config.journal.keep_days, config.journal.rotate_on_upgrade) == (3650, False)
    # 2026-03-08 04:29 in New York (EDT from 03:00 that night) is still the 7th's gaming day
    assert config.gaming_day.of(1772958540000).isoformat() == "2026-03-07"
    assert config.gaming_day.of(1772958600000).isoformat() == "2026-03-08"
    path = write(tmp_path, ('gaming_day_starts = "06:00"', "gaming_day_starts = 05:45:00"))
    assert load_table_config(path).gaming_day.starts == dt_time(5, 45)  # a TOML local time
    path = tmp_path / "bare.toml"
    path.write_text(EXAMPLE_TEXT.split("\n[journal]", 1)[0], encoding="utf-8")
    assert load_table_config(path).journal == example.journal


@pytest.mark.parametrize("starts", ['"24:00"', '"6am"', '"06:60"', '""', "600", '"06:00:00"'])
def test_a_gaming_day_start_that_is_not_a_time_of_day(tmp_path, starts):
    path = write(tmp_path, ('gaming_day_starts = "06:00"', f"gaming_day_starts = {starts}"))
    error = one_error(path, "journal", "gaming_day_starts")
    assert '"HH:MM" from "00:00" to "23:59"' in error.problem
    assert 'gaming_day_starts = "06:00"' in error.problem


def test_journal_errors_name_the_key_and_what_to_do(tmp_path):
    path = write(tmp_path, ('timezone = ""', 'timezone = "Mars/Olympus_Mons"'))
    error = one_error(path, "journal", "timezone")
    assert "'Mars/Olympus_Mons' is not a time zone this system knows" in error.problem
    assert "IANA name" in error.problem and "timedatectl list-timezones" in error.problem
    for bad in ("0", "3651", '"400"'):
        path = write(tmp_path, ("keep_days = 400", f"keep_days = {bad}"))
        error = one_error(path, "journal", "keep_days")
        assert "whole number from 1 to 3650 (days)" in error.problem
    path = write(tmp_path, ("rotate_on_upgrade = true", 'rotate_on_upgrade = "yes"'))
    assert "true or false" in one_error(path, "journal", "rotate_on_upgrade").problem
    path = write(
        tmp_path,
        ("keep_days = 400", "keep_days = 0\nkeep = 30"),
        ('timezone = ""', "timezone = 5"),
        ('gaming_day_starts = "06:00"', 'gaming_day_starts = "noon"'),
    )
    got = {(e.section, e.key) for e in errors_of(path)}  # every one, together
    assert got == {("journal", k) for k in ("gaming_day_starts", "timezone", "keep_days", "keep")}


def test_a_file_that_is_not_toml_or_not_there(tmp_path):
    path = tmp_path / "table.toml"
    path.write_text("[table]\nid = hcm-bj-07\n", encoding="utf-8")
    (error,) = errors_of(path)
    assert str(error).startswith(f"{path}: top level: not valid TOML: ")
    (error,) = errors_of(tmp_path / "nothere.toml")
    assert "cannot read the file: No such file or directory" in str(error)


def test_docs_describe_every_key():
    docs = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    for section, keys in KEYS.items():
        assert f"`[{section}]`" in docs, section
        for key in keys:
            assert re.search(rf"`{re.escape(key)}`", docs), (section, key)


# -- the files a config names ----------------------------------------------------------------


def test_check_paths_passes_with_the_files_in_place(tmp_path):
    path = on_this_machine(tmp_path)
    config = load_table_config(path)
    assert config.data_dir == tmp_path / "data"
    assert check_paths(config) == []
    assert not config.data_dir.exists()  # checking creates nothing
    assert read_password(config) == "s3cret"
    result = run_cli("check-config", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{path}: ok (table hcm-bj-07, game pa-standard (packaged,")
    assert "files not checked" not in result.stdout


def test_a_missing_password_file_is_reported_by_check_config_unless_no_files(tmp_path):
    path = on_this_machine(tmp_path)
    (tmp_path / "mqtt-password").unlink()
    result = run_cli("check-config", str(path))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"{path}: [mqtt] key 'password_file': cannot read {tmp_path / 'mqtt-password'}: No such "
        "file or directory; write this table's broker password there (one line; owner root, "
        "group table-controller, mode 0640)"
    ]
    result = run_cli("check-config", str(path), "--no-files")
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith("; files not checked)")


def test_read_password_refuses_an_empty_file(tmp_path):
    config = load_table_config(on_this_machine(tmp_path, password=" \n\n"))
    with pytest.raises(ConfigError) as caught:
        read_password(config)
    assert (caught.value.section, caught.value.key) == ("mqtt", "password_file")
    assert f"{tmp_path / 'mqtt-password'} is empty" in str(caught.value)
    assert [e.key for e in check_paths(config)] == ["password_file"]


@pytest.mark.parametrize(
    ("mode", "loose"),
    [
        (0o644, "readable by others"),
        (0o604, "readable by others"),
        (0o660, "writable by its group"),
        (0o622, "writable by its group and writable by others"),
    ],
    ids=["0644", "0604", "0660", "0622"],
)
def test_a_password_file_others_can_read_or_write_is_refused_at_check_and_start(
    tmp_path, caplog, mode, loose
):
    """Issue 26: 0644 passed. The installer's 0640 (group read, for the service) passes;
    readable by others or writable by the group or others is refused, naming the fix, by
    check-config and by the daemon before it starts anything."""
    from controller.runtime.daemon import run_table

    path = on_this_machine(tmp_path)
    secret = tmp_path / "mqtt-password"
    config = load_table_config(path)
    for fine in (0o640, 0o600, 0o400):
        secret.chmod(fine)
        assert check_paths(config) == [], oct(fine)
    secret.chmod(mode)
    with pytest.raises(ConfigError) as caught:
        read_password(config)
    assert (caught.value.section, caught.value.key) == ("mqtt", "password_file")
    expected = (
        f"{path}: [mqtt] key 'password_file': {secret} is mode {mode:04o}, {loose}: the broker "
        "password must be readable by root and the service only; chmod 640 (owner root, group "
        f"table-controller): sudo chown root:table-controller {secret} && sudo chmod 640 {secret}"
    )
    assert str(caught.value) == expected
    assert [str(e) for e in check_paths(config)] == [expected]
    result = run_cli("check-config", str(path))
    assert (result.returncode, result.stderr.splitlines()) == (2, [expected])
    caplog.set_level("ERROR")
    assert run_table(config) == 2  # the daemon refuses before it opens anything
    assert expected in caplog.text
    assert not config.data_dir.exists()


def test_check_paths_names_a_missing_ca_and_a_data_dir_that_is_a_file(tmp_path):
    config = load_table_config(on_this_machine(tmp_path))
    (tmp_path / "ca.crt").write_text("not a certificate\n")
    (tmp_path / "data").write_text("oops\n")
    got = {(e.section, e.key): e.problem for e in check_paths(config)}
    assert list(got) == [("mqtt", "tls_ca"), ("table", "data_dir")]
    assert "holds no PEM certificate" in got[("mqtt", "tls_ca")]
    assert got[("table", "data_dir")] == f"{tmp_path / 'data'} is not a folder"
    (tmp_path / "ca.crt").unlink()
    assert "cannot read" in check_paths(config)[0].problem


def test_the_link_signing_key_is_checked_before_the_table_runs(tmp_path):
    config = load_table_config(on_this_machine(tmp_path))
    signer, verifier = link_keys(config)
    assert signer.key_id == "hcm-bj-07-1" and list(verifier.keys) == ["jackpot-1"]
    key = tmp_path / "link-signing.key"
    key.chmod(0o644)  # others may read it: refused, with the fix
    (error,) = check_paths(config)
    assert (error.section, error.key) == ("mqtt", "signing_key")
    assert "chmod 600" in error.problem and "others may read it" in error.problem
    key.unlink()
    (error,) = check_paths(config)
    assert "table-controller link-key --out" in error.problem
    result = run_cli("check-config", str(tmp_path / "table.toml"))
    assert result.returncode == 2 and "[mqtt] key 'signing_key'" in result.stderr


def test_controller_keys_are_required_to_run_and_checked_when_given(tmp_path):
    path = on_this_machine(tmp_path)
    text = path.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("controller_keys"))
    path.write_text(text.replace(line, ""), encoding="utf-8")
    config = load_table_config(path)  # the file reads; the link cannot start
    (error,) = check_paths(config)
    assert (error.key, "missing") == ("controller_keys", error.problem.split(":")[0])
    for bad, words in (
        ('controller_keys = { "jackpot-1" = "not base64!" }', "not a public key"),
        ('controller_keys = { "jackpot-1" = "AAAA" }', "holds 3 bytes"),
        ('controller_keys = { "bad id!" = "AAAA" }', "key id"),
        ("controller_keys = 5", "must list"),
    ):
        path.write_text(text.replace(line, bad), encoding="utf-8")
        (error,) = errors_of(path)
        assert error.key == "controller_keys" and words in str(error), (bad, str(error))


def test_link_key_makes_a_private_key_only_its_owner_reads(tmp_path):
    path = on_this_machine(tmp_path)
    (tmp_path / "link-signing.key").unlink()
    result = run_cli("link-key", "--config", str(path))
    assert result.returncode == 0, result.stderr
    key = tmp_path / "link-signing.key"
    assert key.stat().st_mode & 0o777 == 0o600
    public = re.search(r"public key: (\S+)", result.stdout)[1]
    assert "[tables.hcm-bj-07]" in result.stdout
    assert f'keys = {{ "hcm-bj-07-1" = "{public}" }}' in result.stdout
    signer, _ = link_keys(load_table_config(path))
    assert signer.public_key == public
    again = run_cli("link-key", "--config", str(path))  # never overwrites a key
    assert again.returncode == 2 and "never overwritten" in again.stderr
    assert link_keys(load_table_config(path))[0].public_key == public


# -- other kinds -----------------------------------------------------------------------------


def test_kinds_are_told_by_their_sections():
    kinds = {p.name: check_config_file(p, files=False)[0] for p in EXAMPLES}
    assert kinds["table.example.toml"] == "table"
    assert kinds["jackpot.example.toml"] == "jackpot"
    assert kinds["gpio.example.toml"] == "gpio"
    assert kinds["pa-standard.toml"] == "game"


def test_other_kinds_report_their_errors_as_config_errors(tmp_path, capsys):
    jackpot = tmp_path / "jackpot.toml"
    jackpot.write_text(
        (ROOT / "config" / "jackpot.example.toml")
        .read_text(encoding="utf-8")
        .replace('seed = "$250"', 'seed = "$2,500"')
    )
    kind, errors = check_config_file(jackpot)  # the other product's: told, not read
    assert kind == "jackpot" and len(errors) == 1 and isinstance(errors[0], ConfigError)
    assert f"jackpot-controller check-config {jackpot}" in errors[0].problem
    assert jackpot_cli(["check-config", str(jackpot)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{jackpot}: [pools.mystery] key 'seed': the seed 250000 is above must_hit_from 25000"
    ]
    gpio = tmp_path / "pins.toml"
    gpio.write_text('[gpio]\n[gpio.sensors]\n"1.main" = 1\n')
    kind, errors = check_config_file(gpio)
    assert (kind, errors[0].section, errors[0].key) == ("gpio", "gpio.sensors", "1.main")
    game = tmp_path / "house.toml"
    game.write_text("[split]\nmax_hand = 3\n")
    assert check_config_file(game)[1][0].key == "max_hand"
    other = tmp_path / "other.toml"
    other.write_text("[something]\nx = 1\n")
    kind, errors = check_config_file(other)
    assert kind == "unknown" and "give --kind" in errors[0].problem
    assert check_config(other, "gpio").errors[0].section == "something"


def test_check_config_with_a_forced_kind_from_the_command_line(tmp_path):
    result = run_cli("check-config", "config/gpio.example.toml", "--kind", "table")
    assert result.returncode == 2
    assert "config/gpio.example.toml: [table]: missing: the file needs a [table]" in result.stderr
    assert "config/gpio.example.toml: [mqtt]: missing" in result.stderr


# -- a full table: check-config refuses a spot left unwired ------------------------------------


def test_check_config_refuses_a_spot_left_unwired_naming_the_missing_keys(tmp_path):
    path = write(
        tmp_path,
        ('"4.blazing_7s" = { expander = "spot4", line = "GPA3" }\n', ""),
        ('"6.action" = { expander = "spot6", line = "GPB4" }\n', ""),
    )
    assert load_table_config(path).settings.spots == 7  # the daemon runs it (a bench rig)
    check = check_config(path, files=False)
    got = {(e.section, e.key): e.problem for e in check.errors}
    assert list(got) == [("gpio.sensors", "4.blazing_7s"), ("gpio.lights", "6.action")]
    assert got[("gpio.sensors", "4.blazing_7s")].startswith(
        'missing: spot 4 is left unwired, it has no sensor for blazing_7s (add "4.blazing_7s";'
    )
    assert "no light for action" in got[("gpio.lights", "6.action")]
    assert check.summary == ""


def test_a_pin_map_wired_for_another_game_is_refused(tmp_path):
    path = tmp_path / "table.toml"
    path.write_text(with_pin_map(EXAMPLE_TEXT, "online-6deck"), encoding="utf-8")
    error = one_error(path, "gpio", "game")
    assert error.problem.startswith(
        "this pin map is wired for 'online-6deck' but [table] game is 'pa-standard'"
    )


@pytest.mark.parametrize("game", ["double-up", "online-6deck", "blackjack-tie"])
def test_every_games_pin_map_makes_a_complete_table_config(tmp_path, game):
    text = edited(('game = "pa-standard"', f'game = "{game}"'))
    path = tmp_path / "table.toml"
    path.write_text(with_pin_map(text, game), encoding="utf-8")
    check = check_config(path, files=False)
    assert check.errors == [] and "7 spots" in check.summary and "expanders" in check.summary


def test_check_config_of_a_pin_map_file_checks_its_game(tmp_path):
    blank = tmp_path / "gpio.toml"
    source = (ROOT / "config" / "gpio.double-up.toml").read_text(encoding="utf-8")
    blank.write_text(source.replace('game = "double-up"', 'game = "double-down"'), "utf-8")
    check = check_config(blank)
    assert [(e.section, e.key) for e in check.errors] == [("gpio", "game")]
    assert "'double-down' is no game profile; use one of: " in check.errors[0].problem
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(source.replace('game = "double-up"', 'game = "blackjack-tie"'), "utf-8")
    check = check_config(wrong)
    assert [(e.section, e.key) for e in check.errors] == [("gpio.sensors", "1.bonus_16")]
    assert "'bonus_16' is no bet circle of this game" in check.errors[0].problem
    online = (ROOT / "config" / "gpio.online-6deck.toml").read_text(encoding="utf-8")
    short = tmp_path / "short.toml"
    short.write_text(online.replace('game = "online-6deck"', 'game = "pa-standard"'), "utf-8")
    check = check_config(short)
    assert len(check.errors) == 14  # sensors and lights of three side bets, at 7 spots
    assert check.errors[0].key == "1.lucky_ladies"
    assert "spot 1 is left unwired" in check.errors[0].problem
    ok = check_config(ROOT / "config" / "gpio.blackjack-tie.toml")
    assert ok.errors == []
    assert ok.summary == (
        "pin map: 24 GPIO pins and 149 lines on 10 MCP23017 expanders (I2C buses 1, 3), "
        "complete for 7 spots (game blackjack-tie, 9 circles a spot)"
    )


def test_batch_rows_is_64_by_default_1_turns_frames_off_and_only_1_to_64_is_taken(tmp_path):
    """``[mqtt] batch_rows`` (issue 32): 64 by default; 1 keeps a table on single messages
    while its jackpot controller is older than batch frames; outside 1-64 is refused."""
    assert load_table_config(write(tmp_path)).mqtt.batch_rows == 64
    line = "batch_rows = 64"
    assert load_table_config(write(tmp_path, (line, "batch_rows = 1"))).mqtt.batch_rows == 1
    for value in ("0", "65", '"64"'):
        error = one_error(write(tmp_path, (line, f"batch_rows = {value}")), "mqtt", "batch_rows")
        assert "must be a whole number from 1 to 64" in error.problem, error.problem
