"""The almanac (黄历): one row per civil day, an index of 宜/忌 terms, and the loaded ranges.

Rows are written only by ``services.almanac_load`` (the ``load_almanac`` command) from
lunar-python (``compute.py``); nothing else changes them, so the admin shows them read-only.
Every row records its source, version and sect (README "Source").
"""

from django.db import models


class AlmanacDay(models.Model):
    """One Gregorian date (Beijing civil day) with its lunar date, pillars, term and 宜/忌."""

    date = models.DateField(verbose_name="日期", primary_key=True)
    # Lunar date. ``lunar_month`` is 1..12 also for a leap month (闰四月: 4 + is_leap).
    lunar_year = models.SmallIntegerField(verbose_name="农历年")
    lunar_month = models.SmallIntegerField(verbose_name="农历月")
    lunar_day = models.SmallIntegerField(verbose_name="农历日")
    is_leap = models.BooleanField(verbose_name="闰月", default=False)
    lunar_month_text = models.CharField(verbose_name="农历月名", max_length=8)  # 闰冬月
    lunar_day_text = models.CharField(verbose_name="农历日名", max_length=4)  # 初一
    lunar_text = models.CharField(verbose_name="农历", max_length=12)  # 闰冬月初一
    # 干支. The year by 正月初一 (lunar-python's default, goes with the zodiac) and by 立春.
    year_ganzhi = models.CharField(verbose_name="年干支", max_length=2)
    year_ganzhi_lichun = models.CharField(verbose_name="年干支（立春）", max_length=2)
    month_ganzhi = models.CharField(verbose_name="月干支", max_length=2)  # by day: changes on the day of each 节
    day_ganzhi = models.CharField(verbose_name="日干支", max_length=2)
    zodiac = models.CharField(verbose_name="生肖", max_length=1)  # 生肖 of the lunar year
    # The 节气 that falls on this date (Beijing time) and its instant; blank/null on other days.
    solar_term = models.CharField(verbose_name="节气", max_length=2, blank=True)
    solar_term_at = models.DateTimeField(verbose_name="交节时间", null=True, blank=True)
    # 宜/忌 as the almanac prints them, in order, markers (馀事勿取, 诸事不宜, 无) included.
    yi = models.JSONField(verbose_name="宜", default=list)
    ji = models.JSONField(verbose_name="忌", default=list)
    chong_zodiac = models.CharField(verbose_name="冲生肖", max_length=1)  # 冲鼠
    chong_ganzhi = models.CharField(verbose_name="冲干支", max_length=2)  # (戊子)
    sha = models.CharField(verbose_name="煞", max_length=1)  # 煞北
    pengzu_gan = models.CharField(verbose_name="彭祖百忌（干）", max_length=16)  # 彭祖百忌
    pengzu_zhi = models.CharField(verbose_name="彭祖百忌（支）", max_length=16)
    zhishen = models.CharField(verbose_name="值神", max_length=4)  # 值神 (司命)
    zhishen_type = models.CharField(verbose_name="值神吉凶", max_length=2)  # 黄道 / 黑道
    jianchu = models.CharField(verbose_name="建除", max_length=1)  # 建除十二值星 (破)
    jishen = models.JSONField(verbose_name="吉神", default=list)  # 吉神宜趋
    xiongsha = models.JSONField(verbose_name="凶煞", default=list)  # 凶煞宜忌
    festivals = models.JSONField(verbose_name="节日", default=list)
    # Where the row came from: "lunar-python", "1.4.8", sect 1.
    source = models.CharField(verbose_name="数据来源", max_length=32)
    source_version = models.CharField(verbose_name="数据版本", max_length=16)
    sect = models.SmallIntegerField(verbose_name="流派")

    class Meta:
        verbose_name = "黄历"
        verbose_name_plural = "黄历"
        ordering = ["date"]

    def __str__(self) -> str:
        return f"{self.date.isoformat()} {self.lunar_text}"


class AlmanacActivity(models.Model):
    """Search index: one row per (date, 宜 or 忌, term). Markers are not indexed.

    About 1.1 million rows for 1901-2100 (15 per day on average). Search reads the
    (term, kind, date) index only: "dates in [start, end] where the term is 宜" is a range scan
    per term, and "... and not 忌" probes the primary key (date, kind, term).
    """

    class Kind(models.TextChoices):
        YI = "yi", "宜"
        JI = "ji", "忌"

    pk = models.CompositePrimaryKey("day", "kind", "term")
    # DO_NOTHING: the loader deletes index rows before their days in one statement each; a
    # Django-side cascade would fetch every row into Python first.
    # No separate index on date: the primary key (date, kind, term) already leads with it.
    day = models.ForeignKey(
        AlmanacDay, verbose_name="日期", on_delete=models.DO_NOTHING, db_column="date", related_name="+", db_index=False
    )
    kind = models.CharField(verbose_name="宜/忌", max_length=2, choices=Kind.choices)
    term = models.CharField(verbose_name="事项", max_length=8)

    class Meta:
        verbose_name = "黄历宜忌索引"
        verbose_name_plural = "黄历宜忌索引"
        indexes = [models.Index(fields=["term", "kind", "day"], name="almanac_act_term_kind_date")]

    def __str__(self) -> str:
        return f"{self.day_id} {self.get_kind_display()}{self.term}"


class AlmanacRange(models.Model):
    """A maximal run of loaded dates from one source/version/sect (the loader keeps it merged).

    The API uses these rows to tell "not loaded" (404 naming the loaded ranges) from data, and
    the loader uses them to skip ranges already loaded with the pinned version.
    """

    start = models.DateField(verbose_name="开始")
    end = models.DateField(verbose_name="结束")
    source = models.CharField(verbose_name="数据来源", max_length=32)
    source_version = models.CharField(verbose_name="数据版本", max_length=16)
    sect = models.SmallIntegerField(verbose_name="流派")
    loaded_at = models.DateTimeField(verbose_name="载入时间")

    class Meta:
        verbose_name = "黄历已载入范围"
        verbose_name_plural = "黄历已载入范围"
        ordering = ["start"]
        constraints = [
            models.CheckConstraint(condition=models.Q(end__gte=models.F("start")), name="almanac_range_ordered"),
        ]

    def __str__(self) -> str:
        return f"{self.start}..{self.end} ({self.source} {self.source_version} sect={self.sect})"
