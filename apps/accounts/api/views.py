from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from apps.accounts import profile, selectors, services
from apps.accounts.api.serializers import (
    AddressSerializer,
    LoginInSerializer,
    LoginOutSerializer,
    ProfileInSerializer,
    UserSerializer,
)
from starmall.api.schema import errors


class LoginThrottle(AnonRateThrottle):
    scope = "login"


class LoginView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginThrottle]

    @extend_schema(
        request=LoginInSerializer,
        responses={
            200: LoginOutSerializer,
            **errors(e400="invalid (bad or used code)", e429="throttled", e503="wechat_unavailable"),
        },
    )
    def post(self, request):
        data = LoginInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = services.customer_login(code=data.validated_data["code"], scene=data.validated_data["scene"])
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

    @extend_schema(
        request=ProfileInSerializer,
        responses={200: UserSerializer, **errors(e400="invalid (empty nickname; avatar_url not one of our uploads)")},
    )
    def patch(self, request):
        data = ProfileInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        customer = profile.customer_update_profile(customer=request.user, **data.validated_data)
        return Response(UserSerializer(customer).data)


class AddressListView(APIView):
    @extend_schema(responses=AddressSerializer(many=True))
    def get(self, request):
        return Response(AddressSerializer(selectors.address_list(customer=request.user), many=True).data)

    @extend_schema(
        request=AddressSerializer, responses={201: AddressSerializer, **errors(e409="limit_exceeded (20 addresses)")}
    )
    def post(self, request):
        data = AddressSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        address = services.address_create(customer=request.user, **data.validated_data)
        return Response(AddressSerializer(address).data, status=status.HTTP_201_CREATED)


class AddressDetailView(APIView):
    @extend_schema(
        request=AddressSerializer(partial=True),
        responses={200: AddressSerializer, **errors(e404="not_found (also another customer's address)")},
    )
    def patch(self, request, address_id: int):
        data = AddressSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        address = profile.address_update(customer=request.user, address_id=address_id, **data.validated_data)
        return Response(AddressSerializer(address).data)

    @extend_schema(responses={204: None, **errors(e404="not_found (also another customer's address)")})
    def delete(self, request, address_id: int):
        profile.address_delete(customer=request.user, address_id=address_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
