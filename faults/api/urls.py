"""REST API of the faults app, mounted at /api/faults/ (namespace `api:faults`)."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from faults.api import views

app_name = "faults"

router = DefaultRouter(trailing_slash="/?")
router.register("tickets", views.TicketViewSet, basename="ticket")
router.register("intake", views.IntakeRecordViewSet, basename="intakerecord")
router.register("repair-cases", views.RepairCaseViewSet, basename="repaircase")

urlpatterns = [
    path("events/", views.PlatformEventView.as_view(), name="platform-events"),
    path("alertmanager/", views.AlertmanagerWebhookView.as_view(), name="alertmanager"),
    path("statistics/", views.StatisticsView.as_view(), name="statistics"),
    *router.urls,
]
