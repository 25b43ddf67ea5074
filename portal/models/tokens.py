from django.conf import settings
from django.db import models


class APIToken(models.Model):
    """An API token. Only a SHA-256 digest of the key is stored; the key is shown once.

    A fast digest is enough: keys are 256-bit random strings, so there is nothing to brute-force
    that a slow password hash would protect, and lookups stay one indexed query.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'ansible'.")
    prefix = models.CharField(
        max_length=12, help_text="First characters of the key, to tell tokens apart."
    )
    key_digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"
