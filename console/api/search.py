"""GET /api/search/?q= : the jump box's search as an endpoint (console/search.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from console.search import MAX_QUERY_LENGTH, search


class SearchHitSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["node", "hostlist", "gpu", "nic", "switch", "port", "job", "ticket"])
    label = serializers.CharField()
    detail = serializers.CharField()
    url = serializers.CharField(help_text="The portal page that shows the object")
    exact = serializers.BooleanField(help_text="The query names this object itself")


class SearchResultSerializer(serializers.Serializer):
    query = serializers.CharField()
    jump = SearchHitSerializer(allow_null=True,
                               help_text="The one object the query names, if exactly one")
    results = SearchHitSerializer(many=True, source="hits")


class SearchView(APIView):
    """Find any object by what an operator would paste: hostname or hostlist, job id, FT-n,
    serial, MAC, GPU UUID, switch, switch:port or management IP. Scoped by role like every
    list: a tenant admin finds only their allocations' nodes and their jobs."""

    read_capability = "use_portal"

    @extend_schema(
        summary="Search every kind of object the portal shows",
        parameters=[OpenApiParameter(
            "q",
            # Trimmed, at least two characters (so two besides spaces) and at most the limit.
            {"type": "string", "maxLength": MAX_QUERY_LENGTH,
             "pattern": r"^[^\u0000]*[^\s\u0000][^\u0000]*[^\s\u0000][^\u0000]*$"},
            required=True,
            description="gpu011, gpu[001-004], 1098, FT-12, a serial, MAC, GPU UUID, "
                        "leaf-p1-r3, leaf-p1-r3:Ethernet8 or 10.0.0.5")],
        responses=SearchResultSerializer,
    )
    def get(self, request):
        result = search(user=request.user, query=request.query_params.get("q", ""))
        return Response(SearchResultSerializer(result).data)
