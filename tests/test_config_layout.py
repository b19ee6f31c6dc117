"""The table config's code is a package, one concern a module (issue 28 item 7): each section
of the file is read by a module of its own, all through one loader, and every name other code
imported from ``controller.config`` still comes from there."""

from __future__ import annotations

import importlib
from pathlib import Path

import controller.config as config

PACKAGE = Path(config.__file__).parent

SECTION_MODULES = {
    "table": ("table", "TABLE_KEYS", "read_table"),
    "shoe": ("readers", "SHOE_KEYS", "read_shoe"),
    "camera": ("readers", "CAMERA_KEYS", "read_camera"),
    "gpio": ("gpio", "GPIO_KEYS", "read_gpio"),
    "control": ("gpio", "CONTROL_KEYS", "read_control"),
    "mqtt": ("link", "MQTT_KEYS", "read_mqtt"),
    "web": ("web", "WEB_KEYS", "read_web"),
    "journal": ("journal", "JOURNAL_KEYS", "read_journal"),
    "clock": ("clock", "CLOCK_KEYS", "read_clock"),  # issue 28 item 6: a new section, a module
    "software": ("software", "SOFTWARE_KEYS", "read_software"),  # issue 29 item 4
}


def test_every_section_is_read_by_its_own_module_through_one_loader():
    assert PACKAGE.name == "config" and (PACKAGE / "__init__.py").is_file()
    assert set(SECTION_MODULES) == set(config.KEYS)
    loader = (PACKAGE / "loader.py").read_text(encoding="utf-8")
    for section, (module, keys, reader) in SECTION_MODULES.items():
        mod = importlib.import_module(f"controller.config.{module}")
        assert getattr(mod, keys) is config.KEYS[section], section
        assert callable(getattr(mod, reader)), (section, reader)
        assert f'{reader}(section("{section}")' in loader, f"the loader reads [{section}]"


def test_no_module_of_the_config_is_long():
    lengths = {
        p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.glob("*.py")
    }
    assert len(lengths) >= 8
    assert {name: n for name, n in lengths.items() if n > 400} == {}


def test_the_names_other_code_imports_are_still_there():
    for name in (
        "KEYS",
        "ConfigError",
        "ConfigErrors",
        "TableConfig",
        "MqttConfig",
        "WebConfig",
        "GpioConfig",
        "JournalConfig",
        "check_config",
        "check_config_file",
        "check_paths",
        "link_keys",
        "load_table_config",
        "parse_table_config",
        "read_password",
        "SERVICE_USER",
        "PIN_FACTORIES",
    ):
        assert hasattr(config, name), name
    assert config.load_table_config.__module__ == "controller.config.loader"
