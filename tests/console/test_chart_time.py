"""Chart time axes read as the pages do: 24-hour times in the portal's zone, named (issue 26:
uPlot's default printed the browser's zone with AM/PM beside tables in UTC)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_time_axis_is_24_hour_in_the_named_zone_with_the_date_at_each_new_day(
    live_server, browser_page
):
    page = browser_page
    page.goto(f"{live_server.url}/static/js/chart_time.js")  # same origin for the scripts
    page.set_content(
        f'<script src="{live_server.url}/static/vendor/uplot/uPlot.iife.min.js"></script>'
        f'<script src="{live_server.url}/static/js/chart_time.js"></script>'
    )
    page.wait_for_function("window.uPlot && window.portalChartTime")
    # 2026-11-26 17:00 and 23:30 UTC, then 2026-11-27 00:30 UTC.
    splits = [1795712400, 1795735800, 1795739400]
    labels = page.evaluate(
        "(splits) => { const time = window.portalChartTime('UTC');"
        " return [time.axis.label, ...time.axis.values(null, splits),"
        " time.series.value(null, splits[0])]; }", splits)
    assert labels == ["time (UTC)", "11-26 17:00", "23:30", "11-27 00:30",
                      "2026-11-26 17:00 UTC"]
    tokyo = page.evaluate(
        "(splits) => window.portalChartTime('Asia/Tokyo').axis.values(null, splits)", splits)
    assert tokyo == ["11-27 02:00", "08:30", "09:30"]

