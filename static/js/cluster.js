/* The dashboard's node grid follows Slurm state live: "node.state" events on the "cluster"
 * group move a cell and the legend counts without a reload (static/js/live.js delivers them). */
(() => {
  "use strict";
  const ALIASES = { not_responding: "down", completing: "allocated", "": "unknown" };
  const KNOWN = new Set(["idle", "allocated", "mixed", "draining", "drained", "down", "unknown"]);
  const gridState = (slurm) => {
    const state = Object.prototype.hasOwnProperty.call(ALIASES, slurm) ? ALIASES[slurm] : slurm;
    return KNOWN.has(state) ? state : "unknown";
  };
  function recount() {
    const counts = {};
    document.querySelectorAll(".cluster-racks .node-cell[data-state]").forEach((cell) => {
      counts[cell.dataset.state] = (counts[cell.dataset.state] || 0) + 1;
    });
    document.querySelectorAll("[data-state-count]").forEach((node) => {
      node.textContent = String(counts[node.dataset.stateCount] || 0);
    });
  }
  document.addEventListener("live:node.state", (event) => {
    const payload = event.detail.payload || {};
    const cell = document.getElementById(`node-cell-${payload.hostname}`);
    if (!cell) return;
    const slurm = String(payload.state || "unknown");
    const label = `${payload.hostname}: ${slurm}${payload.reason ? ` — ${payload.reason}` : ""}`;
    cell.dataset.state = gridState(slurm);
    cell.title = label;
    cell.setAttribute("aria-label", label);
    cell.classList.remove("live-updated"); void cell.offsetWidth; cell.classList.add("live-updated");
    recount();
  });
  document.addEventListener("live:resync", recount);
})();
