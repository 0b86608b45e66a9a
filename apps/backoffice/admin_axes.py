"""The login-attempt list (django-axes) as staff see it: its one action deletes rows, so it needs
the delete permission, and it runs outside the login path (axes' own action reads the attempt
time a login request carries, and fails without it)."""

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django.contrib import admin
from django.utils import timezone


class LoginAttemptAdmin(AccessAttemptAdmin):
    actions = ["cleanup_expired_attempts"]

    @admin.action(description="清理已过期的登录失败记录", permissions=["delete"])
    def cleanup_expired_attempts(self, request, queryset):
        request.axes_attempt_time = timezone.now()  # what axes' handler measures expiry from
        count = self.handler.clean_expired_user_attempts(request=request)
        self.message_user(request, f"已清理 {count} 条过期的登录失败记录。")


admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, LoginAttemptAdmin)
