/* Fabric monitor pages, through live.js. The overview follows "fabric.overview" deltas
 * ({polled_at, switches: {hostname: cells}, groups: {name: cells}, removed, counts}: only the rows
 * a poll changed, as the page shows them); a switch's page re-reads its regions when a
 * "fabric.poll" event names it; port history is drawn with the vendored uPlot. */
(() => {
  "use strict";

  // fabric.port_state.STATE_LETTERS: N is a state the switch does not report (intfutil's N/A).
  const WORDS = { U: "up", D: "down", X: "shut down", N: "state unknown (N/A)", "?": "not polled yet" };

  // Same bands as fabric.selectors.HeatCell.level / mark.
  const levelOf = (state, pct) => (state !== "U" || pct === null ? 0 : Math.min(5, 1 + Math.floor((pct * 5) / 100)));
  const markOf = (state, pct) => (state === "U" && pct !== null ? String(Math.min(9, Math.floor(pct / 10))) : state);

  function byteRate(value) {
    if (value === null || value === undefined) return "—";
    const units = ["B/s", "kB/s", "MB/s", "GB/s", "TB/s"];
    let v = Number(value), unit = 0;
    while (Math.abs(v) >= 1000 && unit < units.length - 1) { v /= 1000; unit += 1; }
    return unit ? `${v.toFixed(1)} ${units[unit]}` : `${v.toFixed(0)} B/s`;
  }

  // ---- port cells of the few switches shown (a pod, the spines): "fabric.poll" events --------
  // A cell's title, from its data (same words as fabric.selectors.HeatCell). The server sends
  // none (a scale-125 spine's 8,000 made its fragment 1.2 MB): it is written when a pointer or
  // the focus first reaches the cell, and kept current by updateCell after that.
  function describeCell(cell) {
    const state = cell.dataset.state;
    const load = state === "U" && cell.dataset.pct !== undefined ? `, ${cell.dataset.pct}% load` : "";
    const faces = { nic: ", host-facing", switch: ", uplink" }[cell.dataset.faces] || "";
    return `${cell.dataset.port}: ${WORDS[state] || state}${load}${faces}`;
  }

  function titleOnDemand(event) {
    const cell = event.target instanceof Element ? event.target.closest(".port-cell[data-port]") : null;
    if (cell && !cell.hasAttribute("title")) cell.title = describeCell(cell);
  }

  function updateCell(cell, code) {
    const state = code.charAt(0);
    const pct = code.length > 1 ? Number(code.slice(1)) : null;
    const level = String(levelOf(state, pct));
    if (cell.dataset.state === state && cell.dataset.level === level && cell.textContent === markOf(state, pct)) return;
    cell.dataset.state = state;
    cell.dataset.level = level;
    if (state === "U" && pct !== null) cell.dataset.pct = String(pct);
    else delete cell.dataset.pct;
    cell.textContent = markOf(state, pct);
    if (cell.hasAttribute("title")) cell.title = describeCell(cell);
    cell.classList.remove("live-updated");
    void cell.offsetWidth;          // restart the flash animation
    cell.classList.add("live-updated");
  }

  function updateHeatMap(payload) {
    Object.entries(payload.switches || {}).forEach(([hostname, summary]) => {
      const row = document.querySelector(`.fabric-switch[data-switch="${CSS.escape(hostname)}"]`);
      if (!row) return;
      const reach = row.querySelector('[data-field="reach"]');
      if (reach) {
        const ok = Boolean(summary.ok);
        reach.replaceChildren(status(ok ? "succeeded" : "failed", ok ? "reachable" : "unreachable"));
        if (!ok) reach.title = summary.error || "";
      }
      if (!summary.ok) return;
      const fields = { mean_util: `${Math.round((summary.mean_util || 0) * 100)}%`,
                       in_bps: byteRate(summary.in_bps), out_bps: byteRate(summary.out_bps) };
      Object.entries(fields).forEach(([name, text]) => {
        const node = row.querySelector(`[data-field="${name}"]`);
        if (node) node.textContent = text;
      });
      row.querySelectorAll(".port-cell[data-port]").forEach((cell) => {
        const code = summary.ports && summary.ports[cell.dataset.port];
        if (code) updateCell(cell, code);
      });
    });
  }

  function status(kind, text) {
    const badge = document.createElement("span");
    badge.className = `status status-${kind}`;
    const icon = document.createElement("span");
    icon.className = "status-icon";
    icon.setAttribute("aria-hidden", "true");
    badge.append(icon, text);
    return badge;
  }

  // A poll on a large fabric sends no ports: re-read the cells of the switches it names (one
  // small fragment each; the overview shows cells for a few switches only).
  async function refreshStrips(hostnames) {
    for (const hostname of hostnames) {
      // A switch drawn without its cells (data-deferred: too many ports) stays so until asked.
      const old = document.querySelector(`#fabric-heatmap .fabric-switch[data-switch="${CSS.escape(hostname)}"]:not([data-deferred])`);
      if (!old) continue;
      try {
        const res = await fetch(`/fabric/switches/${encodeURIComponent(hostname)}/ports/`,
                                { credentials: "same-origin", cache: "no-store" });
        if (!res.ok) continue;
        const doc = new DOMParser().parseFromString(await res.text(), "text/html");
        const fresh = doc.querySelector(".fabric-switch");
        if (fresh) {
          const copy = document.importNode(fresh, true);
          old.replaceWith(copy);
          if (window.htmx) window.htmx.process(copy);
        }
      } catch (err) {
        console.warn("fabric: port cells refresh failed", err);
      }
    }
  }

  // ---- the overview: rows change in place from "fabric.overview" deltas ----------------------
  // Same order and names as fabric.overview.STATES / PROBLEM_STATES.
  const RANK = ["unreachable", "down", "hot", "unpolled", "ok"];
  const PROBLEMS = new Set(["unreachable", "down", "hot"]);
  const rankOf = (row) => { const r = RANK.indexOf(row.dataset.state); return r < 0 ? RANK.length : r; };

  function flash(node) {
    node.classList.remove("live-updated");
    void node.offsetWidth;          // restart the flash animation
    node.classList.add("live-updated");
  }

  function stateBadge(state, label, error) {
    const badge = document.createElement("span");
    badge.className = "fabric-state";
    badge.dataset.state = state;
    if (error) badge.title = error;
    badge.textContent = label;
    return badge;
  }

  // Write a delta's cells into a row (same cells as templates/fabric/switch_list.html); a delta
  // carries only the cells that changed, and all of them when the state did.
  function fill(row, cells) {
    if (cells.state !== undefined) row.dataset.state = cells.state;
    row.querySelectorAll("[data-cell]").forEach((cell) => {
      const name = cell.dataset.cell;
      if (name === "state_label") {
        if (cells.state_label !== undefined) cell.replaceChildren(stateBadge(cells.state, cells.state_label, cells.error));
      } else if (cells[name] !== undefined) cell.textContent = cells[name];
    });
    flash(row);
  }

  function td(name) {
    const cell = document.createElement("td");
    cell.dataset.cell = name;
    return cell;
  }

  // A switch that now fits the page's filter (a "problems only" page and a switch going down).
  function switchRow(hostname, cells) {
    const row = document.createElement("tr");
    row.dataset.switch = hostname;
    row.dataset.group = cells.group;
    row.dataset.role = cells.role;
    const head = document.createElement("th");
    head.scope = "row";
    const link = document.createElement("a");
    link.href = `/fabric/switches/${encodeURIComponent(hostname)}/`;
    link.textContent = hostname;
    head.append(link);
    const group = document.createElement("td");
    group.textContent = cells.group;
    row.append(head, group, td("state_label"), td("load"), td("traffic"), td("pfc"), td("ecn"),
               td("down"), td("worst"));
    return row;
  }

  function fitsFilters(root, cells) {
    const { filterPod: pod, filterRole: role, filterState: state } = root.dataset;
    if (pod && cells.group !== pod) return false;
    if (role && cells.role !== role) return false;
    if (state === "problems") return PROBLEMS.has(cells.state);
    return !state || cells.state === state;
  }

  // Problems first: a stable sort by state keeps the server's order within a state.
  function resort(tbody) {
    const rows = [...tbody.querySelectorAll("tr[data-state]")];
    const sorted = rows.map((row, index) => [rankOf(row), index, row]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    if (sorted.some(([, index], position) => index !== position)) tbody.append(...sorted.map(([, , row]) => row));
  }

  function applyOverview(root, payload) {
    const switches = document.getElementById("switch-rows");
    const groups = document.getElementById("group-rows");
    Object.entries(payload.switches || {}).forEach(([hostname, cells]) => {
      let row = switches.querySelector(`tr[data-switch="${CSS.escape(hostname)}"]`);
      if (cells.state === undefined) {   // same state: the row stays where it is, if shown
        if (row) fill(row, cells);
        return;
      }
      const fits = fitsFilters(root, cells);
      if (row && !fits) { row.remove(); return; }
      if (!row && !fits) return;
      if (!row) {
        switches.querySelectorAll(".empty-row").forEach((empty) => empty.remove());
        row = switchRow(hostname, cells);
        switches.append(row);
      }
      fill(row, cells);
    });
    Object.entries(payload.groups || {}).forEach(([name, cells]) => {
      const row = groups.querySelector(`tr[data-group="${CSS.escape(name)}"]`);
      if (row) fill(row, cells);
    });
    (payload.removed || []).forEach((name) => {
      document.querySelectorAll(`#switch-rows tr[data-switch="${CSS.escape(name)}"], #group-rows tr[data-group="${CSS.escape(name)}"]`)
        .forEach((row) => row.remove());
    });
    Object.entries(payload.counts || {}).forEach(([state, count]) => {
      document.querySelectorAll(`[data-state-count="${CSS.escape(state)}"]`).forEach((node) => {
        if (node.textContent !== String(count)) { node.textContent = String(count); flash(node); }
      });
    });
    resort(switches);
    resort(groups);
    const shown = document.getElementById("switch-count");
    if (shown) shown.textContent = `${switches.querySelectorAll("tr[data-switch]").length} shown`;
    root.dataset.lastPoll = String(payload.polled_at || "");
  }

  // ---- switch detail: refresh the live regions when our switch was polled -------------------
  let refreshTimer = 0;
  async function refreshRegions() {
    try {
      const res = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      document.querySelectorAll("[id][data-live-region]").forEach((old) => {
        const fresh = doc.getElementById(old.id);
        if (fresh) old.replaceWith(document.importNode(fresh, true));
      });
    } catch (err) {
      console.warn("fabric: refresh failed", err);
    }
  }

  // ---- history charts ------------------------------------------------------------------------------
  let charts = [];
  async function drawHistory(portId) {
    const box = document.getElementById("history-charts");
    const note = document.getElementById("chart-status");
    if (!box || !window.uPlot || !portId) return;
    note.textContent = "Loading…";
    let rows;
    try {
      const res = await fetch(`/api/fabric/ports/${encodeURIComponent(portId)}/history/?hours=24`,
                              { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      rows = await res.json();
    } catch (err) {
      note.textContent = `Could not load the history: ${err.message}`;
      return;
    }
    charts.forEach((chart) => chart.destroy());
    charts = [];
    note.textContent = rows.length ? `${rows.length} samples` : "No history yet: rates need two polls.";
    if (!rows.length) return;
    const times = rows.map((r) => Date.parse(r.bucket_start) / 1000);
    const width = Math.max(320, box.clientWidth - 8);
    const gb = (v) => v / 1e9;
    // 24-hour times in the portal's time zone, named, like every page (chart_time.js).
    const time = window.portalChartTime(box.dataset.timeZone);
    const zoned = time.tzDate, timeAxis = time.axis, timeSeries = time.series;
    charts.push(new window.uPlot({
      title: "Throughput (GB/s)", width, height: 220, tzDate: zoned,
      series: [timeSeries, { label: "in", stroke: "#2563eb", width: 1.5 }, { label: "out", stroke: "#18794a", width: 1.5, dash: [6, 3] }],
      axes: [timeAxis, { values: (u, vals) => vals.map((v) => v.toFixed(1)) }],
    }, [times, rows.map((r) => gb(r.in_bytes_per_second)), rows.map((r) => gb(r.out_bytes_per_second))],
    document.getElementById("chart-throughput")));
    charts.push(new window.uPlot({
      title: "Congestion (per second)", width, height: 180, tzDate: zoned, axes: [timeAxis, {}],
      series: [timeSeries, { label: "PFC rx", stroke: "#c0262d", width: 1.5 }, { label: "PFC tx", stroke: "#a35200", width: 1.5, dash: [6, 3] },
               { label: "ECN-marked", stroke: "#8a2fb8", width: 1.5, dash: [2, 2] }],
    }, [times, rows.map((r) => r.pfc_rx_per_second), rows.map((r) => r.pfc_tx_per_second), rows.map((r) => r.ecn_marked_per_second)],
    document.getElementById("chart-congestion")));
  }

  function init() {
    document.addEventListener("pointerover", titleOnDemand);
    document.addEventListener("focusin", titleOnDemand);
    const detail = document.getElementById("switch-view");
    const overview = document.getElementById("fabric-overview");
    if (overview) {
      document.addEventListener("live:fabric.overview", (event) => {
        applyOverview(overview, (event.detail && event.detail.payload) || {});
      });
    }
    document.addEventListener("live:fabric.poll", (event) => {
      const payload = (event.detail && event.detail.payload) || {};
      const heatMap = document.getElementById("fabric-heatmap");
      if (heatMap && payload.ports_omitted) refreshStrips(Object.keys(payload.switches || {}));
      else if (heatMap) updateHeatMap(payload);
      if (detail && payload.switches && payload.switches[detail.dataset.switch]) {
        clearTimeout(refreshTimer);
        refreshTimer = setTimeout(refreshRegions, 300);   // one fetch for a burst of events
      }
    });
    const select = document.getElementById("history-port");
    if (select) {
      select.addEventListener("change", () => drawHistory(select.value));
      const cabled = [...select.options].find((o) => !o.text.includes("(down)"));
      if (cabled) select.value = cabled.value;
      drawHistory(select.value);
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
