// The GPIO picture (an ES module): the table seen from the dealer's side, every pin live on
// it, and the light test's progress.

import { betName } from "./format.js";
import { $, el, svg } from "./dom.js";
import { page } from "./diag-api.js";

const CIRCLE_ORDER = ["main", "lucky_ladies", "twenty_one_plus_three_xtreme", "blazing_7s", "ez_bust", "bonus_16", "blackjack_tie"];
const CIRCLE_SHORT = {
  main: "",
  lucky_ladies: "LL",
  twenty_one_plus_three_xtreme: "21+3",
  blazing_7s: "B7",
  ez_bust: "EZ",
  bonus_16: "16",
  blackjack_tie: "Tie",
  insurance: "Ins",
};
const BUTTON_WORDS = {
  lockout: "No more bets",
  next: "Next",
  double: "Double",
  split: "Split",
  surrender: "Surrender",
  end_round: "End round",
  burn: "Burn",
  misdeal: "Misdeal",
  void_round: "Void round",
  supervisor_key: "Supervisor key",
  insurance: "Insurance",
  even_money: "Even money",
  ez_bust: "EZ Bust",
  double_up: "Double Up",
};
const LAMP_WORDS = { lockout: "No-more-bets lamp", alarm: "Alarm tower" };
const STATE_WORDS = { on: "on", off: "off", unknown: "cannot be read", pending: "changing (not yet confirmed)" };

function inputState(input) {
  if (!input || input.active === null || input.active === undefined) return "unknown";
  if (input.confirmed !== undefined && input.active !== input.confirmed) return "pending";
  return input.active ? "on" : "off";
}

function inputDetail(input) {
  if (!input) return "";
  const rejected = input.rejected ? `, ${input.rejected} rejected as bounce` : "";
  return `pin ${input.pin}, ${input.edges ?? 0} changes${rejected}`;
}

// The pin names of the status, sorted into the picture: spots (circles with their sensor
// and lamp, the action lamp, per-spot buttons), the dealer's console and the table's lamps.
function gpioModel(gpio) {
  const spots = new Map();
  const buttons = [];
  const lamps = [];
  const spot = (n) => {
    if (!spots.has(n)) spots.set(n, { circles: new Map(), action: null });
    return spots.get(n);
  };
  const circle = (n, name) => {
    const s = spot(n);
    if (!s.circles.has(name)) s.circles.set(name, {});
    return s.circles.get(name);
  };
  for (const [name, input] of Object.entries((gpio && gpio.inputs) || {})) {
    let m;
    if ((m = name.match(/^sensors\.(\d+)\.(.+)$/))) {
      Object.assign(circle(Number(m[1]), m[2]), { input, inputName: name });
    } else if ((m = name.match(/^console\.([a-z_]+)\.(\d+)$/))) {
      buttons.push({ name, input, word: `${BUTTON_WORDS[m[1]] || m[1].replace(/_/g, " ")} ${m[2]}` });
    } else {
      const key = name.replace(/^console\./, "");
      buttons.push({ name, input, word: BUTTON_WORDS[key] || key.replace(/[._]/g, " "), keySwitch: key === "supervisor_key" });
    }
  }
  for (const [name, state] of Object.entries((gpio && gpio.lights) || {})) {
    let m;
    if ((m = name.match(/^spot(\d+)\.action$/))) spot(Number(m[1])).action = { name, state };
    else if ((m = name.match(/^spot(\d+)\.(.+)$/))) Object.assign(circle(Number(m[1]), m[2]), { light: state, lightName: name });
    else lamps.push({ name, state, word: LAMP_WORDS[name] || name.replace(/_/g, " ") });
  }
  const rank = (name) => {
    const i = CIRCLE_ORDER.indexOf(name);
    return i < 0 ? CIRCLE_ORDER.length : i;
  };
  const sorted = [...spots.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([n, s]) => ({
      spot: n,
      action: s.action,
      circles: [...s.circles.entries()].sort((a, b) => rank(a[0]) - rank(b[0]) || a[0].localeCompare(b[0])).map(([name, c]) => ({ circle: name, ...c })),
    }));
  const order = Object.keys(BUTTON_WORDS);
  const place = (b) => {
    const key = b.name.replace(/^console\./, "").replace(/\.\d+$/, "");
    const i = order.indexOf(key);
    return i < 0 ? order.length : i;
  };
  buttons.sort((a, b) => place(a) - place(b) || a.name.localeCompare(b.name, "en", { numeric: true }));
  return { spots: sorted, buttons, lamps };
}

// "spot3.action" -> "spot 3 action lamp"; "spot1.main" -> "spot 1 main wager lamp"
function lampWords(name) {
  const m = String(name).match(/^spot(\d+)\.(.+)$/);
  if (m) return `spot ${m[1]} ${m[2] === "action" ? "action" : betName(m[2])} lamp`;
  return (LAMP_WORDS[name] || String(name).replace(/_/g, " ")).replace(/^./, (c) => c.toLowerCase());
}

function lampClass(state) {
  return state === "on" ? "lamp-on" : state === "blink" ? "lamp-blink" : state === "off" ? "lamp-off" : "lamp-unknown";
}

export function renderGpio(gpio) {
  const box = $("gpio-picture");
  const model = gpioModel(gpio);
  if (!model.spots.length && !model.buttons.length && !model.lamps.length) {
    box.replaceChildren(el("p", { class: "none", text: "No GPIO pins in this table's pin map." }));
    return;
  }
  const W = 1000;
  const n = Math.max(1, model.spots.length);
  const margin = 30;
  const slot = (W - 2 * margin) / n;
  const perRow = 8;
  const consoleRows = Math.max(1, Math.ceil(model.buttons.length / perRow));
  const consoleTop = 330;
  const H = Math.max(consoleTop + 36 + consoleRows * 46 + 10, consoleTop + 20 + model.lamps.length * 34 + 10);
  const picture = svg("svg", {
    viewBox: `0 0 ${W} ${H}`,
    class: "gpio-svg",
    role: "img",
    "aria-label": `The table with ${model.spots.length} spots and the dealer's console`,
    "data-testid": "gpio-svg",
  });
  picture.append(svg("path", { class: "felt", d: `M 10 300 L 10 170 C 10 -20 ${W - 10} -20 ${W - 10} 170 L ${W - 10} 300 Z` }));
  picture.append(svg("text", { x: W / 2, y: 292, class: "g-label dealer-label", "text-anchor": "middle", text: "Dealer" }));

  model.spots.forEach((s, i) => {
    const x = margin + (i + 0.5) * slot;
    const u = (x - W / 2) / (W / 2 - margin);
    const y = 60 + 110 * u * u; // along the table's curved edge
    const group = svg("g", { class: "g-spot", "data-testid": `gpio-spot-${s.spot}` });
    const mains = s.circles.filter((c) => c.circle === "main");
    const sides = s.circles.filter((c) => c.circle !== "main");
    const sideR = Math.min(14, slot / (2.6 * Math.max(1, sides.length)));
    const mainR = Math.min(26, slot / 4);
    const place = [];
    sides.forEach((c, k) => place.push([c, x + (k - (sides.length - 1) / 2) * (2.4 * sideR + 2), y, sideR]));
    mains.forEach((c) => place.push([c, x, y + sideR + mainR + 10, mainR]));
    for (const [c, cx, cy, r] of place) {
      const state = c.input ? inputState(c.input) : "none";
      const lamp = c.light ? lampClass(c.light) : "";
      const title = `Spot ${s.spot} ${betName(c.circle)}: ` +
        (c.input ? `chips ${state === "on" ? "seen" : state === "off" ? "not seen" : STATE_WORDS[state]} (${inputDetail(c.input)})` : "no sensor") +
        (c.light ? `; circle lamp ${c.light}` : "");
      const node = svg(
        "g",
        { class: `g-circle ${state} ${lamp}`, "data-testid": c.inputName ? `gpio-${c.inputName}` : null, "data-state": state, "data-lamp": c.light || null },
        svg("title", { text: title }),
        c.light ? svg("circle", { class: "ring", cx, cy, r: r + 4, "data-testid": `gpio-${c.lightName}`, "data-state": c.light }) : null,
        svg("circle", { class: "disc", cx, cy, r }),
        svg("text", { x: cx, y: cy + 4, "text-anchor": "middle", class: "g-short", text: CIRCLE_SHORT[c.circle] ?? c.circle.slice(0, 3) }),
      );
      group.append(node);
    }
    const labelY = y + sideR + 2 * mainR + 32;
    group.append(svg("text", { x: x - 6, y: labelY, "text-anchor": "middle", class: "g-label", text: `Spot ${s.spot}` }));
    if (s.action) {
      group.append(
        svg(
          "circle",
          { class: `g-lamp ${lampClass(s.action.state)}`, cx: x + 32, cy: labelY - 5, r: 7, "data-testid": `gpio-${s.action.name}`, "data-state": s.action.state },
          svg("title", { text: `Spot ${s.spot} action lamp: ${s.action.state}` }),
        ),
      );
    }
    picture.append(group);
  });

  // the dealer's console: a panel of buttons, the table's lamps beside it
  const panelW = W - 20 - (model.lamps.length ? 215 : 0);
  picture.append(svg("rect", { class: "console", x: 10, y: consoleTop, width: panelW, height: H - consoleTop - 6, rx: 8 }));
  picture.append(svg("text", { x: 20, y: consoleTop + 22, class: "g-label", text: "Dealer's console" }));
  const bw = Math.min(112, (panelW - 20) / Math.min(perRow, Math.max(1, model.buttons.length)) - 8);
  model.buttons.forEach((b, k) => {
    const bx = 20 + (k % perRow) * (bw + 8);
    const by = consoleTop + 32 + Math.floor(k / perRow) * 46;
    const state = inputState(b.input);
    const word = b.word;
    picture.append(
      svg(
        "g",
        { class: `g-button ${state}`, "data-testid": `gpio-${b.name}`, "data-state": state },
        svg("title", { text: `${b.word}: ${b.keySwitch ? (state === "on" ? "key turned" : state === "off" ? "key off" : STATE_WORDS[state]) : state === "on" ? "pressed" : state === "off" ? "not pressed" : STATE_WORDS[state]} (${inputDetail(b.input)})` }),
        svg("rect", { x: bx, y: by, width: bw, height: 36, rx: 6 }),
        svg("text", { x: bx + bw / 2, y: by + 23, "text-anchor": "middle", "font-size": Math.min(13, (bw - 6) / (0.58 * word.length)).toFixed(1), text: word }),
      ),
    );
  });
  model.lamps.forEach((l, k) => {
    const lx = W - 195;
    const ly = consoleTop + 20 + k * 34;
    picture.append(
      svg(
        "g",
        { class: `g-table-lamp ${lampClass(l.state)}`, "data-testid": `gpio-${l.name}`, "data-state": l.state },
        svg("title", { text: `${l.word}: ${l.state}` }),
        svg("circle", { class: "g-lamp", cx: lx, cy: ly, r: 11 }),
        svg("text", { x: lx + 18, y: ly + 5, class: "g-label", text: `${l.word} ${l.state}` }),
      ),
    );
  });
  box.replaceChildren(picture);
}

export function renderLightTest(test) {
  const out = $("light-test-state");
  page.lightTestRunning = Boolean(test && (test.running || test.pending));
  if (!test) {
    out.hidden = true;
    out.removeAttribute("data-state");
    $("light-test").disabled = false;
    return;
  }
  out.hidden = false;
  out.classList.toggle("ok", !test.running && !test.pending);
  if (test.pending) {
    out.dataset.state = "pending";
    out.replaceChildren(`Light test queued (${test.by}): it runs when ${test.waiting_for || "the round ends"}; ${test.lights} lights`);
    $("light-test").disabled = true;
    return;
  }
  if (test.running) {
    out.dataset.state = "running";
    out.replaceChildren(
      `Light test running (${test.by}): ${test.light ? lampWords(test.light) : "…"} — ${test.done} of ${test.lights} lights done `,
      el("progress", { max: test.lights, value: test.done }),
    );
  } else {
    out.dataset.state = "done";
    out.replaceChildren(`Light test (${test.by}) ${test.result}`);
  }
  $("light-test").disabled = Boolean(test.running);
}
