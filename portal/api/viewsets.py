"""Viewset bases: querysets always come from a selector that knows who is asking."""


class SelectorQuerysetMixin:
    """Subclasses set `queryset = Model.objects.none()` and implement `restrict_queryset(user)`.

    The empty class queryset only serves schema generation, which has no real user; every
    request goes through the selector, so visibility rules live in one place.
    """

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return self.queryset
        return self.restrict_queryset(self.request.user)

    def restrict_queryset(self, user):
        raise NotImplementedError
