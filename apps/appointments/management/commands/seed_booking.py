from django.core.management.base import BaseCommand
from django.db import transaction

from apps.appointments import hours
from apps.appointments.models import Service, TeacherRules, WeeklyHours
from apps.catalog.models import Kind, Product, Sku, Teacher

WEEKDAY_HOURS = [["09:00", "12:00"], ["14:00", "18:00"]]  # Monday to Friday, Beijing time
SATURDAY_HOURS = [["10:00", "16:00"]]
SHORT_PRICE_FEN = 15900  # the 30-minute service


class Command(BaseCommand):
    help = (
        "Demo booking data (API.md Booking): the first teacher works Mon–Fri 09:00–12:00 and 14:00–18:00, "
        "Sat 10:00–16:00, Sunday off, with a 60- and a 30-minute service, buffer 15, step 30; the second "
        "keeps the legacy six one-hour starts a day (no hours set). Only when the first teacher has no hours."
    )

    @transaction.atomic
    def handle(self, *args, **options):
        teacher = Teacher.objects.filter(is_active=True, product__isnull=False).order_by("pk").first()
        if teacher is None or WeeklyHours.objects.filter(teacher=teacher).exists():
            self.stdout.write("demo booking: nothing to do")
            return
        for weekday, windows in [*((d, WEEKDAY_HOURS) for d in range(1, 6)), (6, SATURDAY_HOURS), (7, [])]:
            hours.weekly_hours_set(teacher_id=teacher.pk, weekday=weekday, windows=windows)  # as staff set them
        TeacherRules.objects.update_or_create(teacher=teacher, defaults={"buffer_minutes": 15, "step_minutes": 30})
        Service.objects.get_or_create(product=teacher.product, defaults={"teacher": teacher, "duration_minutes": 60})
        base = teacher.product
        short = Product.objects.create(
            category_id=base.category_id,
            name=f"{base.name}·30分钟",
            kind=Kind.CONSULTATION,
            description="一对一线上咨询30分钟：一个问题，说清楚。",
            cover_url=base.cover_url,
            images=base.images,
            is_active=True,
            sort=base.sort,
        )
        Sku.objects.create(
            product=short,
            specs={"时长": "30分钟", "方式": "线上视频"},
            price_fen=SHORT_PRICE_FEN,
            stock=1000,
            code=f"SM-{base.pk:03d}-30",
        )
        Service.objects.create(teacher=teacher, product=short, duration_minutes=30, sort=1)
        self.stdout.write(f"demo booking: {teacher.name} works Mon–Sat hours with a 60- and a 30-minute service")
