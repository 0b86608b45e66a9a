"""The teacher page grows its booking set-up: services (duration), rules (buffer, notice,
horizon, step, daily maximum) and weekly hours as inlines. Weekly windows are checked by
``apps.appointments.hours.windows_clean`` (the service the calendar and the command use)."""

from django import forms
from django.contrib import admin

from apps.appointments import hours
from apps.appointments.models import Service, TeacherRules, WeeklyHours
from apps.catalog.admin import TeacherAdmin
from apps.catalog.models import Teacher
from starmall.errors import ShopError


class ServiceInline(admin.TabularInline):
    model = Service
    extra = 0
    fields = ["product", "duration_minutes", "sort"]
    autocomplete_fields = ["product"]


class TeacherRulesInline(admin.StackedInline):
    model = TeacherRules
    extra = 0
    max_num = 1
    can_delete = False
    fields = ["buffer_minutes", "min_notice_minutes", "horizon_days", "step_minutes", "daily_max"]


class WeeklyHoursForm(forms.ModelForm):
    windows_text = forms.CharField(label="时段", required=False, help_text="如 09:00-12:00,14:00-18:00；空 = 不工作")

    class Meta:
        model = WeeklyHours
        fields = ["weekday"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["windows_text"].initial = ",".join("-".join(w) for w in self.instance.windows or [])

    def clean_windows_text(self):
        try:
            return hours.windows_parse(self.cleaned_data.get("windows_text", ""))
        except ShopError as exc:
            raise forms.ValidationError(exc.message) from None

    def save(self, commit=True):
        self.instance.windows = self.cleaned_data["windows_text"]
        return super().save(commit)


class WeeklyHoursInline(admin.TabularInline):
    model = WeeklyHours
    form = WeeklyHoursForm
    extra = 0
    max_num = 7


class TeacherWithHoursAdmin(TeacherAdmin):
    inlines = [*TeacherAdmin.inlines, ServiceInline, TeacherRulesInline, WeeklyHoursInline]


admin.site.unregister(Teacher)
admin.site.register(Teacher, TeacherWithHoursAdmin)
