"""``manage.py teacher_hours``: one line, non-zero on refusal, bookings kept and named."""

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command

from apps.appointments.models import Booking, DateOverride, WeeklyHours


def run(*args):
    out = io.StringIO()
    call_command("teacher_hours", *map(str, args), stdout=out)
    return out.getvalue()


def test_weekday_hours_and_date_overrides(hours_teacher):
    h = hours_teacher
    line = run(h.teacher.pk, "--weekday", 7, "--hours", "14:00-18:00,09:00-12:00")
    assert line.count("\n") == 1 and "周7" in line
    assert WeeklyHours.objects.get(teacher=h.teacher, weekday=7).windows == [["09:00", "12:00"], ["14:00", "18:00"]]
    run(h.teacher.pk, "--date", h.monday, "--off")
    assert DateOverride.objects.get(teacher=h.teacher, date=h.monday).off is True
    run(h.teacher.pk, "--date", h.monday, "--hours", "19:00-21:00")
    assert DateOverride.objects.get(teacher=h.teacher, date=h.monday).windows == [["19:00", "21:00"]]
    run(h.teacher.pk, "--date", h.monday, "--clear")
    assert not DateOverride.objects.filter(teacher=h.teacher).exists()


def test_bookings_already_made_are_kept_and_named(hours_teacher, customer):
    h = hours_teacher
    Booking.objects.create(
        teacher=h.teacher,
        product=h.long,
        start=h.at(9),
        end=h.at(10),
        blocked_until=h.at(10, 15),
        order_no="K1",
        customer=customer,
    )
    line = run(h.teacher.pk, "--date", h.monday, "--off")
    assert "K1" in line and f"{h.monday:%m-%d} 09:00" in line
    assert Booking.objects.get(order_no="K1").live
    assert "K1" not in run(h.teacher.pk, "--weekday", 1, "--hours", "14:00-18:00")  # that Monday is overridden
    assert "K1" not in run(h.teacher.pk, "--date", h.monday + dt.timedelta(days=7), "--off")


@pytest.mark.parametrize(
    "args",
    [
        ["--weekday", "8", "--hours", "09:00-12:00"],
        ["--weekday", "1", "--hours", "12:00-09:00"],
        ["--weekday", "1", "--hours", "09:00-12:00,11:00-13:00"],
        ["--date", "2027-01-04"],
        ["--date", "2027-01-04", "--off", "--clear"],
    ],
)
def test_refusals_exit_non_zero_and_change_nothing(hours_teacher, args):
    h = hours_teacher
    before = list(WeeklyHours.objects.values_list("weekday", "windows"))
    with pytest.raises(CommandError):
        run(h.teacher.pk, *args)
    assert list(WeeklyHours.objects.values_list("weekday", "windows")) == before
    assert not DateOverride.objects.exists()


@pytest.mark.parametrize("how", [["--off"], ["--hours", "09:00-12:00"], ["--clear"]])
def test_a_past_date_is_refused(hours_teacher, how):
    from django.utils import timezone

    with pytest.raises(CommandError, match="不能修改已经过去的日期"):
        run(hours_teacher.teacher.pk, "--date", timezone.localdate() - dt.timedelta(days=1), *how)
    assert not DateOverride.objects.exists()


def test_unknown_teacher_is_refused(db):
    with pytest.raises(CommandError):
        run(999999, "--weekday", 1, "--hours", "09:00-12:00")
