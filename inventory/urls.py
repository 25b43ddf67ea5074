"""Pages of the inventory app (namespace `inventory`)."""

from django.urls import path

from inventory.views import detail, lists, topology

app_name = "inventory"

urlpatterns = [
    path("", lists.NodeListView.as_view(), name="node-list"),
    path("nodes/<str:hostname>/", detail.NodeDetailView.as_view(), name="node-detail"),
    # The node page's BMC section, loaded by htmx after the page: the BMC's answer (or its
    # timeout) never holds up the page or adds to its queries.
    path("nodes/<str:hostname>/bmc/", detail.NodeBmcView.as_view(), name="node-bmc"),
    path(
        "nodes/<str:hostname>/boot-override/",
        detail.NodeBootOverrideView.as_view(),
        name="node-boot-override",
    ),
    path(
        "nodes/<str:hostname>/nics/<str:device>/trace/",
        detail.NicTraceView.as_view(),
        name="nic-trace",
    ),
    path("parts/<str:serial>/", detail.PartHistoryView.as_view(), name="part-history"),
    path("spares/", detail.SparesView.as_view(), name="spares"),
    path("spares/set/", detail.SpareSetView.as_view(), name="spares-set"),
    path("switches/", lists.SwitchListView.as_view(), name="switch-list"),
    path("switches/<str:hostname>/", detail.SwitchDetailView.as_view(), name="switch-detail"),
    path("cables/", lists.CableListView.as_view(), name="cable-list"),
    path("search/", lists.HardwareSearchView.as_view(), name="hardware-search"),
    path("topology/", topology.TopologyView.as_view(), name="topology"),
    path("validation/", topology.ValidationView.as_view(), name="validation"),
]
