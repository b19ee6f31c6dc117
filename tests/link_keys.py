"""Link signing keys for the tests: one Ed25519 key for the jackpot controller and one per table,
made once per test session (never written to the repository), and the files and config lines
that carry them (controller/link/signing.py).

- :data:`CONTROLLER_KID`, :func:`controller_signer`, :func:`controller_verifier`;
- :func:`table_signer` (``table_id``), :func:`table_verifier`;
- :func:`jackpot_config_text` / :func:`jackpot_config`: the example jackpot config with every
  table's public key listed under ``[tables.<id>]``;
- :func:`write_key` writes a signer's private key file (0600) for a process under test;
- :func:`table_mqtt_lines`: the ``[mqtt]`` lines a table config needs for its keys.
"""

from __future__ import annotations

import functools
from pathlib import Path

from controller.link.signing import (
    Signer,
    Verifier,
    new_signing_key,
    parse_public_key,
    save_signing_key,
)
from jackpot.pools import JackpotConfig, parse_config

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "config" / "jackpot.example.toml"
CONTROLLER_KID = "jackpot-test-1"


@functools.cache
def _key(name: str):
    return new_signing_key()


def controller_signer() -> Signer:
    return Signer(CONTROLLER_KID, _key("controller"))


def controller_verifier() -> Verifier:
    return Verifier({CONTROLLER_KID: parse_public_key(controller_signer().public_key)})


def table_kid(table_id: str) -> str:
    return f"{table_id}-1"


def table_signer(table_id: str) -> Signer:
    return Signer(table_kid(table_id), _key(f"table/{table_id}"))


def table_verifier(table_id: str) -> Verifier:
    return Verifier({table_kid(table_id): parse_public_key(table_signer(table_id).public_key)})


def table_keys_toml(tables) -> str:
    """``[tables.<id>] keys = {...}`` for each table id."""
    out = []
    for table in sorted(tables):
        signer = table_signer(table)
        out.append(f'\n[tables.{table}]\nkeys = {{ "{signer.key_id}" = "{signer.public_key}" }}\n')
    return "".join(out)


def jackpot_config_text(text: str | None = None) -> str:
    """``text`` (default: config/jackpot.example.toml) with every table's key listed."""
    text = EXAMPLE.read_text(encoding="utf-8") if text is None else text
    tables = parse_config(text, "probe").tables
    return text + table_keys_toml(tables)


def jackpot_config(text: str | None = None, source: str = "jackpot.toml") -> JackpotConfig:
    return parse_config(jackpot_config_text(text), source)


def write_key(signer: Signer, path: Path) -> Path:
    """Write ``signer``'s private key to a new file ``path`` (0600)."""
    save_signing_key(path, signer._key)
    return path


def table_mqtt_lines(table_id: str, key_path: Path) -> str:
    """The ``[mqtt]`` keys of a table config for its signing key and the controller's key."""
    signer = controller_signer()
    return (
        f'signing_key = "{key_path}"\n'
        f'key_id = "{table_kid(table_id)}"\n'
        f'controller_keys = {{ "{CONTROLLER_KID}" = "{signer.public_key}" }}\n'
    )
