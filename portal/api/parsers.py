"""Request body parsers: DRF's own, refusing NUL characters anywhere in the parsed data (a
JSONField or a dictionary key would otherwise carry one to the database and fail there) and
JSON nested past `portal.json_input.MAX_JSON_DEPTH`."""

from __future__ import annotations

from django.http import QueryDict
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

from portal.json_input import JSONTooDeep, check_depth
from portal.text_input import nul_character_error, nul_character_field


def refuse_nul_characters(data):
    """`data` as parsed, or a 400 naming the first field that holds a NUL character."""
    value = data.data if isinstance(data, parsers.DataAndFiles) else data
    if isinstance(value, QueryDict):
        value = dict(value.lists())
    field = nul_character_field(value)
    if field is not None:
        raise ValidationError(nul_character_error(field))
    return data


class JSONParser(parsers.JSONParser):
    """DRF's, with a body nested past MAX_JSON_DEPTH a 400 naming the depth (Python's decoder
    would raise RecursionError: a 500)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = check_depth(super().parse(stream, media_type, parser_context))
        except RecursionError:
            raise ParseError(str(JSONTooDeep())) from None
        except JSONTooDeep as exc:
            raise ParseError(str(exc)) from None
        return refuse_nul_characters(data)


class FormParser(parsers.FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        return refuse_nul_characters(super().parse(stream, media_type, parser_context))


class MultiPartParser(parsers.MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        return refuse_nul_characters(super().parse(stream, media_type, parser_context))
