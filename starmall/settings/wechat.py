"""WeChat (mini-program, Pay v2 and v3, the official account), SMS and parcel tracking.

The defaults are the local sandbox's (``make run`` needs no account); every secret default comes
from ``starmall.public_secrets``, which production refuses.
"""

import environ

from starmall.public_secrets import default as _public

env = environ.Env()

# --- WeChat (mini-program login + WeChat Pay V2) ---------------------------------------------
# The defaults are the local sandbox's demo credentials (secrets: starmall/public_secrets.py).
# WECHAT_SANDBOX_PORT moves the sandbox and both default bases at once (make run starts the
# sandbox on whatever loopback http base the shop is given; see runshop.sandbox_address).
WECHAT_SANDBOX_PORT = env.int("WECHAT_SANDBOX_PORT", default=8001)
SANDBOX_BASE = f"http://127.0.0.1:{WECHAT_SANDBOX_PORT}/"
# The shop's name at the head of WeChat Pay's ``body`` ("商家名称-销售商品类目"), which the
# customer reads on the payment screen and in their WeChat bill.
SHOP_NAME = env.str("SHOP_NAME", default="星商城")
WECHAT_APPID = env.str("WECHAT_APPID", default="wx8d5f3c1a2b4e6f70")
WECHAT_APP_SECRET = env.str("WECHAT_APP_SECRET", default=_public("WECHAT_APP_SECRET"))
WECHAT_MCH_ID = env.str("WECHAT_MCH_ID", default="1900000109")
WECHAT_PAY_API_KEY = env.str("WECHAT_PAY_API_KEY", default=_public("WECHAT_PAY_API_KEY"))
WECHAT_API_BASE = env.str("WECHAT_API_BASE", default=SANDBOX_BASE)
WECHAT_PAY_API_BASE = env.str("WECHAT_PAY_API_BASE", default=SANDBOX_BASE)
WECHAT_MCH_CERT = env.str("WECHAT_MCH_CERT", default="")  # PEM path, needed for refunds
WECHAT_MCH_KEY = env.str("WECHAT_MCH_KEY", default="")
WECHAT_TIMEOUT_SECONDS = env.float("WECHAT_TIMEOUT_SECONDS", default=5.0)
WECHAT_SUBSCRIBE_TEMPLATE_PAID = env.str("WECHAT_SUBSCRIBE_TEMPLATE_PAID", default="order-paid")
WECHAT_SUBSCRIBE_TEMPLATE_CHAT = env.str("WECHAT_SUBSCRIBE_TEMPLATE_CHAT", default="chat-message")
WECHAT_SUBSCRIBE_TEMPLATE_REMINDER = env.str("WECHAT_SUBSCRIBE_TEMPLATE_REMINDER", default="consultation-reminder")
# Which WeChat Pay API makes NEW payments and refunds of them (apps/payments/gateway.py): "v2"
# (default: outside clients rely on it) or "v3". A payment keeps the api it was made with.
WECHAT_PAY_API = env.str("WECHAT_PAY_API", default="v2")
# The server's own address, sent as spbill_create_ip (WECHAT.md: always pass client_ip).
WECHAT_SPBILL_CREATE_IP = env.str("WECHAT_SPBILL_CREATE_IP", default="127.0.0.1")


# --- Logistics (apps.logistics: shipping carriers, parcel tracking) -------------------------
# The tracking provider (Kuaidi100's real-time query shape); by default the sandbox served by the
# WeChat sandbox's process (wechat_sandbox/logistics.py). Production: https://poll.kuaidi100.com/
# and the account's customer id and key.
LOGISTICS_PROVIDER = env.str("LOGISTICS_PROVIDER", default="apps.logistics.providers.Kuaidi100Provider")
LOGISTICS_API_BASE = env.str("LOGISTICS_API_BASE", default=SANDBOX_BASE)
LOGISTICS_CUSTOMER = env.str("LOGISTICS_CUSTOMER", default="STARMALLSANDBOX")
LOGISTICS_KEY = env.str("LOGISTICS_KEY", default=_public("LOGISTICS_KEY"))
LOGISTICS_TIMEOUT_SECONDS = env.float("LOGISTICS_TIMEOUT_SECONDS", default=5.0)
LOGISTICS_CACHE_SECONDS = env.int("LOGISTICS_CACHE_SECONDS", default=600)
# Shipped goods orders complete by themselves this many days after shipping (API.md Additions).
AUTO_RECEIVE_DAYS = env.int("AUTO_RECEIVE_DAYS", default=10)
WECHAT_SUBSCRIBE_TEMPLATE_SHIPPED = env.str("WECHAT_SUBSCRIBE_TEMPLATE_SHIPPED", default="order-shipped")
WECHAT_SUBSCRIBE_TEMPLATE_WAITLIST = env.str("WECHAT_SUBSCRIBE_TEMPLATE_WAITLIST", default="waitlist-open")


# --- Receipt printers and electronic waybills (apps.printing; docs/DEPLOY.md) ----------------
# 飞鹅云's account (the printers themselves are rows staff add: 打印与面单 › 小票打印机); a printer
# of provider "sandbox" prints to the sandbox (PRINTING_SANDBOX_BASE, GET /sandbox/printer).
PRINTER_FEIE_URL = env.str("PRINTER_FEIE_URL", default="http://api.feieyun.cn/Api/Open/")
PRINTER_FEIE_USER = env.str("PRINTER_FEIE_USER", default="")
PRINTER_FEIE_USER_KEY = env.str("PRINTER_FEIE_USER_KEY", default="")
# Electronic waybills: the provider (a dotted path; default the sandbox's Kuaidi100 emulator),
# Kuaidi100's 电子面单 account and the carrier's, the carrier and the sender printed on labels.
WAYBILL_PROVIDER = env.str("WAYBILL_PROVIDER", default="apps.printing.providers.SandboxWaybillProvider")
WAYBILL_URL = env.str("WAYBILL_URL", default="https://api.kuaidi100.com/label/order")
WAYBILL_KEY = env.str("WAYBILL_KEY", default="")
WAYBILL_SECRET = env.str("WAYBILL_SECRET", default="")
WAYBILL_PARTNER_ID = env.str("WAYBILL_PARTNER_ID", default="")
WAYBILL_PARTNER_KEY = env.str("WAYBILL_PARTNER_KEY", default="")
WAYBILL_CARRIER = env.str("WAYBILL_CARRIER", default="zhongtong")  # apps.logistics.carriers code
WAYBILL_SENDER_NAME = env.str("WAYBILL_SENDER_NAME", default="星商城发货部")
WAYBILL_SENDER_MOBILE = env.str("WAYBILL_SENDER_MOBILE", default="13800000000")
WAYBILL_SENDER_ADDRESS = env.str("WAYBILL_SENDER_ADDRESS", default="浙江省杭州市西湖区文三路100号")
PRINTING_SANDBOX_BASE = env.str("PRINTING_SANDBOX_BASE", default=SANDBOX_BASE)
PRINTING_TIMEOUT_SECONDS = env.float("PRINTING_TIMEOUT_SECONDS", default=5.0)


# --- Messages and the WeChat account (subscription templates, phone numbers, SMS, official account) ---
# A customer who refused a kind of subscription message (43101) is not sent that kind for this long.
SUBSCRIBE_REFUSAL_QUIET_HOURS = env.int("SUBSCRIBE_REFUSAL_QUIET_HOURS", default=24)
# SMS verification codes (POST /api/v1/sms/codes): one a minute per phone and per client address,
# at most this many a day (Shanghai date) per phone and per client address; a code lives
# SMS_CODE_TTL_SECONDS and is checked at most SMS_CODE_MAX_ATTEMPTS times.
SMS_CODES_PER_DAY = env.int("SMS_CODES_PER_DAY", default=10)
SMS_CODE_TTL_SECONDS = env.int("SMS_CODE_TTL_SECONDS", default=300)
SMS_CODE_MAX_ATTEMPTS = env.int("SMS_CODE_MAX_ATTEMPTS", default=5)
# The SMS provider of verification codes and notices (SMS_BACKEND above names the class):
# apps.accounts.sms.TencentSmsBackend (Tencent Cloud SMS, SendSms 2021-01-11, TC3-HMAC-SHA256);
# make run points it at the sandbox (wechat_sandbox/sms.py, which checks the signature).
SMS_TENCENT_ENDPOINT = env.str(
    "SMS_TENCENT_ENDPOINT", default=f"{SANDBOX_BASE}tencent-sms/"
)  # real: https://sms.tencentcloudapi.com/
SMS_TENCENT_REGION = env.str("SMS_TENCENT_REGION", default="ap-guangzhou")
SMS_TENCENT_SECRET_ID = env.str("SMS_TENCENT_SECRET_ID", default=_public("SMS_TENCENT_SECRET_ID"))
SMS_TENCENT_SECRET_KEY = env.str("SMS_TENCENT_SECRET_KEY", default=_public("SMS_TENCENT_SECRET_KEY"))
SMS_TENCENT_SDK_APP_ID = env.str("SMS_TENCENT_SDK_APP_ID", default="1400000000")
SMS_SIGN_NAME = env.str("SMS_SIGN_NAME", default="星商城")
# provider template ids: the verification code ({1} code, {2} minutes) and "order paid" ({1} order_no, {2} yuan)
SMS_TEMPLATE_CODE = env.str("SMS_TEMPLATE_CODE", default="100001")
SMS_TEMPLATE_ORDER_PAID = env.str("SMS_TEMPLATE_ORDER_PAID", default="100002")
SMS_TIMEOUT_SECONDS = env.float("SMS_TIMEOUT_SECONDS", default=5.0)
# The official account (公众号): its own appid/secret (menus, materials, mass sending), the
# server's token, and the EncodingAESKey (43 characters; empty = plaintext mode only).
WECHAT_OFFICIAL_APPID = env.str("WECHAT_OFFICIAL_APPID", default="wx5e2f7a9c1b3d4e60")
WECHAT_OFFICIAL_SECRET = env.str("WECHAT_OFFICIAL_SECRET", default=_public("WECHAT_OFFICIAL_SECRET"))
WECHAT_OFFICIAL_TOKEN = env.str("WECHAT_OFFICIAL_TOKEN", default=_public("WECHAT_OFFICIAL_TOKEN"))
WECHAT_OFFICIAL_AES_KEY = env.str("WECHAT_OFFICIAL_AES_KEY", default="")
# The server's message mode, as chosen in 公众平台 (消息加解密方式): plaintext (only plaintext
# messages), compatible (both) or safe (only encrypted ones; plaintext is refused 403).
WECHAT_OFFICIAL_MODE = env.str("WECHAT_OFFICIAL_MODE", default="safe" if WECHAT_OFFICIAL_AES_KEY else "plaintext")
WECHAT_OFFICIAL_API_BASE = env.str("WECHAT_OFFICIAL_API_BASE", default=SANDBOX_BASE)
# Followers per mass-send batch (WeChat's message/mass/send takes up to 10,000 openids).
OFFICIAL_MASS_BATCH_SIZE = env.int("OFFICIAL_MASS_BATCH_SIZE", default=10000)


# WeChat Pay API v3 (WECHAT.md): the defaults are the sandbox's shipped test keys (wechat_sandbox/keys/),
# so make run works with no internet; production refuses them (starmall/public_secrets.py).
WECHAT_PAY_V3_API_BASE = env.str("WECHAT_PAY_V3_API_BASE", default=SANDBOX_BASE.rstrip("/")).rstrip("/")
WECHAT_PAY_V3_MCH_PRIVATE_KEY = env.str(
    "WECHAT_PAY_V3_MCH_PRIVATE_KEY", default=_public("WECHAT_PAY_V3_MCH_PRIVATE_KEY")
)
WECHAT_PAY_V3_MCH_SERIAL = env.str("WECHAT_PAY_V3_MCH_SERIAL", default=_public("WECHAT_PAY_V3_MCH_SERIAL"))
WECHAT_PAY_V3_KEY = env.str("WECHAT_PAY_V3_KEY", default=_public("WECHAT_PAY_V3_KEY"))
WECHAT_PAY_V3_PUBLIC_KEY = env.str("WECHAT_PAY_V3_PUBLIC_KEY", default=_public("WECHAT_PAY_V3_PUBLIC_KEY"))
WECHAT_PAY_V3_PUBLIC_KEY_ID = env.str("WECHAT_PAY_V3_PUBLIC_KEY_ID", default=_public("WECHAT_PAY_V3_PUBLIC_KEY_ID"))
# Shipping information (小程序发货信息管理): the page WeChat's "confirm receipt" message opens,
# set once with wxa/sec/order/set_msg_jump_path (the order number is appended by WeChat).
WECHAT_ORDER_DETAIL_PATH = env.str("WECHAT_ORDER_DETAIL_PATH", default="pages/order/detail")
# The mini-program page a promotion code opens (getwxacodeunlimit ``page``; empty: the home page).
PROMOTION_CODE_PAGE = env.str("PROMOTION_CODE_PAGE", default="")
