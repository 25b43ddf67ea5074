"""OpenAPI extensions so the generated schema documents our token authentication."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class HashedTokenScheme(OpenApiAuthenticationExtension):
    target_class = "portal.authentication.HashedTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <key>`; create keys at /api/tokens/ or with "
            "`manage.py create_portal_user`.",
        }
