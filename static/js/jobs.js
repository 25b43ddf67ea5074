/* Jobs pages: runtimes that tick, and live refresh on job and node events.
 * Runtimes: every [data-runtime-since="<ISO time>"] shows the time since then, like squeue.
 * Live: the page subscribes (data-live-groups, see live.js) to "jobs", "job.<id>" or
 * "node.<id>"; on a matching event we re-fetch this page once (debounced) and replace each
 * [id][data-live-region], which keeps filters, sorting and paging exactly as the server has them. */
(() => {
  "use strict";
  if (window.PortalJobs) return;   // the node panel partial may bring this script a second time
  window.PortalJobs = { formatDuration: null };

  const REFRESH_DELAY_MS = 750;
  let refreshTimer = 0, refreshing = false, again = false;

  const pad = (n) => String(n).padStart(2, "0");
  function formatDuration(totalSeconds) {
    const s = Math.max(0, Math.floor(totalSeconds));
    const days = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
    const m = Math.floor((s % 3600) / 60), sec = s % 60;
    const clock = `${pad(h)}:${pad(m)}:${pad(sec)}`;
    return days ? `${days}d ${clock}` : clock;
  }

  function tick() {
    const now = Date.now();
    document.querySelectorAll("[data-runtime-since]").forEach((node) => {
      const since = Date.parse(node.dataset.runtimeSince);
      if (!isNaN(since)) node.textContent = formatDuration((now - since) / 1000);
    });
  }

  async function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      const res = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      document.querySelectorAll("[id][data-live-region]").forEach((old) => {
        const fresh = doc.getElementById(old.id);
        if (!fresh || !fresh.hasAttribute("data-live-region")) return;
        const copy = document.importNode(fresh, true);
        old.replaceWith(copy);
        copy.classList.add("live-updated");
        if (window.htmx) window.htmx.process(copy);
      });
      tick();
    } catch (err) {
      console.warn("jobs: refresh failed", err);
    } finally {
      refreshing = false;
      if (again) { again = false; schedule(); }
    }
  }

  function schedule() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refresh, REFRESH_DELAY_MS);
  }

  function followedGroups() {
    const names = new Set();
    document.querySelectorAll("[data-live-groups]").forEach((node) =>
      node.dataset.liveGroups.split(/\s+/).filter(Boolean).forEach((g) => names.add(g)));
    return names;
  }

  document.addEventListener("live:event", (event) => {
    const { group } = event.detail || {};
    if (!group) return;
    if (group === "jobs" || group.startsWith("job.") || group.startsWith("node.")) {
      if (followedGroups().has(group)) schedule();
    }
  });

  window.PortalJobs.formatDuration = formatDuration;
  function start() { tick(); setInterval(tick, 1000); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
