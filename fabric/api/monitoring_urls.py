"""Fabric monitoring API; included by fabric/api/urls.py under `api:fabric`."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from fabric.api import monitoring

router = SimpleRouter()
router.register("switches", monitoring.MonitoredSwitchViewSet, basename="switch")
router.register("ports", monitoring.MonitoredPortViewSet, basename="port")
router.register("lldp/findings", monitoring.LldpFindingViewSet, basename="lldp-finding")

urlpatterns = [
    path("aggregates/switches/", monitoring.SwitchAggregateView.as_view(),
         name="switch-aggregates"),
    path("aggregates/rails/", monitoring.RailAggregateView.as_view(), name="rail-aggregates"),
    path("rail-health/", monitoring.RailHealthView.as_view(), name="rail-health"),
    *router.urls,
]
