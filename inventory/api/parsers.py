"""YAML request bodies, for posting a topology spec file as it is."""

from __future__ import annotations

from rest_framework.parsers import BaseParser

from inventory.topology.spec import spec_from_yaml


class YAMLParser(BaseParser):
    """`application/yaml`, read with the safe loader; a syntax error is a 400 naming the line."""

    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None):
        return spec_from_yaml(stream.read().decode("utf-8", errors="replace"))


class TextYAMLParser(YAMLParser):
    """`text/yaml`, as curl --data-binary @spec.yaml -H 'Content-Type: text/yaml' sends it."""

    media_type = "text/yaml"
