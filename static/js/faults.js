/* Fault board and ticket page: on a "faults" live event, re-fetch this page and swap the live
 * regions (as live.js does after a reconnect), so every viewer sees new and moved tickets.
 * Events come in bursts (an event storm, 20 copies of one XID): one refresh per burst. */
(() => {
  "use strict";
  const DEBOUNCE_MS = 300;
  let timer = 0, running = false, again = false;

  async function refresh() {
    if (running) { again = true; return; }
    running = true;
    try {
      const res = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const focused = document.activeElement;
      document.querySelectorAll("[id][data-live-region]").forEach((old) => {
        // Never pull a form out from under someone typing in it.
        if (focused && old.contains(focused) && focused.matches("input, textarea, select")) return;
        const fresh = doc.getElementById(old.id);
        if (!fresh) return;
        const copy = document.importNode(fresh, true);
        old.replaceWith(copy);
        if (window.htmx) window.htmx.process(copy);
      });
    } catch (err) {
      console.warn("faults: refresh failed", err);
    } finally {
      running = false;
      if (again) { again = false; schedule(); }
    }
  }

  function schedule() { clearTimeout(timer); timer = setTimeout(refresh, DEBOUNCE_MS); }

  function relevant(payload) {
    const page = document.querySelector("[data-fault-ticket]");
    return !page || String(payload.id) === page.dataset.faultTicket;
  }

  function start() {
    if (!window.PortalLive) return;
    ["fault.created", "fault.updated"].forEach((name) =>
      window.PortalLive.on(name, (payload) => { if (relevant(payload)) schedule(); }));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
