"""Workload analytics (paper Observations 1, 2, 4, 5): exact shares, bucket edges, runtime
percentiles and daily submissions on a small fixture; tenant isolation; bad input; query count.

The definitions were made precise (tests/jobs/test_analytics_definitions.py checks them against a
plain-Python reference): the running job now counts with its GPU time up to the period's end,
the job cancelled while pending asks for 8 GPUs (so it is a GPU job), daily submissions count
the submit day. The expectations below were recomputed for that, by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from jobs.analytics import CDF_FRACTIONS, percentile_disc_position
from jobs.models import Job
from portal.models import Role
from tests.support import sign_in_page

API = "/api/jobs/analytics/"
PERIOD = "since=2026-01-01&until=2026-01-31"
WEEK = 7 * 24 * 3600

# (state, nodes, elapsed seconds, start day in January 2026): tenant A's jobs that ended in
# January. GPU-occupied time is elapsed x 8 GPUs per node.
FINISHED = [
    ("COMPLETED", 1, 3600, 5),
    ("COMPLETED", 1, 1800, 5),
    ("FAILED", 1, 60, 5),
    ("FAILED", 2, 600, 6),  # edge 2 | 3-4
    ("CANCELLED", 3, 7200, 6),
    ("TIMEOUT", 4, 86400, 7),  # edge 3-4 | 5-8
    ("COMPLETED", 5, 3600, 7),
    ("CANCELLED", 16, 8 * 24 * 3600, 10),  # edge 9-16 | 17-32; over one week
    ("CANCELLED", 17, 36000, 11),
    ("NODE_FAIL", 17, WEEK, 11),  # exactly one week: not over
    ("CANCELLED", 32, 700000, 12),  # over one week
]


def _job(job_id, state, nodes, elapsed, start, *, tenant, store_gpu_seconds=True):
    end = start + timedelta(seconds=elapsed) if start and state != "RUNNING" else None
    return Job.objects.create(
        job_id=job_id,
        state=state,
        node_count=nodes,
        gpus=8 * nodes,
        elapsed_seconds=elapsed if state != "RUNNING" else None,
        gpu_seconds=8 * nodes * elapsed if store_gpu_seconds and state != "RUNNING" else None,
        submit_time=start,
        start_time=start,
        end_time=end,
        tenant=tenant,
        source=Job.Source.SACCT,
    )


def _day(day: int, hour: int = 10) -> datetime:
    return datetime(2026, 1, day, hour, tzinfo=UTC)


@pytest.fixture
def workload(db, tenant_a, tenant_b):
    for number, (state, nodes, elapsed, day) in enumerate(FINISHED, start=1):
        # One job without a stored gpu_seconds: the selector computes elapsed x GPUs.
        _job(f"a{number}", state, nodes, elapsed, _day(day, 10 + number % 8),
             tenant=tenant_a, store_gpu_seconds=number != 7)
    # Cancelled while pending: a final state, but no node, no runtime, no GPU time; it had asked
    # for 8 GPUs (sacct's ReqTRES), so it is one of the GPU jobs.
    Job.objects.create(job_id="a-pending", state="CANCELLED", node_count=0, gpus=8,
                       elapsed_seconds=0, gpu_seconds=0, submit_time=_day(8),
                       end_time=_day(8, 11), tenant=tenant_a, source=Job.Source.SACCT)
    # Still running since Jan 7 09:00: its GPU time counts up to the period's end (Feb 1).
    _job("a-running", "RUNNING", 1, 0, _day(7, 9), tenant=tenant_a)
    # Ended before the period.
    _job("a-old", "COMPLETED", 1, 3600, datetime(2025, 12, 1, tzinfo=UTC), tenant=tenant_a)
    # Another tenant's job.
    _job("b1", "COMPLETED", 2, 3600, _day(5), tenant=tenant_b)


def _by(rows, key):
    return {row[key]: row for row in rows}


def test_state_shares_by_count_and_gpu_time(api_as, workload, tenant_a):
    body = api_as(Role.OPERATOR).get(f"{API}?{PERIOD}&tenant={tenant_a.slug}").json()
    states = body["states"]
    assert states["total_count"] == 13
    # 99432.58 finished + the running job's 8 GPUs x 591 h (Jan 7 09:00 to Feb 1 00:00).
    assert states["total_gpu_hours"] == 104160.58
    assert (states["running_count"], states["running_gpu_hours"]) == (1, 4728.0)
    assert [row["state"] for row in states["rows"]] == [
        "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "RUNNING",
    ]
    shares = {row["state"]: (row["count"], row["count_share"], row["gpu_hours"],
                             row["gpu_time_share"]) for row in states["rows"]}
    assert shares == {
        "COMPLETED": (3, 23.08, 52.0, 0.05),
        "CANCELLED": (5, 38.46, 75761.78, 72.74),
        "FAILED": (2, 15.38, 2.8, 0.0),
        "TIMEOUT": (1, 7.69, 768.0, 0.74),
        "NODE_FAIL": (1, 7.69, 22848.0, 21.94),
        "RUNNING": (1, 7.69, 4728.0, 4.54),
    }


def test_size_buckets_edges_and_shares(api_as, workload, tenant_a):
    sizes = api_as(Role.OPERATOR).get(f"{API}?{PERIOD}&tenant={tenant_a.slug}").json()["sizes"]
    assert [row["bucket"] for row in sizes["rows"]] == [
        "1", "2", "3-4", "5-8", "9-16", "17-32", "33-64", "65+",
    ]
    assert sizes["total_count"] == 12  # the job cancelled while pending has no size
    table = {row["bucket"]: (row["count"], row["count_share"], row["gpu_hours"],
                             row["gpu_time_share"]) for row in sizes["rows"]}
    assert table == {
        "1": (4, 33.33, 4740.13, 4.55),  # with the running job
        "2": (1, 8.33, 2.67, 0.0),
        "3-4": (2, 16.67, 816.0, 0.78),
        "5-8": (1, 8.33, 40.0, 0.04),
        "9-16": (1, 8.33, 24576.0, 23.59),
        "17-32": (3, 25.0, 73985.78, 71.03),
        "33-64": (0, 0.0, 0.0, 0.0),
        "65+": (0, 0.0, 0.0, 0.0),
    }
    # Runtime statistics are the finished jobs' only.
    assert _by(sizes["rows"], "bucket")["1"]["finished_count"] == 3


def test_runtime_percentiles_week_share_and_cdf(api_as, workload, tenant_a):
    rows = _by(
        api_as(Role.OPERATOR).get(f"{API}?{PERIOD}&tenant={tenant_a.slug}").json()["sizes"]["rows"],
        "bucket",
    )
    assert rows["1"]["runtime_seconds"] == {"p50": 1800, "p90": 3600, "p99": 3600}
    assert rows["17-32"]["runtime_seconds"] == {"p50": WEEK, "p90": 700000, "p99": 700000}
    assert rows["9-16"]["runtime_seconds"] == {"p50": 691200, "p90": 691200, "p99": 691200}
    assert rows["33-64"]["runtime_seconds"] == {"p50": None, "p90": None, "p99": None}
    # Exactly one week is not over one week; 700000 s is.
    assert (rows["17-32"]["over_one_week"], rows["17-32"]["over_one_week_share"]) == (1, 33.33)
    assert (rows["9-16"]["over_one_week"], rows["9-16"]["over_one_week_share"]) == (1, 100.0)
    assert rows["1"]["over_one_week"] == 0 and rows["33-64"]["over_one_week_share"] == 0.0
    # The CDF: the smallest runtime whose cumulative share reaches each fraction.
    cdf = {point["fraction"]: point["runtime_seconds"] for point in rows["1"]["cdf"]}
    assert list(cdf) == list(CDF_FRACTIONS)
    assert (cdf[0.0], cdf[0.3], cdf[0.4], cdf[0.6], cdf[0.7], cdf[1.0]) == (
        60, 60, 1800, 1800, 3600, 3600,
    )
    assert rows["33-64"]["cdf"] == []


def test_daily_submissions_by_submit_day(api_as, workload, tenant_a):
    daily = api_as(Role.OPERATOR).get(
        f"{API}?since=2026-01-05&until=2026-01-12&tenant={tenant_a.slug}"
    ).json()["daily_submissions"]
    assert daily["days"] == [f"2026-01-{day:02d}" for day in range(5, 13)]
    series = {row["bucket"]: row["counts"] for row in daily["series"]}
    # The fixture submits each job when it starts; Jan 7 counts the running job too.
    assert series["1"] == [3, 0, 1, 0, 0, 0, 0, 0]
    assert series[""] == [0, 0, 0, 1, 0, 0, 0, 0]  # cancelled while pending, submitted Jan 8
    assert series["2"] == [0, 1, 0, 0, 0, 0, 0, 0]
    assert series["3-4"] == [0, 1, 1, 0, 0, 0, 0, 0]
    assert series["5-8"] == [0, 0, 1, 0, 0, 0, 0, 0]
    assert series["9-16"] == [0, 0, 0, 0, 0, 1, 0, 0]
    assert series["17-32"] == [0, 0, 0, 0, 0, 0, 2, 1]
    assert series["65+"] == [0] * 8


def test_tenant_admin_sees_only_their_tenant_and_cannot_pick_another(
    api_as, workload, tenant_a, tenant_b
):
    client = api_as(Role.TENANT_ADMIN, tenant=tenant_a)
    own = client.get(f"{API}?{PERIOD}").json()
    assert own["states"]["total_count"] == 13 and own["tenant"] is None
    assert _by(own["sizes"]["rows"], "bucket")["2"]["count"] == 1  # not tenant B's 2-node job
    picked = client.get(f"{API}?{PERIOD}&tenant={tenant_b.slug}").json()
    assert picked["states"] == own["states"] and picked["tenant"] is None
    # Tenant B's admin sees only B's one job.
    other = api_as(Role.TENANT_ADMIN, tenant=tenant_b).get(f"{API}?{PERIOD}").json()
    assert other["states"]["rows"] == [
        {"state": "COMPLETED", "running": False, "count": 1, "count_share": 100.0,
         "gpu_hours": 16.0, "gpu_time_share": 100.0}
    ]


def test_operators_see_all_tenants_or_pick_one(api_as, workload, tenant_b):
    client = api_as(Role.OPERATOR)
    everything = client.get(f"{API}?{PERIOD}").json()
    assert everything["states"]["total_count"] == 14
    assert _by(everything["sizes"]["rows"], "bucket")["2"]["count"] == 2
    only_b = client.get(f"{API}?{PERIOD}&tenant={tenant_b.slug}").json()
    assert only_b["tenant"] == tenant_b.slug and only_b["states"]["total_count"] == 1


def test_viewers_are_refused(api_as, make_user, workload):
    assert api_as(Role.VIEWER).get(API).status_code == 403
    page = Client()
    page.force_login(make_user(Role.VIEWER))
    assert page.get("/jobs/analytics/").status_code == 403


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("since=2026-13-01", "since"),
        ("until=yesterday", "until"),
        ("since=2026-02-01&until=2026-01-01", "since"),
        ("tenant=no-such-tenant", "tenant"),
        # Thousands of years of daily series took 15 s; the day after 9999-12-31 does not exist.
        ("since=0137-05-02&until=8887-09-11", "since"),
        ("until=9999-12-31", "until"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api_as, make_user, db, query, field):
    response = api_as(Role.OPERATOR).get(f"{API}?{query}")
    assert response.status_code == 400
    assert field in response.json()
    page = Client()
    page.force_login(make_user(Role.OPERATOR, username="op-page"))
    rendered = page.get(f"/jobs/analytics/?{query}")
    assert rendered.status_code == 400
    assert f"<li>{field}: " in rendered.content.decode()


def test_default_period_is_the_last_90_days(api_as, db):
    body = api_as(Role.OPERATOR).get(API).json()
    since = datetime.fromisoformat(body["period"]["since"]).date()
    until = datetime.fromisoformat(body["period"]["until"]).date()
    assert (until - since).days == 90
    assert len(body["daily_submissions"]["days"]) == 91


def test_query_count_does_not_grow_with_jobs(api_as, workload, tenant_a):
    client = api_as(Role.OPERATOR)
    url = f"{API}?{PERIOD}&tenant={tenant_a.slug}"
    client.get(url)  # warm up the session/token lookups
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    for number in range(40):
        _job(f"more{number}", "COMPLETED", 1 + number % 40, 600 + number, _day(1 + number % 28),
             tenant=tenant_a)
    with CaptureQueriesContext(connection) as many:
        body = client.get(url).json()
    assert body["states"]["total_count"] == 53
    assert len(many) == len(few)
    analytics = [q for q in many.captured_queries if '"jobs_job"' in q["sql"]]
    assert len(analytics) == 4  # states, node buckets, GPU counts, daily submissions


def test_page_shows_tables_charts_data_and_the_job_list_links_to_it(make_user, workload):
    client = Client()
    client.force_login(make_user(Role.OPERATOR))
    page = client.get(f"/jobs/analytics/?{PERIOD}").content.decode()
    assert 'id="analytics-states"' in page and 'id="analytics-sizes"' in page
    assert '<tr data-bucket="17-32"><td>17-32</td><td class="num">3</td>' in page
    assert '<tr data-state="CANCELLED"><td>CANCELLED</td><td class="num">5</td>' in page
    assert 'id="analytics-chart-data"' in page and "js/jobs_analytics.js" in page
    assert "vendor/uplot/uPlot.iife.min.js" in page and "DCGM" in page
    job_list = client.get("/jobs/").content.decode()
    assert job_list.count('href="/jobs/analytics/"') == 1


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_charts_draw_in_chromium(live_server, browser_page, make_user, workload):
    from tests.conftest import ARTIFACTS

    page = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sign_in_page(page, live_server.url, make_user(Role.OPERATOR))
    page.goto(f"{live_server.url}/jobs/analytics/?{PERIOD}")
    for chart in ("states", "sizes", "cdf", "daily"):
        page.wait_for_selector(f"#analytics-{chart}-chart canvas", timeout=10_000)
    assert errors == []
    legend = page.locator("#analytics-cdf-chart .u-legend").inner_text()
    assert "17-32 nodes" in legend and "33-64 nodes" not in legend
    page.screenshot(path=str(ARTIFACTS / "jobs-analytics.png"), full_page=True)


def test_percentile_positions_are_postgresqls(db):
    """The portable rule picks the row PostgreSQL's percentile_disc picks, for every fraction
    the analytics report and every group size up to 1,000 (values 1..n: the value is the row)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n, percentile_disc(%s::float8[]) WITHIN GROUP (ORDER BY value) "
            "FROM generate_series(1, 1000) AS n, generate_series(1, n) AS value GROUP BY n",
            [list(CDF_FRACTIONS)],
        )
        rows = cursor.fetchall()
    assert len(rows) == 1000
    wrong = [
        (count, fraction, picked, percentile_disc_position(fraction, count))
        for count, positions in rows
        for fraction, picked in zip(CDF_FRACTIONS, positions, strict=True)
        if picked != percentile_disc_position(fraction, count)
    ]
    assert not wrong, wrong[:10]


# The x labels of a drawn category chart, with their centres and widths in CSS pixels: labels
# overlap when two neighbours' half widths add up to more than the distance between them.
OVERLAPPING_LABELS = """(id) => {
  const plot = document.getElementById(id).chart;
  const axis = plot.axes[0];
  const context = document.createElement('canvas').getContext('2d');
  context.font = (axis.font && axis.font[0]) || '12px system-ui';
  const ticks = axis._splits.map((split, i) => ({
    label: axis._values[i], at: plot.valToPos(split, 'x'),
    width: context.measureText(String(axis._values[i])).width,
  })).filter((tick) => tick.label);
  const overlaps = [];
  for (let i = 1; i < ticks.length; i++) {
    const gap = ticks[i].at - ticks[i - 1].at;
    if (gap < (ticks[i].width + ticks[i - 1].width) / 2 + 2) overlaps.push(ticks[i].label);
  }
  return {count: ticks.length, overlaps};
}"""


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_daily_chart_of_a_long_period_labels_days_without_overprinting(
    live_server, browser_page, make_user, tenant_a
):
    """Issue 26: Observation 5's chart printed a label per day, one over the other."""
    start = datetime(2026, 1, 1, 10, tzinfo=UTC)
    for day in range(120):
        _job(f"d{day}", "COMPLETED", 1 + day % 9, 3600, start + timedelta(days=day),
             tenant=tenant_a)
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in_page(page, live_server.url, make_user(Role.OPERATOR))
    page.goto(f"{live_server.url}/jobs/analytics/?since=2026-01-01&until=2026-04-30")
    page.wait_for_selector("#analytics-daily-chart canvas", timeout=10_000)
    daily = page.evaluate(OVERLAPPING_LABELS, "analytics-daily-chart")
    assert daily["overlaps"] == [] and daily["count"] >= 6, daily
    states = page.evaluate(OVERLAPPING_LABELS, "analytics-states-chart")
    assert states["overlaps"] == [], states
    from tests.conftest import ARTIFACTS

    page.screenshot(path=str(ARTIFACTS / "jobs-analytics-120-days.png"), full_page=True)
