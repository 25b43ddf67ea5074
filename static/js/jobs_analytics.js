/* Workload analytics charts with the vendored uPlot: share of jobs vs share of GPU time per
 * state and per size (bars), runtime CDF per size (lines, log-scaled hours) and jobs started per
 * day stacked by size. Data comes from the page's json_script. */
(() => {
  "use strict";
  const COLOURS = ["#1f5fd6", "#a35200", "#18794a", "#8a2fb8", "#0e6f86", "#c0262d", "#555555", "#b8860b"];

  function width(target) { return Math.max(320, target.clientWidth || 480); }

  // Category ticks that fit: every label of a few states, every k-th day of a long period (a
  // tick per day overprinted its neighbours past a month, Observation 5's chart in issue 26).
  function fittingTicks(target, labels) {
    const longest = Math.max(1, ...labels.map((label) => String(label).length));
    const room = Math.max(1, Math.floor((width(target) - 80) / (longest * 7.5 + 14)));
    const step = Math.ceil(labels.length / room);
    return labels.map((_, i) => i).filter((i) => i % step === 0);
  }

  function bars(target, labels, series, options = {}) {
    const x = labels.map((_, i) => i);
    const ticks = fittingTicks(target, labels);
    const plot = new uPlot({
      width: width(target), height: options.height || 240,
      scales: { x: { time: false, range: [-0.5, labels.length - 0.5] } },
      axes: [
        { values: (u, splits) => splits.map((t) => labels[t] ?? ""), splits: () => ticks },
        { label: options.unit || "" },
      ],
      series: [{ value: (u, v) => (v == null ? "--" : labels[v] ?? "--") }, ...series.map((s, i) => ({
        label: s.label, stroke: s.colour, fill: s.colour + "cc",
        value: (u, v, si, idx) => (idx == null ? "--" : String(s.shown ? s.shown[idx] : v ?? "--")),
        // Two shares side by side (left and right of the tick); stacked bands overlap.
        paths: uPlot.paths.bars(options.stacked ? { size: [0.7, 48] }
          : { size: [0.4, 32], align: i === 0 ? -1 : 1 }),
        points: { show: false },
      }))],
    }, [x, ...series.map((s) => s.values)], target);
    target.chart = plot;  // for the browser tests
    return plot;
  }

  function shares(target, rows, key) {
    if (!target || !rows.length) return;
    bars(target, rows.map((row) => row[key]), [
      { label: "share of jobs (%)", values: rows.map((row) => row.count_share), colour: COLOURS[0] },
      { label: "share of GPU time (%)", values: rows.map((row) => row.gpu_time_share), colour: COLOURS[1] },
    ], { unit: "%" });
  }

  function cdf(target, rows) {
    const used = rows.filter((row) => row.cdf.length);
    if (!target || !used.length) return;
    // One x grid of every sampled runtime; each bucket's line is its fraction at or below it.
    const xs = [...new Set(used.flatMap((row) => row.cdf.map((p) => Math.max(p.runtime_seconds, 1) / 3600)))].sort((a, b) => a - b);
    const lines = used.map((row) => xs.map((hours) => {
      let fraction = null;
      row.cdf.forEach((p) => { if (Math.max(p.runtime_seconds, 1) / 3600 <= hours) fraction = p.fraction; });
      return fraction;
    }));
    new uPlot({
      width: width(target), height: 260,
      scales: { x: { time: false, distr: 3 }, y: { range: [0, 1] } },
      axes: [{ label: "runtime (h, log)" }, { label: "fraction of jobs" }],
      series: [{ value: (u, v) => (v == null ? "--" : v.toFixed(2) + " h") }, ...used.map((row, i) => ({
        label: row.bucket + " nodes", stroke: COLOURS[i % COLOURS.length], width: 2, spanGaps: true,
      }))],
    }, [xs, ...lines], target);
  }

  function daily(target, data) {
    if (!target || !data.days.length) return;
    // Cumulative sums drawn back to front so each size shows as a band; the legend shows the
    // size's own count, not the stacked height.
    let running = data.days.map(() => 0);
    const bands = data.series.map((s, i) => {
      running = running.map((v, j) => v + s.counts[j]);
      // Jobs that never started have no size: grey, apart from the size colours.
      const colour = s.bucket === "" ? "#9aa0a6" : COLOURS[i % COLOURS.length];
      return { label: s.label, values: running.slice(), shown: s.counts, colour };
    }).reverse();
    bars(target, data.days.map((day) => day.slice(5)), bands, { unit: "jobs", stacked: true, height: 260 });
  }

  function start() {
    const data = JSON.parse(document.getElementById("analytics-chart-data")?.textContent || "null");
    if (!data || !window.uPlot) return;
    shares(document.getElementById("analytics-states-chart"), data.states.rows, "state");
    shares(document.getElementById("analytics-sizes-chart"), data.sizes.rows, "bucket");
    cdf(document.getElementById("analytics-cdf-chart"), data.sizes.rows);
    daily(document.getElementById("analytics-daily-chart"), data.daily_submissions);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
