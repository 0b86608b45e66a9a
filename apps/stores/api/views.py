from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.stores import selectors
from apps.stores.api.serializers import StoreListQuerySerializer, StoreSerializer


class StoreListView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(parameters=[StoreListQuerySerializer], responses=StoreSerializer(many=True))
    def get(self, request):
        query = StoreListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(selectors.store_list(lat=query.validated_data.get("lat"), lng=query.validated_data.get("lng")))
