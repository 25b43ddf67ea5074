"""YAML request bodies, for posting a topology spec file as it is."""

from __future__ import annotations

from django.conf import settings
from rest_framework.parsers import BaseParser

from inventory.topology.spec import spec_from_yaml
from portal.errors import PayloadTooLarge


class YAMLParser(BaseParser):
    """`application/yaml`, read with the safe loader; a syntax error is a 400 naming the line,
    an alias bomb a 400 before it expands, and a body past TOPOLOGY_SPEC_MAX_BYTES a 413 read no
    further than the limit."""

    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.TOPOLOGY_SPEC_MAX_BYTES
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise PayloadTooLarge(
                {"spec": [f"A YAML spec may be at most {limit:,} bytes; this one is longer."]}
            )
        return spec_from_yaml(body.decode("utf-8", errors="replace"))


class TextYAMLParser(YAMLParser):
    """`text/yaml`, as curl --data-binary @spec.yaml -H 'Content-Type: text/yaml' sends it."""

    media_type = "text/yaml"
