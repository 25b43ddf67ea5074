"""REST API of the inventory app, mounted at /api/inventory/ (namespace `api:inventory`)."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from inventory.api import views

app_name = "inventory"

router = DefaultRouter(trailing_slash="/?")
router.register("pods", views.PodViewSet, basename="pod")
router.register("racks", views.RackViewSet, basename="rack")
router.register("nodes", views.NodeViewSet, basename="node")
router.register("gpus", views.GPUViewSet, basename="gpu")
router.register("nics", views.NICViewSet, basename="nic")
router.register("switches", views.SwitchViewSet, basename="switch")
router.register("ports", views.SwitchPortViewSet, basename="port")
router.register("cables", views.CableViewSet, basename="cable")
router.register("allocations", views.AllocationViewSet, basename="allocation")
router.register("swaps", views.ComponentSwapViewSet, basename="swap")
router.register("spares", views.SpareStockViewSet, basename="spare")

urlpatterns = [
    path("topology/import", views.TopologyImportView.as_view(), name="topology-import"),
    path("validation", views.TopologyValidationView.as_view(), name="validation"),
    *router.urls,
]
