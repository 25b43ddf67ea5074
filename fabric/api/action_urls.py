"""Fabric action API; included by fabric/api/urls.py under `api:fabric`.

Routes: switches/{id}/ports/admin, switches/{id}/maintenance, switches/{id}/qos,
switches/{id}/save, switches/{id}/ecn-counters, switches/{id}/blast-radius, pods/{id}/qos.
"""

from rest_framework.routers import SimpleRouter

from fabric.api.action_views import PodActionViewSet, SwitchActionViewSet

router = SimpleRouter(trailing_slash="/?")
router.register("switches", SwitchActionViewSet, basename="switch-actions")
router.register("pods", PodActionViewSet, basename="pod-actions")

urlpatterns = router.urls
