// Formatting shared by every panel of the diagnostics page (an ES module; the dealer display
// can import it too): money in integer cents, durations, card faces, the rule cards' names.
// Pure functions of their arguments: no DOM, no clock, no globals.

export const SUITS = { H: "\u2665", D: "\u2666", C: "\u2663", S: "\u2660" };

// integer cents -> "$1,234.50" (negative: "-$..."); null/undefined -> ""
export function money(cents) {
  if (cents === null || cents === undefined) return "";
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(cents);
  const dollars = Math.floor(abs / 100).toLocaleString("en-US");
  return `${sign}$${dollars}.${String(abs % 100).padStart(2, "0")}`;
}

// cents that may be a fraction (a chart's interpolated value) -> "$1,234.50"; none -> "–"
export function dollars(cents) {
  return cents === null || cents === undefined ? "–" : money(Math.round(cents));
}

// 0.123 -> "12.3%"
export function pct(v, digits = 1) {
  return v === null || v === undefined ? "–" : `${(v * 100).toFixed(digits)}%`;
}

// seconds -> "42 s", "3 min 5 s", "2 h 10 min", "3 d 4 h"; null -> "never"
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "never";
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  const h = Math.floor(s / 3600);
  if (h < 48) return `${h} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

// epoch seconds -> "HH:MM:SS.mmm" in the browser's zone
export function clock(epochS) {
  const d = new Date(epochS * 1000);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// epoch seconds -> the date and time in `zone` (the chart's hover)
export function localTime(epochS, zone) {
  const d = new Date(epochS * 1000);
  try {
    return d.toLocaleString("en-GB", { timeZone: zone || undefined, hour12: false });
  } catch (_) {
    return d.toLocaleString("en-GB", { hour12: false });
  }
}

// "10H" -> "10♥" (text, for titles and summaries)
export function cardText(text) {
  if (!text || text === "back") return "face down";
  return text.slice(0, -1) + (SUITS[text.slice(-1)] || text.slice(-1));
}

// The rule cards' names of the wagers and pools (never the internal ones)
const BET_NAMES = {
  main: "main wager",
  double_down: "Double Down",
  double_up: "Double Up",
  insurance: "insurance",
  even_money: "even money",
  lucky_ladies: "Lucky Ladies",
  twenty_one_plus_three_xtreme: "21+3 Xtreme",
  blazing_7s: "Blazing 7's",
  ez_bust: "EZ Bust",
  bonus_16: "16 Bonus",
  blackjack_tie: "Blackjack Tie",
  mystery: "Must-Hit-By Mystery",
};
const TIE_BONUS = { left_side: "LS", right_side: "RS", tie_blackjack: "Blackjack" };

// "lucky_ladies" -> "Lucky Ladies"; "blackjack_tie.tie_17" -> "Blackjack Tie 17"
export function betName(wager) {
  const text = String(wager ?? "");
  if (text.startsWith("blackjack_tie.")) {
    const bonus = text.slice("blackjack_tie.".length);
    return `Blackjack Tie ${TIE_BONUS[bonus] || bonus.replace(/^tie_/, "")}`;
  }
  return BET_NAMES[text] || text.replace(/_/g, " ");
}

// true/false -> yes/no; anything else as it is
export function yesNo(value) {
  if (value === true) return "yes";
  if (value === false) return "no";
  return value;
}

// a hand's total in words: "bust 23", "soft 17", "20"
export function totalText(total, soft) {
  if (total === null || total === undefined) return "";
  if (total > 21) return `bust ${total}`;
  return soft ? `soft ${total}` : String(total);
}
