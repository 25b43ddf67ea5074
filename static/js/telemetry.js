/* Telemetry charts with the vendored uPlot: a job's mean GPU utilisation over time, and the
 * CDF of per-job mean utilisation per job size (Observation 3). Data from json_script. */
(() => {
  "use strict";
  const COLOURS = ["#1f5fd6", "#18794a", "#a35200", "#8a2fb8", "#0e6f86", "#c0262d", "#555", "#b08800"];
  const read = (id) => JSON.parse(document.getElementById(id)?.textContent || "null");
  const width = (target) => Math.max(320, target.clientWidth || 640);

  function jobChart() {
    const job = read("telemetry-job-series");
    const points = job?.points;
    const target = document.getElementById("telemetry-job-chart");
    if (!points || !points.length || !target || !window.uPlot || target.dataset.drawn) return;
    target.dataset.drawn = "1";
    // The job's whole run on the x axis: the part without samples shows as such.
    const range = [Date.parse(job.start) / 1000, Date.parse(job.end) / 1000];
    const time = window.portalChartTime(target.dataset.timeZone);
    new uPlot({
      width: width(target), height: 220, tzDate: time.tzDate,
      scales: { x: { range: () => range }, y: { range: [0, 100] } },
      axes: [time.axis, { label: "GPU utilisation (%)" }],
      series: [time.series, { label: "mean over the job's GPUs", stroke: COLOURS[0], width: 2,
                     value: (u, v) => (v == null ? "--" : v.toFixed(1) + "%") }],
    }, [points.map((p) => Date.parse(p.at) / 1000), points.map((p) => p.mean_percent)], target);
  }

  function observation3Chart() {
    const rows = (read("observation3-data") || []).filter((row) => row.mean_percent_cdf.length);
    const target = document.getElementById("observation3-chart");
    if (!rows.length || !target || !window.uPlot || target.dataset.drawn) return;
    target.dataset.drawn = "1";
    // A CDF per size: x = per-job mean utilisation, y = fraction of the bucket's jobs. All
    // buckets share the fractions, so the values become the x of each series through a
    // common, sorted x axis.
    const xs = [...new Set(rows.flatMap((row) => row.mean_percent_cdf.map((p) => p.value)))].sort((a, b) => a - b);
    const series = rows.map((row) => xs.map((x) => {
      let fraction = null;
      for (const point of row.mean_percent_cdf) if (point.value <= x) fraction = point.fraction;
      return fraction;
    }));
    new uPlot({
      width: width(target), height: 260,
      scales: { x: { time: false, range: [0, 100] }, y: { range: [0, 1] } },
      axes: [{ label: "per-job mean GPU utilisation (%)" }, { label: "fraction of jobs" }],
      series: [{}, ...rows.map((row, i) => ({
        label: `${row.bucket} nodes`, stroke: COLOURS[i % COLOURS.length], width: 2,
        paths: uPlot.paths.stepped({ align: 1 }), spanGaps: true,
      }))],
    }, [xs, ...series], target);
  }

  function start() { jobChart(); observation3Chart(); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  window.addEventListener("load", start);  // uPlot may be deferred after this script
})();
