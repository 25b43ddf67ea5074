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
      // Bars are counts and hours: from 0, or the smallest month is drawn as nothing (uPlot's
      // auto range started the axis at the smallest value: the story's 1-fault month was empty).
      scales: {
        x: { time: false, range: [-0.5, labels.length - 0.5] },
        y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [
        { values: (u, ticks) => ticks.map((t) => labels[t] ?? ""), splits: () => x },
        { label: options.unit || "" },
      ],
      series: [{ value: (u, v) => (v == null ? "--" : labels[v] ?? "--") }, ...series.map((s, i) => ({
        label: s.label, stroke: s.colour, fill: s.colour + "cc",
        value: (u, v, si, idx) => (idx == null ? "--" : String(s.shown ? s.shown[idx] : v ?? "--")),
        paths: uPlot.paths.bars({ size: [0.6, 64] }), points: { show: false },
      }))],
    }, [x, ...series.map((s) => s.values)], target);
    return plot;
  }

  function stack(series) {
    // Cumulative sums drawn back to front so each category shows as its own band.
    // The legend shows each category's own count (`shown`), not the cumulative height.
    const sums = [];
    let running = null;
    series.forEach((s, i) => {
      running = running ? running.map((v, j) => v + s.counts[j]) : s.counts.slice();
      sums.push({ label: s.label, values: running.slice(), shown: s.counts, colour: COLOURS[i % COLOURS.length] });
    });
    return sums.reverse();
  }

  function start() {
    const data = JSON.parse(document.getElementById("fault-chart-data")?.textContent || "null");
    if (!data || !window.uPlot || !data.months.length) return;
    const perMonth = document.getElementById("fault-month-chart");
    if (perMonth) bars(perMonth, data.months, stack(data.categories), { unit: "faults" });
    const mttr = document.getElementById("fault-mttr-chart");
    if (mttr) bars(mttr, data.months, [{ label: "MTTR (h)", values: data.mttr, colour: "#1f5fd6" }], { unit: "hours" });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
