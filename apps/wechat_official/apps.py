from django.apps import AppConfig


class WechatOfficialConfig(AppConfig):
    name = "apps.wechat_official"
    label = "wechat_official"
    verbose_name = "公众号"
