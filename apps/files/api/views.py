from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from apps.files import services
from starmall.api.schema import errors


class UploadThrottle(UserRateThrottle):
    scope = "upload"


class UploadInSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="JPEG/PNG <= 5 MB, AAC/MP3 <= 2 MB (type read from the content)")


class UploadOutSerializer(serializers.Serializer):
    url = serializers.URLField(help_text="absolute URL of the stored file")


class UploadView(APIView):
    parser_classes = [MultiPartParser]
    throttle_classes = [UploadThrottle]

    @extend_schema(request={"multipart/form-data": UploadInSerializer}, responses={
        201: UploadOutSerializer, **errors(e400="invalid (no file, not JPEG/PNG/AAC/MP3, unreadable image)",
                                           e413="payload_too_large (detail.max_bytes)")})
    def post(self, request):
        data = UploadInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        url = services.upload_store(file=data.validated_data["file"])
        return Response({"url": url}, status=status.HTTP_201_CREATED)
