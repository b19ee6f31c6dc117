// The dealer display's spots fitted to the screen (issue 30): no spot cut, no card lost,
// whatever a spot holds (seven cards in a hand, four split hands, seven settlement lines).
// Texts never shrink (14 px at least); what gives way is, in order:
//   - the spot's share of the width: each spot's flex-grow is its weight (dealer.js: what it
//     holds), raised for a spot that still does not fit;
//   - its text (data-fs 0 to 2, the last 14 px at 800x480), its cards' size (data-scale 0 to
//     4) and its split hands side by side (data-cols 2).
// A hand's cards wrap into rows by themselves (dealer.css): every card's index stays in view.
"use strict";

window.DealerFit = (() => {
  // [text, cards, columns of hands], the largest first
  const ONE_HAND = [[0, 0, 1], [1, 0, 1], [1, 1, 1], [2, 1, 1], [2, 2, 1], [2, 3, 1], [2, 4, 1]];
  const SPLIT = [
    [0, 0, 1], [1, 0, 1], [1, 1, 1], [1, 1, 2], [2, 1, 1], [2, 2, 1], [2, 1, 2], [2, 2, 2],
    [2, 3, 1], [2, 3, 2], [2, 4, 2], [2, 4, 1],
  ];
  const ONE_ROW_SCALE = 1;
  const ROUNDS = 4;
  const GROW = 1.5;

  function overflows(spot) {
    if (spot.scrollHeight > spot.clientHeight + 1 || spot.scrollWidth > spot.clientWidth + 1) return true;
    for (const cards of spot.querySelectorAll(".cards")) {
      if (cards.scrollWidth > cards.clientWidth + 1) return true;
    }
    return false;
  }

  // whether a hand's cards took more than one row
  function wrapped(spot) {
    for (const cards of spot.querySelectorAll(".cards")) {
      const list = cards.children;
      if (list.length > 1 && list[list.length - 1].offsetTop > list[0].offsetTop) return true;
    }
    return false;
  }

  // the largest text and cards that fit, one column of hands before two; each hand in one
  // row if it can be at the two largest card sizes (else rows of large cards rather than
  // one row of small ones)
  function fitSpot(spot) {
    const attempts = spot.querySelectorAll(".hand").length > 1 ? SPLIT : ONE_HAND;
    for (const rows of ["one", "many"]) {
      for (const [fs, scale, cols] of attempts) {
        if (rows === "one" && scale > ONE_ROW_SCALE) continue;
        spot.dataset.fs = String(fs);
        spot.dataset.scale = String(scale);
        spot.dataset.cols = String(cols);
        if (!overflows(spot) && (rows === "many" || !wrapped(spot))) {
          spot.dataset.fit = "yes";
          return true;
        }
      }
    }
    spot.dataset.fit = "no";
    return false;
  }

  // every spot of `container`; true when each fits
  function fit(container) {
    const spots = [...container.querySelectorAll(".spot")];
    const grow = spots.map((spot) => Number(spot.dataset.weight) || 1);
    for (let round = 0; round < ROUNDS; round++) {
      spots.forEach((spot, i) => spot.style.setProperty("flex-grow", String(grow[i])));
      const fits = spots.map(fitSpot);
      if (fits.every(Boolean)) return true;
      fits.forEach((ok, i) => {
        if (!ok) grow[i] *= GROW;
      });
    }
    return false;
  }

  // a spot's share of the width, from what it holds: more lines, hands and cards, more room
  function weight(spot) {
    const hands = spot.hands || [];
    const lines = spot.settlement ? spot.settlement.lines.length + 1 : (spot.chips || []).length;
    if (!spot.playing && !lines) return 0.5;
    const cards = Math.max(0, ...hands.map((hand) => (hand.cards || []).length));
    return 1 + 0.15 * Math.max(0, lines - 3) + 0.25 * Math.max(0, hands.length - 1) + 0.12 * Math.max(0, cards - 3);
  }

  return { fit, weight };
})();
