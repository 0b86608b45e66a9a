from rest_framework import serializers


class StoreListQuerySerializer(serializers.Serializer):
    lat = serializers.FloatField(required=False, min_value=-90, max_value=90, help_text="WGS-84 degrees")
    lng = serializers.FloatField(required=False, min_value=-180, max_value=180, help_text="WGS-84 degrees")

    def validate(self, data):
        if ("lat" in data) != ("lng" in data):
            missing = "lng" if "lat" in data else "lat"
            raise serializers.ValidationError({missing: ["lat 和 lng 需同时提供"]})
        return data


class StoreSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    address = serializers.CharField()
    phone = serializers.CharField()
    hours = serializers.CharField()
    lat = serializers.FloatField()
    lng = serializers.FloatField()
    distance_m = serializers.IntegerField(allow_null=True, help_text="metres from lat/lng; null without a position")
