"""Fabric action API; included by fabric/api/urls.py under `api:fabric`.

Routes: switches/{id}/ports/admin, switches/{id}/maintenance, switches/{id}/qos,
switches/{id}/save, switches/{id}/ecn-counters, switches/{id}/blast-radius, pods/{id}/qos,
maintenance-windows (list, create) and maintenance-windows/{id} (+ /cancel, /start, /end).
"""

from rest_framework.routers import SimpleRouter

from fabric.api.action_views import PodActionViewSet, SwitchActionViewSet
from fabric.api.window_views import MaintenanceWindowViewSet

router = SimpleRouter(trailing_slash="/?")
router.register("switches", SwitchActionViewSet, basename="switch-actions")
router.register("pods", PodActionViewSet, basename="pod-actions")
router.register("maintenance-windows", MaintenanceWindowViewSet, basename="maintenance-window")

urlpatterns = router.urls
