"""Betting: the bet sensors, keyed wager amounts and no more bets (lockout), which latches the
wagers and starts the round. A part of :class:`controller.table.machine.Table`."""

from __future__ import annotations

from typing import Any

from controller.errors import ProcedureError, WagerError
from controller.rules.pays import format_cents
from controller.rules.profile import PROGRESSIVE_WAGERS
from controller.rules.sidebets import blackjack_tie
from controller.table.effects import Light, Publish
from controller.table.events import BetSensor, Lockout, WagerAmount
from controller.table.part import TablePart, shared_light
from controller.table.state import DEALER, IN_PROGRESS, HandInPlay, Phase, RoundState, SpotInPlay
from controller.table.view import bet_name

_CIRCLE_ON: dict[tuple[int, str], tuple[str, Light]] = {}
"""The light of each spot's bet circle, ``spot3.lucky_ladies``, and its :class:`Light` on, by
spot and circle (bounded by the layouts' names, as :data:`~controller.table.part._LIGHTS`)."""


_LAYOUTS: dict[tuple[int, tuple[str, ...]], tuple[bool, tuple[tuple[int, Any], ...]]] = {}
"""What lockout reads of a layout (spots, circles), made once per layout: whether it has
Blackjack Tie circles, and each spot's number with each circle and its sensor key."""


def _layout(spots: int, circles: tuple[str, ...]) -> tuple[bool, tuple[tuple[int, Any], ...]]:
    made = _LAYOUTS[(spots, circles)] = (
        any(c.startswith("blackjack_tie.") for c in circles),
        tuple((number, tuple((c, (number, c)) for c in circles)) for number in range(1, spots + 1)),
    )
    return made


def _circle_on(spot: int, circle: str) -> tuple[str, Light]:
    name = f"spot{spot}.{circle}"
    made = _CIRCLE_ON[(spot, circle)] = (name, shared_light(name, "on"))
    return made


class Betting(TablePart):
    """Bet circles, wager amounts and lockout."""

    def _check_circle(self, spot: int, circle: str, what: str) -> None:
        if not 1 <= spot <= self.settings.spots:
            raise ProcedureError(
                f"{what} refused: spot {spot} does not exist; this table has spots 1 to "
                f"{self.settings.spots}"
            )
        if circle not in self.circles:
            raise ProcedureError(
                f"{what} refused: '{circle}' is no bet circle of {self.rules.name}; circles: "
                f"{', '.join(self.circles)}"
            )

    def _on_bet(self, event: BetSensor) -> None:
        if not (1 <= event.spot <= self.settings.spots and event.circle in self.circles):
            self._check_circle(event.spot, event.circle, "bet sensor")  # says which, refuses
        state = self.state
        key = (event.spot, event.circle)
        if state.sensors.get(key, False) == event.on:
            return
        if event.on:
            state.sensors[key] = True
        else:
            state.sensors.pop(key, None)
            state.amounts.pop(key, None)
        if state.phase not in IN_PROGRESS:
            return
        spot = self.state.round.spots.get(event.spot)
        latched = spot is not None and event.circle in spot.wagers
        where = f"spot {event.spot} {bet_name(event.circle)}"
        light = f"spot{event.spot}.{event.circle}"
        if event.on and not latched:
            self._light(light, "blink")
            self._alarm(
                "late_bet",
                f"Late bet at {where} after no more bets: it is not a wager",
                "Return the chips to the player",
                event.spot,
                event.circle,
            )
        elif event.on:
            self._light(light, "on")
        elif latched:
            self._light(light, "blink")
            self._alarm(
                "bet_removed",
                f"Chips taken from {where} after no more bets: the wager stands",
                "Stop the game and call the supervisor",
                event.spot,
                event.circle,
            )
        else:
            self._light(light, "off")

    def _wager_amount(self, spot: int, circle: str) -> int:
        fixed = self._fixed_amount(circle)
        if fixed is not None:
            return fixed
        default = self.settings.main_minimum if circle == "main" else self.settings.side_minimum
        return self.state.amounts.get((spot, circle), default)

    def _fixed_amount(self, circle: str) -> int | None:
        fixed = self._fixed_amounts
        if circle not in fixed:  # once per circle and table: the rules do not change
            section = getattr(self.rules.side_bets, circle, None)
            fixed[circle] = getattr(section, "wager", None)
        return fixed[circle]

    def _on_wager(self, event: WagerAmount) -> None:
        self._check_circle(event.spot, event.circle, "wager amount")
        if self.state.phase is not Phase.BETTING:
            raise ProcedureError(
                "wager amount refused: wagers are locked until the round ends; key amounts "
                "before no more bets"
            )
        amount, circle = event.amount, event.circle
        fixed = self._fixed_amount(circle)
        if fixed is not None and amount != fixed:
            raise WagerError(
                f"{bet_name(circle)} is a fixed {format_cents(fixed)} wager, not "
                f"{format_cents(amount)}"
            )
        if circle == "main":
            low, high = self.settings.main_minimum, self.settings.main_maximum
            if not low <= amount <= high:
                raise WagerError(
                    f"main wager of {format_cents(amount)} is outside the table limits "
                    f"{format_cents(low)} to {format_cents(high)}"
                )
        elif fixed is None:
            self._check_side_amount(circle, amount)
        self.state.amounts[(event.spot, circle)] = amount

    def _on_lockout(self, event: Lockout) -> None:
        state, rules = self.state, self.rules
        if state.phase is not Phase.BETTING:
            raise ProcedureError("no more bets refused: the wagers are already locked")
        if state.faults:
            raise ProcedureError(
                f"no more bets refused: the table is faulted ({self._fault_text()}); "
                f"{self._fault_advice()}"
            )
        if state.shoe_fault:
            raise ProcedureError(
                f"no more bets refused: the shoe reports a fault ({state.shoe_fault}); "
                "clear it first"
            )
        if state.door_open:
            raise ProcedureError("no more bets refused: the shoe door is open; close it")
        if state.cut_card_out:
            raise ProcedureError("no more bets refused: the cut card is out; shuffle first")
        if state.burn_expected:
            raise ProcedureError(
                "no more bets refused: no burn card has come out of the shoe since the "
                "shuffle; burn one card first"
            )
        layout = (self.settings.spots, self.circles)
        tie, sensor_keys = _LAYOUTS.get(layout) or _layout(*layout)
        spots: dict[int, SpotInPlay] = {}
        orphans: list[tuple[int, str]] = []
        no_link: list[tuple[int, str]] = []
        sensors, amounts = state.sensors, state.amounts
        fixed = self._fixed_amounts
        settings = self.settings
        main_minimum, side_minimum = settings.main_minimum, settings.side_minimum
        for number, keys in sensor_keys:
            placed = [c for c, key in keys if sensors.get(key)]  # (number, c): made once
            if not placed:
                continue
            if not state.jackpot_link and "main" in placed:
                no_link.extend((number, c) for c in placed if c in PROGRESSIVE_WAGERS)
                placed = [c for c in placed if c not in PROGRESSIVE_WAGERS]
            if "main" not in placed:
                orphans.extend((number, c) for c in placed)
                continue
            # {c: self._wager_amount(number, c) for c in placed}, its calls written out
            wagers = {}
            for circle in placed:
                amount = fixed[circle] if circle in fixed else self._fixed_amount(circle)
                if amount is None:
                    amount = amounts.get(
                        (number, circle), main_minimum if circle == "main" else side_minimum
                    )
                wagers[circle] = amount
            bonuses = tie and {
                c.split(".", 1)[1]: a for c, a in wagers.items() if c.startswith("blackjack_tie.")
            }
            if bonuses:
                try:
                    blackjack_tie.check_wagers(wagers["main"], bonuses)
                except WagerError as exc:
                    raise WagerError(f"no more bets refused: spot {number}: {exc}") from None
            spots[number] = SpotInPlay(number, wagers, [HandInPlay([], wagers["main"])])
        if not spots:
            raise ProcedureError(
                "no more bets refused: no main wager on the layout, nothing to deal"
            )
        # accepted: from here on nothing refuses
        number = state.round_number
        queue = [*spots, DEALER, *spots]
        if rules.dealer.hole_card == "face_down":
            queue.append(DEALER)
        state.round = RoundState(number, spots, deal_queue=queue, started_t=state.now)
        state.phase = Phase.DEALING
        self._light("lockout", "on")
        for spot_no, circle in orphans:
            self._light(f"spot{spot_no}.{circle}", "blink")
            self._alarm(
                "side_bet_without_main",
                f"Spot {spot_no} has a {bet_name(circle)} bet but no main wager: it is not a wager",
                "Return the chips to the player",
                spot_no,
                circle,
            )
        for spot_no, circle in no_link:
            self._light(f"spot{spot_no}.{circle}", "blink")
            self._alarm(
                "progressive_refused",
                f"Spot {spot_no}'s {bet_name(circle)} bet is not accepted: the jackpot link "
                "is down, so no progressive wager can be taken",
                "Return the chips to the player; progressive wagers resume when the link is back",
                spot_no,
                circle,
            )
        mystery = rules.mystery
        lights, out = state.lights, self._out
        for spot in spots.values():
            for circle, amount in spot.wagers.items():
                # self._light(f"spot{spot.number}.{circle}", "on"), its name and Light made
                # once per spot and circle (a lockout lights every wager's circle)
                lit = _CIRCLE_ON.get((spot.number, circle))
                if lit is None:
                    lit = _circle_on(spot.number, circle)
                name, light = lit
                if lights.get(name, "off") != "on":
                    lights[name] = "on"
                    out.append(light)
                if circle in PROGRESSIVE_WAGERS:
                    section = getattr(rules.side_bets, circle)
                    self._out.append(
                        Publish(
                            "contribution",
                            f"round-{number}/spot-{spot.number}/{circle}/contribution",
                            {
                                "round": number,
                                "game": rules.name,
                                "spot": spot.number,
                                "wager": circle,
                                "pool": section.pool,
                                "stake": amount,
                                "mystery": mystery.offered and circle in mystery.eligible_wagers,
                            },
                        )
                    )
        first = next(iter(spots))
        self._prompt("deal", f"No more bets: deal spot {first} first")
