/* Fault statistics charts with the vendored uPlot: faults per month stacked by category (the
 * burn-in trend) and MTTR per month. Data comes from the page's json_script. */
(() => {
  "use strict";
  const COLOURS = ["#c0262d", "#8a2fb8", "#0e6f86", "#1f5fd6", "#a35200", "#18794a"];

  function bars(target, labels, series, options = {}) {
    const x = labels.map((_, i) => i);
    const width = Math.max(320, target.clientWidth || 480);
    const plot = new uPlot({
      width, height: 240,
      scales: { x: { time: false, range: [-0.5, labels.length - 0.5] } },
      axes: [
        { values: (u, ticks) => ticks.map((t) => labels[t] ?? ""), splits: () => x },
        { label: options.unit || "" },
      ],
      series: [{}, ...series.map((s, i) => ({
        label: s.label, stroke: COLOURS[i % COLOURS.length], fill: COLOURS[i % COLOURS.length] + "cc",
        paths: uPlot.paths.bars({ size: [0.6, 64] }), points: { show: false },
      }))],
    }, [x, ...series.map((s) => s.values)], target);
    return plot;
  }

  function stack(series) {
    // Cumulative sums drawn back to front so each category shows as its own band.
    const sums = [];
    let running = null;
    series.forEach((s) => {
      running = running ? running.map((v, i) => v + s.counts[i]) : s.counts.slice();
      sums.push({ label: s.label, values: running.slice() });
    });
    return sums.reverse();
  }

  function start() {
    const data = JSON.parse(document.getElementById("fault-chart-data")?.textContent || "null");
    if (!data || !window.uPlot || !data.months.length) return;
    const perMonth = document.getElementById("fault-month-chart");
    if (perMonth) bars(perMonth, data.months, stack(data.categories), { unit: "faults" });
    const mttr = document.getElementById("fault-mttr-chart");
    if (mttr) bars(mttr, data.months, [{ label: "MTTR (h)", values: data.mttr }], { unit: "hours" });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
