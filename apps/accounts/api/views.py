from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from apps.accounts import selectors, services
from apps.accounts.api.serializers import (
    AddressSerializer,
    LoginInSerializer,
    LoginOutSerializer,
    UserSerializer,
)
from starmall.api.schema import errors


class LoginThrottle(AnonRateThrottle):
    scope = "login"


class LoginView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginThrottle]

    @extend_schema(request=LoginInSerializer, responses={200: LoginOutSerializer, **errors(
        e400="invalid (bad or used code)", e429="throttled", e503="wechat_unavailable")})
    def post(self, request):
        data = LoginInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = services.customer_login(code=data.validated_data["code"])
        out = {"token": result.token, "expires_in": settings.AUTH_TOKEN_TTL_SECONDS, "user": result.customer}
        return Response(LoginOutSerializer(out).data)


class LogoutView(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request):
        services.customer_logout(token=request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(APIView):
    @extend_schema(responses=UserSerializer)
    def get(self, request):
        return Response(UserSerializer(request.user).data)


class AddressListView(APIView):
    @extend_schema(responses=AddressSerializer(many=True))
    def get(self, request):
        return Response(AddressSerializer(selectors.address_list(customer=request.user), many=True).data)

    @extend_schema(request=AddressSerializer, responses={201: AddressSerializer})
    def post(self, request):
        data = AddressSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        address = services.address_create(customer=request.user, **data.validated_data)
        return Response(AddressSerializer(address).data, status=status.HTTP_201_CREATED)
