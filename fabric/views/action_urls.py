"""Fabric action pages; included by fabric/urls.py under the `fabric` namespace."""

from django.urls import path

from fabric.views import action_pages, window_pages

urlpatterns = [
    path("switches/<int:pk>/ports/admin/", action_pages.PortAdminView.as_view(), name="port-admin"),
    path("switches/<int:pk>/maintenance/", action_pages.LeafMaintenanceView.as_view(),
         name="leaf-maintenance"),
    path("switches/<int:pk>/maintenance/end/", action_pages.MaintenanceEndView.as_view(),
         name="maintenance-end"),
    path("switches/<int:pk>/qos/", action_pages.SwitchQosView.as_view(), name="switch-qos"),
    path("switches/<int:pk>/save/", action_pages.SwitchSaveView.as_view(), name="switch-save"),
    path("switches/<int:pk>/ecn-counters/", action_pages.SwitchEcnCountersView.as_view(),
         name="switch-ecn-counters"),
    path("pods/<int:pk>/qos/", action_pages.PodQosView.as_view(), name="pod-qos"),
    path("maintenance/", window_pages.MaintenanceCalendarView.as_view(),
         name="maintenance-calendar"),
    path("maintenance/<int:pk>/<str:step>/", window_pages.MaintenanceWindowStepView.as_view(),
         name="maintenance-window-step"),
]
