"""Fabric monitoring pages; included by fabric/urls.py under the `fabric` namespace."""

from django.urls import path

from fabric.views import monitoring

urlpatterns = [
    path("", monitoring.FabricLiveView.as_view(), name="switch-list"),
    path("live/", monitoring.FabricLiveView.as_view(), name="fabric-live"),
    path("switches/<str:hostname>/", monitoring.SwitchDetailView.as_view(),
         name="switch-detail"),
    path("switches/<str:hostname>/nodes/", monitoring.SwitchNodesView.as_view(),
         name="switch-nodes"),
    path("switches/<str:hostname>/ports/", monitoring.SwitchPortsView.as_view(),
         name="switch-ports"),
    path("lldp/", monitoring.LldpView.as_view(), name="lldp"),
    path("rail-health/", monitoring.RailHealthView.as_view(), name="rail-health"),
]
