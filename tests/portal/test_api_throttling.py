"""The API brakes anonymous requests and failed authentication per address, not normal use."""

import pytest
from rest_framework.test import APIClient

from portal.environment import ConfigurationError, env_rate
from portal.models import Role
from portal.services.accounts import api_token_create

pytestmark = pytest.mark.django_db


def with_rates(settings, **rates):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates},
    }


def token_client(key: str, **extra) -> APIClient:
    client = APIClient(**extra)
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def assert_throttled(response):
    assert response.status_code == 429, response.content
    assert int(response["Retry-After"]) >= 1
    if response["Content-Type"].startswith("application/json"):
        assert "detail" in response.json()


def test_failed_tokens_are_braked_and_then_even_a_right_token_waits(make_user, settings):
    limit = int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["failed_auth"].split("/")[0])
    _, key = api_token_create(user=make_user(Role.OPERATOR), name="automation")
    guesser = token_client("gop_guessed-key")
    assert [guesser.get("/api/me/").status_code for _ in range(limit)] == [401] * limit
    assert_throttled(guesser.get("/api/me/"))
    # Over the budget the key is not even looked at, so a right guess is no faster.
    assert_throttled(token_client(key).get("/api/me/"))
    assert_throttled(token_client("two words").get("/api/me/"))
    # Another address has its own budget.
    assert token_client(key, REMOTE_ADDR="10.9.8.7").get("/api/me/").status_code == 200


def test_anonymous_requests_are_braked_past_their_rate(settings):
    with_rates(settings, anon="5/min")
    anonymous = APIClient()
    assert [anonymous.get("/api/actions/").status_code for _ in range(5)] == [401] * 5
    assert_throttled(anonymous.get("/api/actions/"))
    assert_throttled(anonymous.get("/api/schema/"))  # public, but anonymous all the same


def test_authenticated_use_is_not_braked_by_default(api_as, settings):
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["user"] is None
    client = api_as(Role.VIEWER)
    statuses = {client.get("/api/me/").status_code for _ in range(150)}
    assert statuses == {200}


def test_authenticated_use_is_braked_when_a_user_rate_is_set(api_as, settings):
    with_rates(settings, user="3/min")
    client = api_as(Role.VIEWER)
    assert [client.get("/api/me/").status_code for _ in range(3)] == [200] * 3
    assert_throttled(client.get("/api/me/"))


def test_forwarded_for_is_believed_only_behind_trusted_proxies(settings):
    with_rates(settings, anon="2/min")
    spoofing = APIClient()
    for hop in ("1.1.1.1", "2.2.2.2", "3.3.3.3"):
        spoofing.get("/api/actions/", HTTP_X_FORWARDED_FOR=hop)
    # No trusted proxy: X-Forwarded-For is the client's own word, the budget is 127.0.0.1's.
    assert_throttled(spoofing.get("/api/actions/", HTTP_X_FORWARDED_FOR="4.4.4.4"))

    settings.TRUSTED_PROXY_COUNT = 1
    proxied = APIClient(REMOTE_ADDR="10.0.0.1")  # the proxy
    # The proxy appends the address it saw; what the client wrote before it is not believed.
    for _ in range(2):
        assert (
            proxied.get("/api/actions/", HTTP_X_FORWARDED_FOR="6.6.6.6, 5.5.5.5").status_code == 401
        )
    assert_throttled(proxied.get("/api/actions/", HTTP_X_FORWARDED_FOR="7.7.7.7, 5.5.5.5"))
    assert proxied.get("/api/actions/", HTTP_X_FORWARDED_FOR="5.5.5.6").status_code == 401


def test_rates_are_read_from_the_environment():
    assert env_rate({"R": "100/min"}, "R", None) == "100/min"
    assert env_rate({"R": "off"}, "R", "5/s") is None
    assert env_rate({}, "R", "5/s") == "5/s"
    for bad in ("100", "fast", "0/min", "10/fortnight"):
        with pytest.raises(ConfigurationError, match="R="):
            env_rate({"R": bad}, "R", None)
