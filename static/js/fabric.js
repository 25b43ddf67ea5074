/* Fabric monitor pages. Listens to the "fabric" websocket group through live.js
 * ("live:fabric.poll" events: {polled_at, switches: {hostname: {ok, in_bps, out_bps, mean_util,
 * ports: {"Ethernet0": "U37", ...}}}}) and draws port history with the vendored uPlot. */
(() => {
  "use strict";

  const WORDS = { U: "up", D: "down", X: "shut down", "?": "not polled yet" };

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

  // ---- live heat map -----------------------------------------------------------------------------
  function updateCell(cell, code) {
    const state = code.charAt(0);
    const pct = code.length > 1 ? Number(code.slice(1)) : null;
    const level = String(levelOf(state, pct));
    if (cell.dataset.state === state && cell.dataset.level === level && cell.textContent === markOf(state, pct)) return;
    cell.dataset.state = state;
    cell.dataset.level = level;
    cell.textContent = markOf(state, pct);
    const load = state === "U" && pct !== null ? `, ${pct}% load` : "";
    const faces = { nic: ", host-facing", switch: ", uplink" }[cell.dataset.faces] || "";
    cell.title = `${cell.dataset.port}: ${WORDS[state] || state}${load}${faces}`;
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
    // 24-hour times in the portal's time zone, named, like every page (issue 15); uPlot's own
    // default is the browser's zone with AM/PM.
    const zone = box.dataset.timeZone || "UTC";
    const zoned = (seconds) => window.uPlot.tzDate(new Date(seconds * 1000), zone);
    const clock = window.uPlot.fmtDate("{HH}:{mm}"), stamp = window.uPlot.fmtDate("{YYYY}-{MM}-{DD} {HH}:{mm}");
    const timeAxis = { label: `time (${zone})`, values: (u, splits) => splits.map((s) => clock(zoned(s))) };
    const timeSeries = { label: "time", value: (u, v) => (v == null ? "—" : `${stamp(zoned(v))} ${zone}`) };
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
    const detail = document.getElementById("switch-view");
    document.addEventListener("live:fabric.poll", (event) => {
      const payload = (event.detail && event.detail.payload) || {};
      const heatMap = document.getElementById("fabric-heatmap");
      if (heatMap && payload.ports_omitted) {
        clearTimeout(refreshTimer);      // too many ports for the event: re-read the page's regions
        refreshTimer = setTimeout(refreshRegions, 300);
      } else if (heatMap) updateHeatMap(payload);
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
