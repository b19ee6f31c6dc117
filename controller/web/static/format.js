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

// -- times of day: one format everywhere, in the table's zone, named -------------------
//
// "2026-11-26 13:09:36 EST": ISO-like, 24-hour, the zone's abbreviation as the browser
// names it in English (US zones: EST/EDT...; others may read GMT+1). The zone is the
// property's (the server sends it: the gaming day's, else the Pi's), never the browser's.

const FORMATTERS = new Map();

function formatter(zone) {
  const key = zone || "";
  if (!FORMATTERS.has(key)) {
    const options = {
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
      timeZoneName: "short",
    };
    let made;
    try {
      made = new Intl.DateTimeFormat("en-US", { ...options, timeZone: zone || "UTC" });
    } catch (_) {
      made = new Intl.DateTimeFormat("en-US", { ...options, timeZone: "UTC" }); // a zone this browser does not know
    }
    FORMATTERS.set(key, made);
  }
  return FORMATTERS.get(key);
}

function parts(ms, zone) {
  const out = {};
  for (const part of formatter(zone).formatToParts(new Date(ms))) out[part.type] = part.value;
  return out;
}

// UTC ms since the epoch -> "2026-11-26 13:09:36 EST" in `zone` (an IANA name); none -> ""
export function dateTime(ms, zone) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "";
  const p = parts(ms, zone);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${p.timeZoneName}`;
}

// the zone's name now: "America/New_York (EST)"
export function zoneName(zone, ms = Date.now()) {
  return `${zone || "UTC"} (${parts(ms, zone).timeZoneName})`;
}

// how long ago, from two UTC ms readings: "42 s ago", "3 min 5 s ago"
export function ago(ms, nowMs) {
  if (ms === null || ms === undefined) return "";
  return `${duration(Math.max(0, (nowMs - ms) / 1000))} ago`;
}

// what a technician types for a time ("2026-11-26 13:09", "2026-11-26T13:09", seconds
// optional) -> "2026-11-26 13:09[:SS]", or null when it is not a date and time
export function typedDateTime(text) {
  const m = String(text || "").trim().match(/^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(?::\d{2})?)$/);
  return m ? `${m[1]} ${m[2]}` : null;
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
