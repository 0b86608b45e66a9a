"""DRF authentication by ``Authorization: Bearer <token>`` (tokens in Redis)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from apps.accounts.models import Customer
from apps.accounts.tokens import token_customer_id


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """Authenticate a customer; missing header -> anonymous, bad token -> 401."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if not header or header[0] != self.keyword:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed()
        token = header[1]
        customer_id = token_customer_id(token)
        if customer_id is None:
            raise exceptions.AuthenticationFailed()
        customer = Customer.objects.filter(pk=customer_id, is_active=True).first()
        if customer is None:
            raise exceptions.AuthenticationFailed()
        return customer, token

    def authenticate_header(self, request):
        # A value here makes DRF answer 401 (not 403) to unauthenticated requests.
        return self.keyword


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Describes the bearer token in the OpenAPI schema (/api/schema/)."""

    target_class = "apps.accounts.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "token from POST /api/v1/auth/wechat/login"}
