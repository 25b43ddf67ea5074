/* Time axes for uPlot charts: 24-hour times in the portal's time zone, named, like every page
 * prints them ("17:09 UTC"). uPlot's own default is the browser's zone with AM/PM, which put a
 * chart's "5pm" beside a table's "17:09 UTC". Load after uPlot:
 *   const time = window.portalChartTime(element.dataset.timeZone);
 *   new uPlot({ tzDate: time.tzDate, axes: [time.axis, ...], series: [time.series, ...] }, ...)
 */
(() => {
  "use strict";
  window.portalChartTime = (zone) => {
    const name = zone || "UTC";
    const zoned = (seconds) => window.uPlot.tzDate(new Date(seconds * 1000), name);
    const clock = window.uPlot.fmtDate("{HH}:{mm}");
    const day = window.uPlot.fmtDate("{MM}-{DD}");
    const stamp = window.uPlot.fmtDate("{YYYY}-{MM}-{DD} {HH}:{mm}");
    return {
      zone: name,
      tzDate: zoned,
      axis: {
        label: `time (${name})`,
        // A day's first tick carries its date, so a two-day chart is not read as one day.
        values: (u, splits) => splits.map((seconds, index) => {
          const moment = zoned(seconds);
          const previous = index > 0 ? zoned(splits[index - 1]) : null;
          const newDay = !previous || previous.getDate() !== moment.getDate();
          return newDay ? `${day(moment)} ${clock(moment)}` : clock(moment);
        }),
      },
      series: { label: "time", value: (u, v) => (v == null ? "—" : `${stamp(zoned(v))} ${name}`) },
    };
  };
})();
