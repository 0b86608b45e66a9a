"""DRF authentication by ``Authorization: Bearer <token>`` (tokens in Redis)."""

import logging

from drf_spectacular.drainage import set_override
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication

from apps.accounts.models import Customer
from apps.accounts.tokens import token_customer_id

logger = logging.getLogger(__name__)


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """Authenticate a customer by ``Authorization: Bearer <token>``.

    A missing, malformed, unknown, expired or revoked token leaves the request anonymous; the
    view's permission decides: private endpoints (``IsAuthenticated``) answer 401
    ``unauthenticated``, public ones (``AllowAny``) answer as to anyone (API.md: a mini-program
    still sending its expired token must see the catalog).
    """

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if len(header) != 2 or header[0] != self.keyword:
            return None
        token = header[1]
        customer_id = self.customer_id(token)
        if customer_id is None:
            return None
        # [:1] rather than .first(): no ORDER BY to compile on every request (a measured cost under load).
        customer = next(iter(Customer.objects.filter(pk=customer_id, is_active=True)[:1]), None)
        if customer is None:
            return None
        return customer, token

    def customer_id(self, token: str) -> int | None:
        """The customer the token belongs to (None: unknown); token-store errors propagate."""
        return token_customer_id(token)

    def authenticate_header(self, request):
        # A value here makes DRF answer 401 (not 403) to unauthenticated requests.
        return self.keyword


class PublicTokenAuthentication(BearerTokenAuthentication):
    """For public endpoints: as above, and a token store that cannot be asked (Redis down) also
    means anonymous, so the catalog is served from the database alone."""

    def customer_id(self, token: str) -> int | None:
        try:
            return super().customer_id(token)
        except Exception as exc:  # noqa: BLE001 - any cache backend error: serve anonymously
            logger.warning("token store unavailable (%s): public request served as anonymous", exc)
            return None


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Describes the bearer token in the OpenAPI schema (/api/schema/)."""

    target_class = "apps.accounts.authentication.BearerTokenAuthentication"
    match_subclasses = True
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "token from POST /api/v1/auth/wechat/login"}


# The public variant is the same "bearerAuth" scheme in the schema, on purpose.
set_override(PublicTokenAuthentication, "suppress_collision_warning", True)
