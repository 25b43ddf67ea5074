"""Fabric action pages; included by fabric/urls.py under the `fabric` namespace."""

from django.urls import path

from fabric.views import actions

urlpatterns = [
    path("switches/<int:pk>/ports/admin/", actions.PortAdminView.as_view(), name="port-admin"),
    path("switches/<int:pk>/maintenance/", actions.LeafMaintenanceView.as_view(),
         name="leaf-maintenance"),
    path("switches/<int:pk>/qos/", actions.SwitchQosView.as_view(), name="switch-qos"),
    path("switches/<int:pk>/save/", actions.SwitchSaveView.as_view(), name="switch-save"),
    path("switches/<int:pk>/ecn-counters/", actions.SwitchEcnCountersView.as_view(),
         name="switch-ecn-counters"),
    path("pods/<int:pk>/qos/", actions.PodQosView.as_view(), name="pod-qos"),
]
