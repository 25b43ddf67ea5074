/* The dashboard's cluster view follows the cluster live (static/js/live.js delivers the events):
 * - "node.state" on "cluster" moves a cell (state, letter, hover text) and the state counts by
 *   the event's previous and new state (the grid may show one pod or the problems only, so the
 *   cells on the page are not every node); a problems-only grid re-reads itself when a node it
 *   does not show turns drained or down;
 * - "jobs" and "faults" events re-read the summary cards and the grid from the server (debounced),
 *   since a count or a cell's fault mark cannot be derived from one event alone; so does
 *   "maintenance.window" (a window started or ended: the cells gain or lose their maintenance
 *   marks, fabric/maintenance_windows.py). The server only
 *   renders what the user may see, so a tenant admin's page never learns of other tenants. */
(() => {
  "use strict";
  const ALIASES = {
    not_responding: "down", completing: "allocated", rebooting: "drained", reboot: "drained",
    "": "unknown",
  };
  const KNOWN = new Set(["idle", "allocated", "mixed", "draining", "drained", "down", "unknown"]);
  const REFRESH_DELAY_MS = { faults: 250, jobs: 1000 };
  const REGIONS = ["cluster-nodes-card", "cluster-gpus-card", "cluster-faults-card", "cluster-grid-card"];

  const gridState = (slurm) => {
    const state = Object.prototype.hasOwnProperty.call(ALIASES, slurm) ? ALIASES[slurm] : slurm;
    return KNOWN.has(state) ? state : "unknown";
  };
  const flash = (node) => { node.classList.remove("live-updated"); void node.offsetWidth; node.classList.add("live-updated"); };

  // Same text as console/dashboard.py GridCell.label.
  function cellLabel(hostname, slurm, reason, openFaults, jobs, maintenanceWindow) {
    const parts = [`${hostname}: ${slurm}`];
    if (reason) parts.push(`reason: ${reason}`);
    if (openFaults > 0) parts.push(`${openFaults} open fault ticket${openFaults > 1 ? "s" : ""}`);
    if (jobs) parts.push(`running job ${jobs}`);
    if (maintenanceWindow) parts.push(`maintenance window #${maintenanceWindow}`);
    return parts.join(" · ");
  }

  const PROBLEM_STATES = new Set(["draining", "drained", "down"]);   // console/dashboard.py

  function bumpCount(state, delta) {
    document.querySelectorAll(`[data-state-count="${CSS.escape(state)}"]`).forEach((node) => {
      node.textContent = String(Math.max(0, (parseInt(node.textContent, 10) || 0) + delta));
      flash(node);
    });
  }

  // A fleet's grid draws a cell per pod (or per rack of one pod): the event names the node's
  // pod and rack, and the cell that holds it moves one node from its old state to its new one.
  // Same text as console/dashboard.py AggregateCell.label.
  function aggregateLabel(agg) {
    const level = agg.dataset.aggRack ? "rack" : "pod";
    const counted = [];
    let total = 0;
    agg.querySelectorAll("[data-agg-count]").forEach((span) => {
      const n = Number(span.dataset.n || 0);
      total += n;
      if (n) counted.push(`${n} ${span.dataset.aggCount}`);
    });
    const name = level === "rack" ? agg.dataset.aggRack : agg.dataset.aggPod;
    const parts = [`${level} ${name}: ${total} nodes (${counted.join(", ") || "none"})`];
    const label = agg.getAttribute("aria-label") || "";
    const tickets = label.indexOf(" · ");
    if (tickets >= 0) parts.push(label.slice(tickets + 3));
    return parts.join(" · ");
  }

  function moveAggregate(payload, before, next) {
    const pod = String(payload.pod || ""), rack = String(payload.rack || "");
    const agg = document.querySelector(`.aggregate-cell[data-agg-pod="${CSS.escape(pod)}"][data-agg-rack="${CSS.escape(rack)}"]`)
      || document.querySelector(`.aggregate-cell[data-agg-pod="${CSS.escape(pod)}"][data-agg-rack=""]`);
    if (!agg) return;
    [[before, -1], [next, +1]].forEach(([state, delta]) => {
      const span = agg.querySelector(`[data-agg-count="${CSS.escape(state)}"]`);
      if (!span) return;
      const n = Math.max(0, Number(span.dataset.n || 0) + delta);
      span.dataset.n = String(n);
      span.textContent = span.textContent.replace(/\d+$/, String(n));
    });
    const problems = [...PROBLEM_STATES].reduce((sum, state) => {
      const span = agg.querySelector(`[data-agg-count="${state}"]`);
      return sum + (span ? Number(span.dataset.n || 0) : 0);
    }, 0);
    if (problems) agg.dataset.problems = String(problems); else delete agg.dataset.problems;
    const label = aggregateLabel(agg);
    agg.title = label;
    agg.setAttribute("aria-label", label);
    flash(agg);
  }

  // A node the page does not draw is counted from the event's previous state, except when
  // re-applied after a refresh (`countUnseen` false): the fresh counts may include it already.
  function applyNodeState(payload, countUnseen = true) {
    const slurm = String(payload.state || "unknown");
    const next = gridState(slurm);
    const cell = document.getElementById(`node-cell-${payload.hostname}`);
    const before = cell ? cell.dataset.state : gridState(String(payload.previous_state || ""));
    if (before !== next && (cell || (countUnseen && payload.previous_state !== undefined))) {
      bumpCount(before, -1);
      bumpCount(next, +1);
    }
    if (!cell) {
      if (countUnseen && before !== next && payload.previous_state !== undefined) moveAggregate(payload, before, next);
      const card = document.getElementById("cluster-grid-card");
      if (card && card.dataset.gridProblems && PROBLEM_STATES.has(next)) scheduleRefresh(250);
      return;
    }
    const label = cellLabel(payload.hostname, slurm, payload.reason || "",
      Number(cell.dataset.openFaults || 0), cell.dataset.jobs || "", cell.dataset.maintenance || "");
    cell.dataset.state = next;
    cell.title = label;
    cell.setAttribute("aria-label", label);
    flash(cell);
  }

  // ---- layout: compact cells, collapsed pods, details of the hovered or focused node ----------
  const COMPACT_KEY = "portal.cluster.compact", COLLAPSED_KEY = "portal.cluster.collapsed";
  const stored = (key, fallback) => {
    try { return JSON.parse(localStorage.getItem(key)) ?? fallback; } catch (err) { return fallback; }
  };
  const store = (key, value) => { try { localStorage.setItem(key, JSON.stringify(value)); } catch (err) { /* private mode */ } };

  function setCompact(on) {
    const view = document.getElementById("cluster-view");
    const button = document.getElementById("grid-compact");
    if (!view || !button) return;
    view.dataset.compact = on ? "true" : "false";
    button.setAttribute("aria-pressed", on ? "true" : "false");
    store(COMPACT_KEY, on);
  }

  let applyingLayout = false;
  function applyCollapsed() {
    const collapsed = new Set(stored(COLLAPSED_KEY, []));
    applyingLayout = true;
    document.querySelectorAll("#cluster-grid-card details.cluster-pod[data-pod]").forEach((pod) => {
      pod.open = !collapsed.has(pod.dataset.pod);
    });
    applyingLayout = false;
  }

  function rememberCollapsed() {
    const collapsed = new Set(stored(COLLAPSED_KEY, []));
    document.querySelectorAll("#cluster-grid-card details.cluster-pod[data-pod]").forEach((pod) => {
      if (pod.open) collapsed.delete(pod.dataset.pod); else collapsed.add(pod.dataset.pod);
    });
    store(COLLAPSED_KEY, [...collapsed]);
  }

  function showDetails(event) {
    const cell = event.target.closest && event.target.closest("#cluster-grid-card .node-grid .node-cell");
    const details = document.getElementById("grid-details");
    if (cell && details) details.textContent = cell.getAttribute("aria-label") || cell.title;
  }

  function initLayout() {
    const toggles = document.querySelector(".cluster-toggles");
    if (!toggles) return;
    toggles.hidden = false;         // the buttons need this script; the form works without it
    setCompact(Boolean(stored(COMPACT_KEY, false)));
    applyCollapsed();
    document.getElementById("grid-compact").addEventListener("click", (event) => {
      setCompact(event.currentTarget.getAttribute("aria-pressed") !== "true");
    });
    toggles.querySelectorAll("[data-grid-collapse]").forEach((button) => button.addEventListener("click", () => {
      const close = button.dataset.gridCollapse === "all";
      document.querySelectorAll("#cluster-grid-card details.cluster-pod").forEach((pod) => { pod.open = !close; });
      rememberCollapsed();
    }));
    // "toggle" does not bubble: listen in the capture phase, for regions replaced later too.
    document.addEventListener("toggle", (event) => {
      if (!applyingLayout && event.target.matches && event.target.matches("details.cluster-pod")) rememberCollapsed();
    }, true);
    document.addEventListener("focusin", showDetails);
    document.addEventListener("mouseover", showDetails);
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
    held.forEach((payload) => applyNodeState(payload, false));
    applyCollapsed();
  }

  document.addEventListener("live:node.state", (event) => {
    const payload = event.detail.payload || {};
    if (heldStates) heldStates.push(payload);
    applyNodeState(payload);
  });
  document.addEventListener("live:event", (event) => {
    const delay = REFRESH_DELAY_MS[event.detail.group];
    if (delay !== undefined) scheduleRefresh(delay);
  });
  document.addEventListener("live:maintenance.window", () => scheduleRefresh(REFRESH_DELAY_MS.faults));
  document.addEventListener("live:resync", applyCollapsed);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initLayout);
  else initLayout();
})();
