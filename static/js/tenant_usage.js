/* The tenant page's usage chart with the vendored uPlot: GPU-hours per day stacked by user,
 * and the allocations' capacity as a line. Data comes from the page's json_script. */
(() => {
  "use strict";
  const COLOURS = ["#1f5fd6", "#18794a", "#a35200", "#8a2fb8", "#0e6f86", "#c0262d"];

  function start() {
    const data = JSON.parse(document.getElementById("usage-chart-data")?.textContent || "null");
    const target = document.getElementById("usage-chart");
    if (!data || !target || !window.uPlot || !data.days.length) return;
    const x = data.days.map((_, i) => i);
    // Cumulative sums drawn back to front so each user shows as a band; the legend shows
    // each user's own hours, not the stacked height.
    let running = data.days.map(() => 0);
    const bands = data.users.map((user, i) => {
      running = running.map((v, j) => v + user.hours[j]);
      return { label: user.label, values: running.slice(), own: user.hours, colour: COLOURS[i % COLOURS.length] };
    }).reverse();
    const series = [
      { value: (u, v) => (v == null ? "--" : data.days[v] ?? "--") },
      ...bands.map((band) => ({
        label: band.label, stroke: band.colour, fill: band.colour + "cc",
        value: (u, v, si, idx) => (idx == null ? "--" : band.own[idx].toFixed(2)),
        paths: uPlot.paths.bars({ size: [0.7, 48] }), points: { show: false },
      })),
      { label: "allocated", stroke: "#555", dash: [6, 4], width: 2, points: { show: false },
        value: (u, v) => (v == null ? "--" : v.toFixed(2)) },
    ];
    new uPlot({
      width: Math.max(320, target.clientWidth || 640), height: 260,
      scales: { x: { time: false, range: [-0.5, data.days.length - 0.5] } },
      axes: [
        { values: (u, ticks) => ticks.map((t) => (data.days[t] || "").slice(5)) },
        { label: "GPU-hours" },
      ],
      series,
    }, [x, ...bands.map((band) => band.values), data.capacity], target);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
