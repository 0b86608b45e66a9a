from rest_framework import serializers

from starmall.api import fields


class StoreListQuerySerializer(serializers.Serializer):
    lat = fields.FloatField(required=False, min_value=-90, max_value=90, help_text="WGS-84 degrees")
    lng = fields.FloatField(required=False, min_value=-180, max_value=180, help_text="WGS-84 degrees")

    def validate(self, data):
        if ("lat" in data) != ("lng" in data):
            missing = "lng" if "lat" in data else "lat"
            raise serializers.ValidationError({missing: ["lat 和 lng 需同时提供"]})
        return data


class StoreSerializer(serializers.Serializer):
    id = fields.IntegerField()
    name = fields.CharField()
    address = fields.CharField()
    phone = fields.CharField()
    hours = fields.CharField()
    lat = fields.FloatField()
    lng = fields.FloatField()
    distance_m = fields.IntegerField(allow_null=True, help_text="metres from lat/lng; null without a position")
