// The login page: POST /login as JSON, show the server's error text, go to /diag on success.
"use strict";

(() => {
  const form = document.getElementById("login-form");
  const nameInput = document.getElementById("name");
  const password = document.getElementById("password");
  const submit = document.getElementById("login-submit");
  const error = document.getElementById("login-error");
  let waitTimer = null;

  function showError(text) {
    error.textContent = text;
    error.hidden = !text;
  }

  // After 429 / "wait N s": keep the button off until the server will listen again.
  function holdButton(seconds) {
    clearInterval(waitTimer);
    let left = seconds;
    submit.disabled = true;
    submit.textContent = `Wait ${left} s`;
    waitTimer = setInterval(() => {
      left -= 1;
      if (left <= 0) {
        clearInterval(waitTimer);
        submit.disabled = false;
        submit.textContent = "Log in";
      } else {
        submit.textContent = `Wait ${left} s`;
      }
    }, 1000);
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError("");
    submit.disabled = true;
    let response;
    let data = {};
    try {
      response = await fetch("/login", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ name: nameInput.value.trim(), password: password.value }),
        credentials: "same-origin",
      });
      try {
        data = await response.json();
      } catch (_) {
        data = {};
      }
    } catch (exc) {
      submit.disabled = false;
      showError(`The table controller does not answer (${exc.message}); check the network and try again.`);
      return;
    }
    if (response.ok && data.ok) {
      window.location.assign("/diag");
      return;
    }
    submit.disabled = false;
    password.value = "";
    password.focus();
    showError(data.error || `Login failed (HTTP ${response.status}).`);
    const retry = parseInt(response.headers.get("Retry-After") || "0", 10);
    if (retry > 0) {
      holdButton(retry);
    }
  });

  // Already logged in (a session cookie still valid): say so, with the way in.
  fetch("/api/session", { credentials: "same-origin" })
    .then((r) => (r.ok ? r.json() : null))
    .then((s) => {
      if (s && s.ok) {
        const p = document.createElement("p");
        p.className = "hint";
        p.id = "already";
        p.append(`Logged in as ${s.user}: `);
        const a = document.createElement("a");
        a.href = "/diag";
        a.textContent = "open the diagnostics page";
        p.append(a);
        form.before(p);
      }
    })
    .catch(() => {});
})();
