"""Pages of the faults app (namespace `faults`), mounted at /faults/."""

from django.urls import path

from faults import views

app_name = "faults"

urlpatterns = [
    path("", views.BoardView.as_view(), name="board"),
    path("tickets/", views.TicketListView.as_view(), name="ticket-list"),
    path("report/", views.ReportView.as_view(), name="report"),
    path("report/node/<str:hostname>/", views.NodeEventReportView.as_view(),
         name="report-node-event"),
    path("statistics/", views.StatisticsView.as_view(), name="statistics"),
    path("repair-cases.csv", views.RepairCaseCsvView.as_view(), name="repair-cases-csv"),
    path("swaps.csv", views.SwapCsvView.as_view(), name="swaps-csv"),
    path("<int:pk>/", views.TicketDetailView.as_view(), name="ticket"),
    path("<int:pk>/acknowledge/", views.AcknowledgeView.as_view(), name="acknowledge"),
    path("<int:pk>/transition/", views.TransitionView.as_view(), name="transition"),
    path("<int:pk>/notes/", views.NoteView.as_view(), name="note"),
    path("<int:pk>/reopen/", views.ReopenView.as_view(), name="reopen"),
    path("<int:pk>/recovery/", views.RecoveryView.as_view(), name="recovery"),
    path("<int:pk>/repairs/", views.RepairOpenView.as_view(), name="repair-open"),
    path("<int:pk>/repairs/<int:case_pk>/transition/", views.RepairTransitionView.as_view(),
         name="repair-transition"),
    path("<int:pk>/repairs/<int:case_pk>/reserve-spare/", views.RepairReserveSpareView.as_view(),
         name="repair-reserve-spare"),
    path("<int:pk>/repairs/<int:case_pk>/install/", views.RepairInstallView.as_view(),
         name="repair-install"),
]
