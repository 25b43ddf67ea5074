"""Prometheus metrics: request counts and latency, Actions by status, readiness."""

from __future__ import annotations

import time

from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

HTTP_REQUESTS = Counter(
    "portal_http_requests_total", "HTTP requests served", ["method", "view", "status"]
)
HTTP_LATENCY = Histogram(
    "portal_http_request_duration_seconds",
    "Time to serve an HTTP request",
    ["method", "view"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


class RequestMetricsMiddleware:
    """Counts by the matched URL name, not the raw path, so label cardinality stays bounded."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        view = (match.view_name if match else "") or "unmatched"
        HTTP_LATENCY.labels(request.method, view).observe(time.perf_counter() - started)
        HTTP_REQUESTS.labels(request.method, view, str(response.status_code)).inc()
        return response


class PortalStateCollector(Collector):
    """Read at scrape time so the numbers are current without a background job."""

    def collect(self):
        from portal.health import recent_readiness
        from portal.models import ActionStatus
        from portal.selectors import action_counts_by_status

        actions = GaugeMetricFamily("portal_actions", "Actions by status", labels=["status"])
        counts = action_counts_by_status()
        for status in ActionStatus.values:
            actions.add_metric([status], counts.get(status, 0))
        yield actions
        ready = GaugeMetricFamily(
            "portal_dependency_up", "1 when the dependency answers", labels=["dependency"]
        )
        for name, state in recent_readiness().items():
            ready.add_metric([name], 0 if "unreachable" in state else 1)
        yield ready


_collector_registered = False


def register_portal_collector() -> None:
    global _collector_registered
    if not _collector_registered:
        REGISTRY.register(PortalStateCollector())
        _collector_registered = True
