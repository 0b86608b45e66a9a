from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from apps.files import services
from apps.files.exceptions import PayloadTooLarge
from starmall.api.middleware import content_length
from starmall.api.schema import errors

MULTIPART_OVERHEAD = 64 * 1024  # boundaries and part headers around the file


class UploadThrottle(UserRateThrottle):
    scope = "upload"


class UploadInSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="JPEG/PNG <= 5 MB and 20 megapixels, AAC/MP3/M4A <= 2 MB (type read from the content, audio parsed)"
    )


class UploadOutSerializer(serializers.Serializer):
    url = serializers.URLField(help_text="absolute URL of the stored file")


class UploadView(APIView):
    parser_classes = [MultiPartParser]
    throttle_classes = [UploadThrottle]

    @extend_schema(
        request={"multipart/form-data": UploadInSerializer},
        responses={
            201: UploadOutSerializer,
            **errors(
                e400="invalid (no file, not JPEG/PNG/AAC/MP3, image over 20 megapixels or unreadable, audio that "
                "does not parse)",
                e413="payload_too_large (detail.max_bytes)",
            ),
        },
    )
    def post(self, request):
        # A body that cannot hold an acceptable file is refused before it is read (and spooled
        # to disk by Django's multipart parser).
        if content_length(request) > services.IMAGE_MAX_BYTES + MULTIPART_OVERHEAD:
            raise PayloadTooLarge("文件过大（最大 5 MB）。", max_bytes=services.IMAGE_MAX_BYTES)
        data = UploadInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = services.upload_store(file=data.validated_data["file"], uploader_id=request.user.pk)
        return Response({"url": services.media_url(upload.name)}, status=status.HTTP_201_CREATED)
