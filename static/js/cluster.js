/* The dashboard's cluster view follows the cluster live (static/js/live.js delivers the events):
 * - "node.state" on "cluster" moves a cell (state, letter, hover text) and recounts the states;
 * - "jobs" and "faults" events re-read the summary cards and the grid from the server (debounced),
 *   since a count or a cell's fault mark cannot be derived from one event alone. The server only
 *   renders what the user may see, so a tenant admin's page never learns of other tenants. */
(() => {
  "use strict";
  const ALIASES = { not_responding: "down", completing: "allocated", "": "unknown" };
  const KNOWN = new Set(["idle", "allocated", "mixed", "draining", "drained", "down", "unknown"]);
  const REFRESH_DELAY_MS = { faults: 250, jobs: 1000 };
  const REGIONS = ["cluster-nodes-card", "cluster-gpus-card", "cluster-faults-card", "cluster-grid-card"];

  const gridState = (slurm) => {
    const state = Object.prototype.hasOwnProperty.call(ALIASES, slurm) ? ALIASES[slurm] : slurm;
    return KNOWN.has(state) ? state : "unknown";
  };
  const flash = (node) => { node.classList.remove("live-updated"); void node.offsetWidth; node.classList.add("live-updated"); };

  // Same text as portal/dashboard.py GridCell.label.
  function cellLabel(hostname, slurm, reason, openFaults, jobs) {
    const parts = [`${hostname}: ${slurm}`];
    if (reason) parts.push(`reason: ${reason}`);
    if (openFaults > 0) parts.push(`${openFaults} open fault ticket${openFaults > 1 ? "s" : ""}`);
    if (jobs) parts.push(`running job ${jobs}`);
    return parts.join(" · ");
  }

  function recount() {
    const counts = {};
    document.querySelectorAll(".cluster-racks .node-cell[data-state]").forEach((cell) => {
      counts[cell.dataset.state] = (counts[cell.dataset.state] || 0) + 1;
    });
    document.querySelectorAll("[data-state-count]").forEach((node) => {
      const next = String(counts[node.dataset.stateCount] || 0);
      if (node.textContent !== next) { node.textContent = next; flash(node); }
    });
  }

  function applyNodeState(payload) {
    const cell = document.getElementById(`node-cell-${payload.hostname}`);
    if (!cell) return;
    const slurm = String(payload.state || "unknown");
    const label = cellLabel(payload.hostname, slurm, payload.reason || "",
      Number(cell.dataset.openFaults || 0), cell.dataset.jobs || "");
    cell.dataset.state = gridState(slurm);
    cell.title = label;
    cell.setAttribute("aria-label", label);
    flash(cell);
  }

  // ---- re-reading the regions from the server ----------------------------------------------------
  let refreshTimer = 0, refreshDue = Infinity, fetching = null, heldStates = null;
  function scheduleRefresh(delay) {
    const due = Date.now() + delay;
    if (due >= refreshDue) return;         // an earlier refresh is already on its way
    clearTimeout(refreshTimer);
    refreshDue = due;
    refreshTimer = setTimeout(refresh, delay);
  }

  async function refresh() {
    refreshDue = Infinity;
    if (fetching) { scheduleRefresh(200); return; }   // one fetch at a time; go again after it
    heldStates = [];
    fetching = fetch(location.href, { credentials: "same-origin", cache: "no-store" });
    try {
      const res = await fetching;
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const focusedId = document.activeElement && document.activeElement.id;
      REGIONS.forEach((id) => {
        const old = document.getElementById(id), fresh = doc.getElementById(id);
        if (!old || !fresh) return;
        if (old.innerHTML !== fresh.innerHTML) old.replaceWith(document.importNode(fresh, true));
      });
      const again = focusedId && document.activeElement === document.body && document.getElementById(focusedId);
      if (again) again.focus({ preventScroll: true });
    } catch (err) {
      console.warn("cluster: refresh failed", err);
    }
    // Node states that arrived while the page was fetched may be newer than the copy.
    const held = heldStates;
    fetching = null; heldStates = null;
    held.forEach(applyNodeState);
    recount();
  }

  document.addEventListener("live:node.state", (event) => {
    const payload = event.detail.payload || {};
    if (heldStates) heldStates.push(payload);
    applyNodeState(payload);
    recount();
  });
  document.addEventListener("live:event", (event) => {
    const delay = REFRESH_DELAY_MS[event.detail.group];
    if (delay !== undefined) scheduleRefresh(delay);
  });
  document.addEventListener("live:resync", recount);
})();
