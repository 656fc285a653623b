// Primer console: the few things a page needs script for. Every page works
// without it (forms post, pages reload); with it, the provider form shows
// only the chosen type's fields, phases update live and exec output streams.
"use strict";
(function () {
  const csrf = document.body.dataset.csrf || "";

  // Show the fieldsets of the chosen option: an input with data-switch="x"
  // controls elements with a data-x attribute listing the values they serve.
  function applySwitch(name) {
    const chosen = document.querySelector('[data-switch="' + name + '"]:checked, select[data-switch="' + name + '"]');
    if (!chosen) return;
    document.querySelectorAll("[data-" + name + "]").forEach(function (el) {
      const on = el.getAttribute("data-" + name).split(" ").indexOf(chosen.value) >= 0;
      el.hidden = !on;
      el.querySelectorAll("input, select, textarea").forEach(function (i) { i.disabled = !on; });
    });
  }
  const names = new Set();
  document.querySelectorAll("[data-switch]").forEach(function (el) {
    names.add(el.dataset.switch);
    el.addEventListener("change", function () { names.forEach(applySwitch); });
  });
  names.forEach(applySwitch);

  function setPhase(cell, phase) {
    if (!cell) return;
    cell.textContent = phase;
    cell.dataset.phase = phase;
  }

  // The workspace list: follows the tenant's events (the server sends each
  // as a row update): phase and reason, a row removed when its workspace is
  // gone, a row added for a workspace made after the page was read. The
  // browser resumes after the last id on reconnecting.
  const list = document.getElementById("workspaces");
  if (list && list.dataset.live && window.EventSource) {
    const es = new EventSource(list.dataset.live);
    es.addEventListener("phase", function (m) {
      const u = JSON.parse(m.data);
      let row = list.querySelector('tr[data-ws="' + CSS.escape(u.id) + '"]');
      if (u.phase === "gone") { if (row) row.remove(); return; }
      if (!row) {
        const empty = list.querySelector("tr.empty");
        if (empty) empty.remove();
        row = document.createElement("tr");
        row.dataset.ws = u.id;
        const a = document.createElement("a");
        a.href = "/workspaces/" + encodeURIComponent(u.id);
        a.textContent = u.id;
        const cells = ["", "", "", "", "", "", ""].map(function () { return document.createElement("td"); });
        cells[0].appendChild(a);
        cells[3].className = "phase";
        cells[4].className = "reason";
        cells.forEach(function (c) { row.appendChild(c); });
        list.tBodies[0].prepend(row);
      }
      setPhase(row.querySelector(".phase"), u.phase);
      row.querySelector(".reason").textContent = u.reason || "";
      if (u.row) {
        row.cells[1].textContent = u.template || "";
        row.cells[2].textContent = u.backend || "";
        row.cells[5].textContent = u.pool || "";
        row.cells[6].textContent = u.created || "";
      }
    });
  }

  // The workspace page: its events as they happen; a phase change updates
  // the phase and reason shown at the top.
  const events = document.getElementById("events");
  if (events && events.dataset.live && window.EventSource) {
    const rows = events.querySelectorAll("tr[data-event]");
    const last = rows.length ? rows[rows.length - 1].dataset.event : "0";
    const es = new EventSource(events.dataset.live + "?after=" + encodeURIComponent(last));
    es.addEventListener("event", function (m) {
      const e = JSON.parse(m.data);
      if (events.querySelector('tr[data-event="' + e.id + '"]')) return;
      const tr = document.createElement("tr");
      tr.dataset.event = e.id;
      [String(e.id), e.created_at, e.type, JSON.stringify(e.data)].forEach(function (v, i) {
        const td = document.createElement("td");
        if (i === 3) { const c = document.createElement("code"); c.textContent = v; td.appendChild(c); } else { td.textContent = v; }
        tr.appendChild(td);
      });
      events.tBodies[0].appendChild(tr);
      if (e.type === "workspace.phase_changed" && e.data) {
        setPhase(document.getElementById("phase"), e.data.to);
        document.getElementById("reason").textContent = e.data.reason || "";
      }
      if (e.type === "workspace.destroyed") setPhase(document.getElementById("phase"), "destroyed");
    });
    es.addEventListener("end", function () { es.close(); });
  }
  // The phase on the workspace page also follows the row itself, which
  // covers changes that come with no event.
  const facts = document.getElementById("ws-facts");
  if (facts && window.EventSource) {
    const es = new EventSource("/live/workspaces?id=" + encodeURIComponent(facts.dataset.ws));
    es.addEventListener("phase", function (m) {
      const u = JSON.parse(m.data);
      setPhase(document.getElementById("phase"), u.phase);
      document.getElementById("reason").textContent = u.reason || "";
    });
  }

  // The command box: post the command and stream the output into the page.
  const form = document.getElementById("exec-form");
  const out = document.getElementById("exec-output");
  if (form && out && window.fetch && window.TextDecoder) {
    form.addEventListener("submit", async function (ev) {
      ev.preventDefault();
      const button = form.querySelector("button");
      button.disabled = true;
      out.textContent = "";
      out.dataset.done = "";
      try {
        const res = await fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)), headers: { "X-CSRF-Token": csrf } });
        const reader = res.body.getReader();
        const dec = new TextDecoder();
        for (;;) {
          const r = await reader.read();
          if (r.done) break;
          out.textContent += dec.decode(r.value, { stream: true });
        }
      } catch (e) {
        out.textContent += "\n[error: " + e + "]";
      } finally {
        out.dataset.done = "1";
        button.disabled = false;
      }
    });
  }

  // An agent run's session page: each transcript entry as it becomes final
  // (rendered by the console with the page's own template), the token
  // totals, and the run's end.
  const tr = document.getElementById("transcript");
  if (tr && tr.dataset.live && window.EventSource) {
    const es = new EventSource(tr.dataset.live + "?after=" + encodeURIComponent(tr.dataset.after || "0"));
    const setUsage = function (u) {
      if (!u) return;
      document.getElementById("usage-in").textContent = String(u.input_tokens);
      document.getElementById("usage-out").textContent = String(u.output_tokens);
    };
    es.addEventListener("entry", function (m) {
      const e = JSON.parse(m.data);
      const old = tr.querySelector('li[data-seq="' + e.seq + '"]');
      if (old) old.outerHTML = e.html; else tr.insertAdjacentHTML("beforeend", e.html);
      setUsage(e.usage);
    });
    es.addEventListener("end", function (m) {
      es.close();
      const run = JSON.parse(m.data);
      document.getElementById("run-status").textContent = run.status || "ended";
      document.getElementById("end-reason").textContent = (run.end_reason || "") + (run.error ? ": " + run.error : "");
      setUsage(run.usage);
      const cancel = document.getElementById("cancel-form");
      if (cancel) cancel.remove();
      tr.dataset.ended = "1";
    });
    es.addEventListener("failure", function (m) {
      es.close();
      document.getElementById("end-reason").textContent = "live transcript stopped: " + JSON.parse(m.data).message + " (reload the page)";
    });
  }
})();
