"""Link signing keys for the benches: made fresh in the bench's work folder with
controller.link.signing, as ``jackpot-controller link-key`` and ``table-controller link-key``
make them (the benches keep their own small rig; they do not import the tests' keys).

:func:`make_keys` writes the controller's key and one key per table (0600) and returns
:class:`BenchKeys`, which gives the jackpot config's ``[tables.ID] keys``, a table config's
``[mqtt]`` key lines, the ``jackpot-controller`` arguments and in-process signers and verifiers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.link.signing import (
    Signer,
    Verifier,
    load_signing_key,
    make_link_key,
    parse_public_key,
)

CONTROLLER_KID = "jackpot-bench-1"


def table_kid(table: str) -> str:
    return f"{table}-1"


@dataclass(frozen=True)
class BenchKeys:
    """Key files in ``folder``: ``controller.key`` and ``<table>.key``; public keys by name."""

    folder: Path
    public: dict[str, str]  # "controller" or a table id -> base64 public key

    @property
    def controller_file(self) -> Path:
        return self.folder / "controller.key"

    def table_file(self, table: str) -> Path:
        return self.folder / f"{table}.key"

    def controller_args(self) -> list[str]:
        """``jackpot-controller``'s ``--signing-key`` and ``--key-id``."""
        return ["--signing-key", str(self.controller_file), "--key-id", CONTROLLER_KID]

    def controller_signer(self) -> Signer:
        return Signer(CONTROLLER_KID, load_signing_key(self.controller_file))

    def controller_verifier(self) -> Verifier:
        return Verifier({CONTROLLER_KID: parse_public_key(self.public["controller"])})

    def table_signer(self, table: str) -> Signer:
        return Signer(table_kid(table), load_signing_key(self.table_file(table)))

    def jackpot_tables(self) -> str:
        """``[tables.ID] keys = {...}`` for every table, to append to the jackpot config."""
        return "".join(
            f'\n[tables.{t}]\nkeys = {{ "{table_kid(t)}" = "{key}" }}\n'
            for t, key in sorted(self.public.items())
            if t != "controller"
        )

    def table_mqtt_lines(self, table: str) -> str:
        """A table config's ``[mqtt]`` lines for its key and the controller's."""
        return (
            f'signing_key = "{self.table_file(table)}"\n'
            f'key_id = "{table_kid(table)}"\n'
            f'controller_keys = {{ "{CONTROLLER_KID}" = "{self.public["controller"]}" }}\n'
        )


def make_keys(folder: Path, tables: tuple[str, ...] | list[str]) -> BenchKeys:
    """The controller's key and one per table in ``folder`` (made once; kept if present)."""
    folder.mkdir(parents=True, exist_ok=True)
    keys = BenchKeys(folder, {})
    for name, kid, path in [
        ("controller", CONTROLLER_KID, keys.controller_file),
        *((t, table_kid(t), keys.table_file(t)) for t in tables),
    ]:
        if path.exists():
            keys.public[name] = Signer(kid, load_signing_key(path)).public_key
        else:
            keys.public[name] = make_link_key(path, kid)
    return keys
