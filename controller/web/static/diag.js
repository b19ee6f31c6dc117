// The diagnostics page (an ES module): the bundle of /api/stream, live, handed to each panel
// (one module per panel: diag-*.js), and the technician's buttons. Everything from the
// server is written with textContent (never innerHTML): alarm texts, names and log lines
// are data, not markup.

import { duration } from "./format.js";
import { $, changed } from "./dom.js";
import { action, api, page, problem, tickAges } from "./diag-api.js";
import { renderSummary } from "./diag-summary.js";
import { renderTiles, renderZone } from "./diag-tiles.js";
import { renderFaults } from "./diag-faults.js";
import { renderAwards } from "./diag-awards.js";
import { renderAlarms } from "./diag-alarms.js";
import { renderFeed, renderTable } from "./diag-table.js";
import { renderGpio, renderLightTest } from "./diag-gpio.js";
import { loadOlder, loadRecall, recallLive, searchRecall } from "./diag-recall.js";
import { loadLog, logSoon } from "./diag-log.js";
import { loadAudit } from "./diag-audit.js";
import { historySoon, loadHistory, redrawHistory } from "./diag-history.js";

const STALE_MS = 5000;
const RECONNECT_MS = 2000;
const LOG_EVERY_MS = 5000;
const HISTORY_EVERY_MS = 60000;

let source = null;
let connectedAt = 0;
let lastUpdate = 0;
let recallKey = null;
let lastBundle = null;

// -- the bundle -----------------------------------------------------------------------

function render(bundle) {
  lastUpdate = Date.now();
  lastBundle = bundle;
  if (bundle.now_utc_ms) page.skewMs = bundle.now_utc_ms - Date.now();
  page.zone = bundle.zone || null;
  setStale(false);
  const status = bundle.status || {};
  const snap = status.snapshot || {};
  const health = bundle.health || {};
  renderHeader(bundle);
  renderSummary(bundle, null);
  if (changed("zone", [page.zone, bundle.started])) renderZone(bundle);
  if (changed("tiles", [status, health, bundle.history])) renderTiles(status, snap, health, bundle.history);
  if (changed("faults", [status.faults, status.journal_fault, (snap.shoe || {}).fault])) {
    renderFaults(status, snap);
  }
  const faults = document.querySelectorAll('#faults [data-testid="fault"]').length;
  $("nav-faults").textContent = String(faults);
  $("nav-faults").classList.toggle("hot", faults > 0);
  if (changed("alarms", [snap.alarms || [], snap.alarms_dropped])) renderAlarms(snap);
  if (changed("awards", snap.awards || [])) renderAwards(snap.awards || []);
  if (changed("table", snap)) renderTable(snap);
  if (changed("feed", bundle.feed)) {
    renderFeed(bundle.feed || []);
    logSoon(); // what the table just did is in the log too
  }
  if (changed("gpio", health.gpio)) renderGpio(health.gpio);
  if (changed("lighttest", bundle.light_test)) renderLightTest(bundle.light_test);
  const key = `${snap.round}/${snap.phase}`;
  if (key !== recallKey) {
    recallKey = key;
    if (recallLive()) loadRecall();
    logSoon();
    historySoon();
  }
}

function renderHeader(bundle) {
  $("table-id").textContent = bundle.table;
  $("game").textContent = bundle.game;
  $("version").textContent = bundle.build || bundle.version; // with the manifest's digest
  const sum = bundle.config_checksum || "";
  $("checksum").textContent = sum.slice(0, 12);
  $("checksum").title = sum;
  $("uptime").textContent = duration(bundle.uptime_s);
  document.title = `${bundle.table}: diagnostics`;
}

// -- live stream, stale marker --------------------------------------------------------

function setStale(stale) {
  document.body.classList.toggle("stale", stale);
  $("stale").hidden = !stale;
  if (stale) {
    const age = lastUpdate ? Math.round((Date.now() - lastUpdate) / 1000) : null;
    $("stale").textContent = age === null ? "STALE: no data yet" : `STALE: no update for ${age} s`;
    if (lastBundle) renderSummary(lastBundle, age);
  }
}

function connect() {
  if (source) source.close();
  connectedAt = Date.now();
  setLive("connecting…", "");
  const es = new EventSource("/api/stream");
  source = es;
  es.addEventListener("update", (event) => {
    let bundle;
    try {
      bundle = JSON.parse(event.data);
    } catch (_) {
      return; // a broken message: the next one (at most a second away) repairs the page
    }
    setLive("live", "ok");
    render(bundle);
  });
  es.addEventListener("logout", () => {
    es.close();
    window.location.assign("/login");
  });
  es.addEventListener("error", () => {
    if (es !== source) return;
    setLive("reconnecting…", "err");
    // After a dropped connection the browser retries by itself; a refused one (401, 503)
    // closes the source: check the session (401 goes to the login page), then start again.
    if (es.readyState === EventSource.CLOSED) {
      setTimeout(async () => {
        const { status } = await api("GET", "/api/session");
        if (es === source && status !== 401) connect();
      }, RECONNECT_MS);
    }
  });
}

function setLive(text, kind) {
  $("live").textContent = text;
  $("live").className = kind ? `live ${kind}` : "live";
}

// Stale: no update for STALE_MS. A stream that stays silent that long is started again,
// whatever state the browser thinks it is in.
function watchdog() {
  if (Date.now() - lastUpdate <= STALE_MS) return;
  setStale(true);
  if (Date.now() - connectedAt > STALE_MS) connect();
}

async function start() {
  const { status, data } = await api("GET", "/api/session");
  if (status !== 200) {
    if (status !== 401) problem(data.error || "cannot reach the table controller");
    return;
  }
  page.csrf = data.csrf;
  $("user").textContent = data.user;
  $("role").textContent = data.role ? `(${data.role})` : "";
  // what this account may not do is shown disabled, with why (the server refuses it too)
  const may = new Set(data.permissions || []);
  page.mayConfirm = may.has("confirm_award");
  for (const [id, permission] of [["clear-faults", "clear_faults"], ["ack-all", "acknowledge_alarm"], ["light-test", "light_test"], ["rotate-journal", "rotate_journal"]]) {
    if (!may.has(permission) && $(id)) {
      $(id).dataset.denied = "1";
      $(id).title = `${/^[aeiou]/.test(data.role) ? "an" : "a"} ${data.role} account may not do this`;
    }
  }

  $("logout").addEventListener("click", async () => {
    const { data: out } = await api("POST", "/logout", {});
    if (out.ok) window.location.assign("/login");
    else problem(out.error || "logout failed");
  });
  $("clear-faults").addEventListener("click", () => action($("clear-faults"), $("faults-msg"), "/api/faults/clear", {}, "Faults cleared"));
  $("ack-all").addEventListener("click", () => action($("ack-all"), $("alarms-msg"), "/api/alarms/ack", { alarm: 0 }, "All alarms acknowledged"));
  $("light-test").addEventListener("click", () => action($("light-test"), $("light-test-msg"), "/api/lights/test", {}, "Light test started"));
  $("recall-refresh").addEventListener("click", () => loadRecall(null));
  $("recall-older").addEventListener("click", loadOlder);
  $("history-refresh").addEventListener("click", loadHistory);
  $("history-hours").addEventListener("change", loadHistory);
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(redrawHistory, 250);
  });
  $("recall-search").addEventListener("submit", searchRecall);
  $("rotate-journal").addEventListener("click", () => action($("rotate-journal"), $("rotate-msg"), "/api/journal/rotate", {}, "New journal file started"));
  $("log-refresh").addEventListener("click", loadLog);
  $("log-level").addEventListener("change", loadLog);
  $("audit-refresh").addEventListener("click", loadAudit);

  const first = await api("GET", "/api/status");
  if (first.status === 200) render(first.data);
  else problem(first.data.error || `status failed (HTTP ${first.status})`);
  connect();
  setInterval(watchdog, 1000);
  setInterval(tickAges, 1000);
  setInterval(loadLog, LOG_EVERY_MS);
  loadAudit();
  setInterval(loadAudit, LOG_EVERY_MS);
  loadHistory();
  setInterval(loadHistory, HISTORY_EVERY_MS);
}

start();
