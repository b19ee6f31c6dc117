"""``table-controller`` commands that make credentials: ``link-key`` (the Ed25519 key that signs
the table's jackpot link messages) and ``hash-password`` (the ``[web] password_hash``). The
parser is ``controller.cli``'s."""

from __future__ import annotations

import argparse
import sys


def cmd_link_key(args: argparse.Namespace) -> int:
    from controller.link.signing import make_link_key

    table_id = None
    if args.config:
        from controller.cli_users import audited
        from controller.config import load_table_config

        config = load_table_config(args.config)
        path, key_id, table_id = config.mqtt.signing_key, config.mqtt.key_id, config.table_id
        key_id = args.key_id or key_id
        _, record = audited(config, "link_key")
        try:
            public = make_link_key(path, key_id, args.owner)
        except Exception as exc:
            record("refused", object=key_id, detail=str(exc))
            raise
        record(object=key_id, detail=f"a new signing key {path}")
        return _print_link_key(path, key_id, public, table_id)
    else:
        if not args.key_id:
            print("link-key: --out needs --key-id (e.g. hcm-bj-07-1)", file=sys.stderr)
            return 2
        path, key_id = args.out, args.key_id
    return _print_link_key(path, key_id, make_link_key(path, key_id, args.owner), table_id)


def _print_link_key(path: object, key_id: str, public: str, table_id: str | None) -> int:
    print(f"wrote the signing key {path} (mode 0600); keep it on this machine only")
    print(f"key id: {key_id}")
    print(f"public key: {public}")
    print("In the jackpot controller's config:")
    print(f"[tables.{table_id or 'TABLE-ID'}]")
    print(f'keys = {{ "{key_id}" = "{public}" }}')
    return 0


def cmd_hash_password(args: argparse.Namespace) -> int:
    import getpass

    from controller.web.auth import MIN_PASSWORD, hash_password

    if args.stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass("Technicians' password: ")
        if getpass.getpass("Again: ") != password:
            print("hash-password: the two passwords differ; nothing printed", file=sys.stderr)
            return 2
    if len(password) < MIN_PASSWORD:
        print(
            f"hash-password: the password needs at least {MIN_PASSWORD} characters "
            f"(got {len(password)}); nothing printed",
            file=sys.stderr,
        )
        return 2
    print(f'password_hash = "{hash_password(password)}"')
    print(
        "hash-password: put this line in the [web] section of the table's config "
        "(/etc/table-controller/table.toml), then restart the table controller",
        file=sys.stderr,
    )
    return 0
