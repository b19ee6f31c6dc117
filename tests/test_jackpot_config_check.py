"""The jackpot controller's config checks (issue 26, item 6): ``jackpot-controller check-config``
reports every error, one per line naming section and key; refuses a game no profile on this
machine is and a wager no profile defines; refuses a broker password file others can read;
and the controller refuses to start on any of these. The spots a table has: ``[tables.ID]
spots``, its property's, else 7; the ledger refuses a message for a spot the table does not
have, before anything changes. Real files in tmp_path, a real SQLite ledger; no mocks."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import profile_text

from controller.link.messages import validate
from jackpot.cli import main
from jackpot.config_check import profile_errors
from jackpot.ledger import Ledger, Status
from jackpot.pools import JackpotConfigError, JackpotConfigErrors, parse_config

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "config" / "jackpot.example.toml"
TEXT = EXAMPLE.read_text(encoding="utf-8")
TABLE_SECTION = (
    '# [tables.hcm-bj-07]\n# keys = { "hcm-bj-07-2026a" = "BASE64 PUBLIC KEY printed by '
    'table-controller link-key" }\n# games = ["pa-standard"]'
)


def edited(*replacements: tuple[str, str], text: str = TEXT) -> str:
    for old, new in replacements:
        assert old in text, f"{old!r} is not in the example"
        text = text.replace(old, new, 1)
    return text


def write(tmp_path: Path, text: str, name: str = "jackpot.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def check(capsys, *args: str) -> tuple[int, list[str], list[str]]:
    code = main(["check-config", *args])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err.splitlines()


# -- every error ---------------------------------------------------------------------------


def test_check_config_reports_every_error_of_every_section(tmp_path, capsys):
    """Issue 26: check-config stopped at the first error. Now each is a line of its own,
    several in one section too, naming file, section and key; exit 2."""
    path = write(
        tmp_path,
        edited(
            ('contribution = "$0.75"', 'contribution = "lots"\nbogus = 1'),
            ('seed = "$10,000"  ', 'seed = "$10.001"'),
            ('lines = ["100% of meter", "10% of meter"]', 'lines = ["100% of meter", "half"]'),
            ('"hcpn-bj-04"]', '"hcpn-bj-04", "hcm-bj-01"]\nspots = 0'),
            ('games = ["pa-standard"]\n\n[properties.hcy]', 'games = ["PA"]\n\n[properties.hcy]'),
            (TABLE_SECTION, '[tables.hcm-bj-07]\nkeys = { "a" = "not a key" }\nspots = 9'),
            ('# [metrics]\n# address = "127.0.0.1"\n# port = 9471 ', "[metrics]\nport = -1 "),
        ),
    )
    code, out, err = check(capsys, str(path))
    where = f"{path}: "
    assert (code, out) == (2, [])
    assert [line.split(": ", 2)[1] for line in err] == [
        "[pools.blazing_7s] key 'bogus'",
        "[pools.blazing_7s] key 'contribution'",
        "[pools.blazing_7s] key 'seed'",
        "[pools.blazing_7s] key 'lines'",
        "[properties.hcpn] key 'tables'",
        "[properties.hcpn] key 'spots'",
        "[properties.hcm] key 'games'",
        "[tables.hcm-bj-07] key 'keys'",
        "[tables.hcm-bj-07] key 'spots'",
        "[metrics] key 'port'",
    ], err
    assert all(line.startswith(where) for line in err)
    assert "'hcm-bj-01' is not a table id like 'hcpn-bj-07'" in err[4]
    assert "0: the table's betting spots, 1 (first base) to 7" in err[5]
    # the same errors from the reader, the first one's section and key on the exception
    with pytest.raises(JackpotConfigErrors) as caught:
        parse_config(path.read_text(encoding="utf-8"), str(path))
    assert [str(e) for e in caught.value.errors] == err
    assert (caught.value.section, caught.value.key) == ("pools.blazing_7s", "bogus")
    # and the controller does not start on them: every one on stderr
    with pytest.raises(SystemExit) as stopped:
        main(["--config", str(path), "--password-file", str(tmp_path / "pw"),
              "--ledger", str(tmp_path / "l.db")])  # fmt: skip
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"jackpot-controller: bad config: {line}" for line in err
    ]
    assert not (tmp_path / "l.db").exists()


def test_a_table_section_of_a_property_whose_tables_are_unreadable_is_not_blamed(tmp_path):
    text = edited(
        ('tables = ["hcm-bj-01", "hcm-bj-02", "hcm-bj-07"]', 'tables = "hcm-bj-07"'),
        (TABLE_SECTION, "[tables.hcm-bj-07]\nspots = 6"),
    )
    with pytest.raises(JackpotConfigError) as caught:
        parse_config(text, "j.toml")
    assert [(e.section, e.key) for e in caught.value.errors] == [("properties.hcm", "tables")]


# -- games and wagers ------------------------------------------------------------------------


def test_an_unknown_game_or_wager_fails_check_config_and_the_start(tmp_path, capsys, monkeypatch):
    """Issue 26: check-config passed a game no profile is and a wager no profile defines;
    every contribution of them would have been refused, table by table, at run time."""
    games = tmp_path / "games"
    games.mkdir()
    (games / "b7-wap.toml").write_text(  # a house profile whose Blazing 7's feeds another pool
        profile_text("pa-standard").replace('pool = "blazing_7s"', 'pool = "b7_wap"'),
        encoding="utf-8",
    )
    monkeypatch.setenv("TABLE_CONTROLLER_GAMES", str(games))
    path = write(
        tmp_path,
        edited(
            ('games = ["pa-standard"]', 'games = ["pa-standrad"]'),
            ('wagers = ["blazing_7s"]       # wagers', 'wagers = ["blazing_7s", "blazing_8s"] #'),
            ('wagers = ["blazing_7s"]       # fed', 'wagers = ["blazing_7s", "lucky_ladies"] #'),
            (TABLE_SECTION, '[tables.hcm-bj-07]\ngames = ["b7-wap", "blackjack-tie"]'),
        ),
    )
    code, out, err = check(capsys, str(path))
    assert (code, out) == (2, [])
    assert [line.split(": ", 2)[1] for line in err] == [
        "[properties.hcpn] key 'games'",
        "[tables.hcm-bj-07] key 'games'",
        "[pools.blazing_7s] key 'wagers'",
        "[pools.mystery] key 'wagers'",
    ], err
    assert err[0].startswith(
        f"{path}: [properties.hcpn] key 'games': 'pa-standrad': no game profile of that name; "
        "known profiles: b7-wap, blackjack-tie, double-up, online-6deck, pa-standard (searched "
    )
    assert err[1].endswith(
        "game 'b7-wap' feeds its blazing_7s wager to pool 'b7_wap', which is no progressive "
        "pool of this config fed by 'blazing_7s': every contribution of that game would be "
        "refused; add [pools.b7_wap] or list another game"
    )
    assert err[2].endswith(
        "[pools.blazing_7s] key 'wagers': 'blazing_8s' is not a progressive wager (those are: "
        "blazing_7s): nothing would ever feed this meter with it; the progressive wagers of the "
        "games the tables may run: blazing_7s (b7-wap, pa-standard)"
    )
    assert "'lucky_ladies' is not a progressive wager (those are: blazing_7s)" in err[3]
    with pytest.raises(SystemExit) as stopped:
        main(["--config", str(path), "--password-file", str(tmp_path / "pw"),
              "--ledger", str(tmp_path / "l.db")])  # fmt: skip
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"jackpot-controller: bad config: {line}" for line in err
    ]
    # without any games list, a wager is checked against every profile this machine knows
    anything = parse_config(
        TEXT.replace('games = ["pa-standard"]\n', "").replace(
            'wagers = ["blazing_7s"]       # wagers', 'wagers = ["blazing_7s", "ez_bust"]  #'
        ),
        "any.toml",
    )
    (error,) = profile_errors(anything)
    assert (error.section, error.key) == ("pools.blazing_7s", "wagers")
    assert "'ez_bust' is not a progressive wager" in str(error)
    assert "the progressive wagers of the known profiles: blazing_7s (b7-wap, pa-standard)" in (
        str(error)
    )
    # tables that may run only games without the wager: nothing feeds the pools
    tie = parse_config(TEXT.replace('"pa-standard"', '"blackjack-tie"'), "tie.toml")
    assert [str(e).split("key 'wagers': ")[1] for e in profile_errors(tie)] == [
        "'blazing_7s' is offered by none of the games the tables may run (blackjack-tie): "
        "nothing would ever feed this meter with it; the progressive wagers of the games the "
        "tables may run: none"
    ] * 2
    monkeypatch.delenv("TABLE_CONTROLLER_GAMES")
    assert profile_errors(parse_config(TEXT, "example.toml")) == []


# -- the broker password file ------------------------------------------------------------------


def test_a_password_file_others_can_read_fails_check_config_and_the_start(tmp_path, capsys):
    """Issue 26: neither check-config nor the controller looked at the password file's mode
    (0644 passed). The installer's 0640 root:jackpot-controller passes; 0644 does not, with
    the fix; check-config takes mqtt-password beside the config (the installed layout)."""
    path = write(tmp_path, TEXT)
    code, out, err = check(capsys, str(path))
    assert (code, err) == (0, [])
    assert out == [f"{path}: ok (jackpot: 2 pools, 4 properties, 12 tables; no password file "
                   "checked)"]  # fmt: skip
    secret = tmp_path / "mqtt-password"
    secret.write_text("s3cret\n", encoding="utf-8")
    secret.chmod(0o640)
    code, out, err = check(capsys, str(path))
    assert (code, err) == (0, [])
    assert out[0].endswith(f"12 tables; password file {secret} ok)")
    problem = (
        f"{secret} is mode 0644, readable by others: the broker password must be readable by "
        "root and the service only; chmod 640 (owner root, group jackpot-controller): sudo "
        f"chown root:jackpot-controller {secret} && sudo chmod 640 {secret}"
    )
    secret.chmod(0o644)
    assert check(capsys, str(path)) == (2, [], [f"--password-file: {problem}"])
    other = tmp_path / "elsewhere"
    other.write_text("s3cret\n", encoding="utf-8")
    other.chmod(0o660)
    code, _, err = check(capsys, str(path), "--password-file", str(other))
    assert code == 2 and err == [
        f"--password-file: {other} is mode 0660, writable by its group: the broker password "
        "must be readable by root and the service only; chmod 640 (owner root, group "
        f"jackpot-controller): sudo chown root:jackpot-controller {other} && sudo chmod 640 "
        f"{other}"
    ]
    with pytest.raises(SystemExit) as stopped:
        main(["--config", str(path), "--password-file", str(secret),
              "--ledger", str(tmp_path / "l.db")])  # fmt: skip
    assert stopped.value.code == 2
    assert capsys.readouterr().err == f"jackpot-controller: --password-file: {problem}\n"
    assert not (tmp_path / "l.db").exists()
    secret.chmod(0o600)
    secret.write_text("\n", encoding="utf-8")
    code, _, err = check(capsys, str(path))
    assert code == 2 and err[0].startswith(f"--password-file: {secret} is empty; write the ")


# -- spots -----------------------------------------------------------------------------------

T7 = "hcm-bj-07"


def envelope(seq: int, kind: str, key: str, payload: dict) -> dict:
    message = {"v": 1, "table": T7, "boot": 1, "seq": seq, "key": key, "kind": kind,
               "sent_t": 1_700_000_000_000 + seq, "payload": payload}  # fmt: skip
    validate(kind, message)
    return message


def contribution(seq: int, spot: int) -> dict:
    payload = {"round": seq, "game": "pa-standard", "spot": spot, "wager": "blazing_7s",
               "pool": "blazing_7s", "stake": 500, "mystery": True}  # fmt: skip
    return envelope(seq, "contribution", f"round-{seq}/spot-{spot}/b7/c", payload)


def round_result(seq: int, spot: int) -> dict:
    cards = ["7D", "7D"]
    line = {"effect": "settled", "spot": spot, "wager": "blazing_7s", "stake": 500,
            "outcome": "win", "paid": 0, "returned": 0, "reason": "Three 7's - Diamonds",
            "meter": "100% of meter", "pool": "blazing_7s"}  # fmt: skip
    payload = {"round": seq, "game": "pa-standard", "void": None, "dealer": ["7D", "KH"],
               "spots": [{"spot": spot, "first_two": cards, "hands": [cards]}],
               "settlements": [line], "stake": 500, "paid": 0, "returned": 0}  # fmt: skip
    return envelope(seq, "round_result", f"round-{seq}/result", payload)


def hit_claim(seq: int, rnd: int, spot: int) -> dict:
    payload = {"round": rnd, "game": "pa-standard", "spot": spot, "wager": "blazing_7s",
               "pool": "blazing_7s", "stake": 500, "line": "Three 7's - Diamonds",
               "meter": "100% of meter", "cards": ["7D", "7D"], "up_card": "7D"}  # fmt: skip
    return envelope(seq, "hit_claim", f"round-{rnd}/spot-{spot}/b7/hit", payload)


def test_spots_come_from_the_table_its_property_or_the_default():
    config = parse_config(TEXT, "j.toml")
    assert config.spots_for(T7) == (7, "the default, no spots in its [tables.ID] or "
                                       "[properties.ID]")  # fmt: skip
    config = parse_config(
        edited(
            ('"hcm-bj-07"]\ngames', '"hcm-bj-07"]\nspots = 5\ngames'),
            (TABLE_SECTION, "[tables.hcm-bj-07]\nspots = 6"),
        ),
        "j.toml",
    )
    assert config.spots_for(T7) == (6, "[tables.hcm-bj-07] spots")
    assert config.spots_for("hcm-bj-01") == (5, "[properties.hcm] spots")
    assert config.spots_for("hcy-bj-01")[0] == 7
    for bad in ("0", "8", '"7"', "true", "6.5"):
        with pytest.raises(JackpotConfigError) as caught:
            parse_config(edited((TABLE_SECTION, f"[tables.hcm-bj-07]\nspots = {bad}")), "j.toml")
        assert (caught.value.section, caught.value.key) == ("tables.hcm-bj-07", "spots"), bad


def test_the_ledger_refuses_a_spot_the_table_does_not_have_before_anything_changes(tmp_path):
    """Issue 26: a contribution for spot 9 of a 7-spot table was applied. Now a contribution,
    a round result or a hit claim naming a spot past the table's count is refused with its
    terms alarm: it takes its sequence (the stream goes on), no meter moves, nothing is
    recorded as a contribution or a proof. spots = 6 refuses spot 7; the default 7 refuses 8
    and 9 (the link's schema allows up to 9)."""
    six = parse_config(edited((TABLE_SECTION, "[tables.hcm-bj-07]\nspots = 6")), "j.toml")
    with Ledger(tmp_path / "ledger.db", six, randbelow=lambda n: n - 1) as led:
        before = led.meters()
        refused = [
            (contribution(1, 7), "contribution_terms"),
            (round_result(2, 7), "round_result_terms"),
            (hit_claim(3, 2, 7), "claim_terms"),
        ]
        for message, alarm in refused:
            got = led.apply(message)
            assert (got.status, got.alarm, got.ack) == (Status.REFUSED, alarm, message["seq"])
            assert got.reason.startswith(
                "spot 7: table hcm-bj-07 has 6 betting spots (1 to 6; [tables.hcm-bj-07] spots "
                "in the jackpot config): a spot it does not have"
            ), got.reason
            assert got.meters == ()
        assert [a.state for a in led.awards()] == ["refused"]  # the claim's answer, $0
        assert led.meters() == before and "contribution" not in led.totals("blazing_7s")
        assert led.apply(contribution(4, 6)).status is Status.APPLIED  # spot 6 is fine
        assert led.meters() != before
        assert led.ack(T7) == 4
    default = parse_config(TEXT, "j.toml")
    with Ledger(tmp_path / "default.db", default, randbelow=lambda n: n - 1) as led:
        for seq, spot in ((1, 9), (2, 8)):
            got = led.apply(contribution(seq, spot))
            assert (got.status, got.alarm) == (Status.REFUSED, "contribution_terms")
            assert f"spot {spot}: table hcm-bj-07 has 7 betting spots" in got.reason
        assert led.apply(contribution(3, 7)).status is Status.APPLIED
