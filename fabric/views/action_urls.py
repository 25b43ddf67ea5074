"""Fabric action pages; included by fabric/urls.py under the `fabric` namespace."""

urlpatterns: list = []
