"""Fabric monitoring API; included by fabric/api/urls.py under `api:fabric`."""

urlpatterns: list = []
