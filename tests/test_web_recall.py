"""Recall across the journal's files on the diagnostics page, over real HTTP (issue 17).

The rig (tests/table_rig.py) runs the real daemon with a ``[web]`` section and a ``[journal]``
zone. A technician starts a new journal file from the page (a login and the session's CSRF
token needed, as for every action), plays on, and finds each round by number and by local
time, in whichever file holds it; the download of a round now in an archive carries its
local date and time and replays to the same settlement.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.parse
from zoneinfo import ZoneInfo

import pytest
from mqtt_broker import broker  # noqa: F401
from table_rig import Rig, free_port, replayed_settlements, settlement_keys
from test_web_server import PASSWORD, Http, wait_http, web_section

from controller.journal.rotation import archives
from controller.web.auth import hash_password

ZONE = "America/New_York"


@pytest.fixture
def zoned_rig(tmp_path, broker):  # noqa: F811
    port = free_port()
    rig = Rig(tmp_path, broker, web=web_section(port, hash_password(PASSWORD, n=2**10)))
    with rig.config.open("a", encoding="utf-8") as config:
        config.write(f'\n[journal]\ntimezone = "{ZONE}"\n')
    rig.http_port = port
    try:
        rig.start_table()
        wait_http(port)
        yield rig
    finally:
        rig.stop()


def local(utc_ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(utc_ms / 1000, dt.UTC).astimezone(ZoneInfo(ZONE))


def search(web: Http, **query: str) -> tuple[int, dict]:
    status, _h, body = web.request("GET", "/api/rounds/search?" + urllib.parse.urlencode(query))
    return status, json.loads(body)


def test_a_new_journal_file_from_the_page_and_recall_across_files(zoned_rig, tmp_path):
    rig = zoned_rig
    live = tmp_path / "data" / "journal.sqlite"
    rig.bets()
    rig.play_round()

    # starting a new file is an action: a login, then the session's CSRF token
    anon = Http(rig.http_port)
    assert anon.request("POST", "/api/journal/rotate", {})[0] == 401
    assert anon.request("GET", "/api/rounds/search?round=1")[0] == 401
    web = Http(rig.http_port)
    web.login()
    assert web.request("POST", "/api/journal/rotate", {}, csrf=False)[0] == 403
    status, _h, body = web.request(
        "POST", "/api/journal/rotate", {}, headers={"X-CSRF-Token": "x" * 43}, csrf=False
    )
    assert status == 403
    assert archives(live) == []  # refused: nothing happened
    status, _h, body = web.request("POST", "/api/journal/rotate", {})
    assert status == 200, body
    answer = json.loads(body)
    assert answer["ok"] and answer["rotated"], answer
    [archive] = archives(live)
    assert answer["archive"] == archive.path.name
    assert archive.path.stat().st_mode & 0o777 == 0o444

    for sensor in ("1.main", "1.blazing_7s", "2.main"):  # chips off, then the next round's on
        rig.act("input", name=f"sensors.{sensor}", active=False)
    rig.bets()
    rig.play_round()

    # by number: round 1 from the archive, round 2 from the live file, local times shown
    files = {}
    for number, file in ((1, archive.path.name), (2, live.name)):
        status, found = search(web, round=str(number))
        assert status == 200, found
        [record] = found["rounds"]
        assert record["round"] == number and record["file"] == file
        start, end = local(record["started_utc_ms"]), local(record["settled_utc_ms"])
        assert record["when"].endswith(f"{end:%H:%M:%S %Z}")
        assert record["when"].startswith(f"{start:%Y-%m-%d %H:%M:%S}")
        assert f"Round {number}  {record['when']}\n  journal file: {file}\n" in record["text"]
        assert "dealer: 6♦ 10♣ 9♠ = bust 25" in record["text"]
        files[number] = record
    status, missing = search(web, round="3")
    assert status == 404 and "no record of round 3" in missing["error"]

    # by local time, as a supervisor types it: the minute round 1 settled, New York time
    at = f"{local(files[1]['settled_utc_ms']):%Y-%m-%d %H:%M}"
    status, near = search(web, at=at)
    assert status == 200, near
    assert 1 in [r["round"] for r in near["rounds"]]
    since = f"{local(files[1]['started_utc_ms']) - dt.timedelta(minutes=1):%Y-%m-%d %H:%M}"
    until = f"{local(files[2]['settled_utc_ms']) + dt.timedelta(minutes=1):%Y-%m-%d %H:%M}"
    status, both = search(web, at=since, to=until)
    assert status == 200, both
    assert [(r["round"], r["file"]) for r in both["rounds"]] == [
        (1, archive.path.name),
        (2, live.name),
    ]
    status, bad = search(web, at="yesterday at nine")
    assert status == 400 and "YYYY-MM-DD HH:MM" in bad["error"]
    assert search(web)[0] == 400

    # the last ten reach into the archive; the download of round 1 comes from it
    rounds = web.get_json("/api/rounds")["rounds"]
    assert [(r["round"], r["file"]) for r in rounds] == [(2, live.name), (1, archive.path.name)]
    status, _headers, script = web.request("GET", "/api/rounds/1/script")
    assert status == 200
    text = script.decode()
    assert json.loads(text.splitlines()[0])["type"] == "header"
    assert f"# round 1: {files[1]['when']}\n" in text
    assert f"# journal file: {archive.path.name}\n" in text
    path = tmp_path / "round-1.jsonl"
    path.write_bytes(script)
    assert replayed_settlements(path) == settlement_keys(files[1]["result"]["settlements"])
