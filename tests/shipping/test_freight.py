"""Freight calculator: worked examples in fen, each checked by hand in its docstring.

Pure unit tests of ``apps.shipping.calculator.freight_quote`` (no database): the terms are built
here as staff would set them in the admin. The rule (CRMEB's): per template its units; free
templates drop out; the template with the highest first fee pays that fee once (plus its extra
fee per started extra unit beyond its first units); every other template pays only its extra
fee, per started extra unit of ALL its units; on a tie the highest total is charged.
"""

from apps.shipping.calculator import FreeTerms, FreightLine, RegionTerms, TemplateTerms, freight_quote

XJ, XZ, GD, ZJ, JS, SH = "新疆维吾尔自治区", "西藏自治区", "广东省", "浙江省", "江苏省", "上海市"

# By piece: first piece 10.00 yuan, each further piece 2.00. 新疆/西藏: 25.00 + 10.00 a piece.
# 广东: 12.00 + 3.00; but 深圳 (a city of 广东): 8.00 + 1.00.
PIECES = TemplateTerms(
    id=1,
    mode="piece",
    first_unit=1,
    first_fee_fen=1000,
    extra_unit=1,
    extra_fee_fen=200,
    regions=(
        RegionTerms(provinces=frozenset({XJ, XZ}), cities=frozenset(), first_fee_fen=2500, extra_fee_fen=1000),
        RegionTerms(provinces=frozenset({GD}), cities=frozenset(), first_fee_fen=1200, extra_fee_fen=300),
        RegionTerms(provinces=frozenset({GD}), cities=frozenset({"深圳"}), first_fee_fen=800, extra_fee_fen=100),
    ),
)
# By weight: first 1000 g 12.00 yuan, each started 500 g 3.00. 新疆/西藏: 30.00 + 10.00 per 500 g.
HEAVY = TemplateTerms(
    id=2,
    mode="weight",
    first_unit=1000,
    first_fee_fen=1200,
    extra_unit=500,
    extra_fee_fen=300,
    regions=(RegionTerms(provinces=frozenset({XJ, XZ}), cities=frozenset(), first_fee_fen=3000, extra_fee_fen=1000),),
)
# By volume: first 10000 cm³ 10.00 yuan, each started 5000 cm³ 4.00.
BULKY = TemplateTerms(id=3, mode="volume", first_unit=10000, first_fee_fen=1000, extra_unit=5000, extra_fee_fen=400)


def line(template, quantity, *, weight_g=0, volume_cm3=0, price_fen=1000):
    return FreightLine(
        template=template, quantity=quantity, weight_g=weight_g, volume_cm3=volume_cm3, amount_fen=price_fen * quantity
    )


def test_freight_by_piece_first_piece_then_extra_pieces():
    """浙江 has no region rule: the template's own fees.
    1 piece: 1000. 3 pieces: 1000 + (3 - 1) x 200 = 1400."""
    assert freight_quote([line(PIECES, 1)], ZJ, "杭州市") == 1000
    assert freight_quote([line(PIECES, 3)], ZJ, "杭州市") == 1400


def test_freight_remote_provinces_pay_their_region_fees():
    """新疆 and 西藏 (full or short name): 2500 + (3 - 1) x 1000 = 4500; 广东 (no city rule for
    广州): 1200 + 2 x 300 = 1800 — against 1400 for 浙江."""
    assert freight_quote([line(PIECES, 3)], XJ, "乌鲁木齐市") == 4500
    assert freight_quote([line(PIECES, 3)], "新疆", "乌鲁木齐") == 4500
    assert freight_quote([line(PIECES, 3)], XZ, "拉萨市") == 4500
    assert freight_quote([line(PIECES, 3)], GD, "广州市") == 1800


def test_freight_a_city_rule_beats_its_province_rule():
    """深圳 (广东省): the city rule 800 + 2 x 100 = 1000, not 广东's 1800; '深圳' without 市 too."""
    assert freight_quote([line(PIECES, 3)], GD, "深圳市") == 1000
    assert freight_quote([line(PIECES, 3)], "广东", "深圳") == 1000


def test_freight_by_weight_rounds_up_to_whole_extra_units():
    """HEAVY: first 1000 g 1200, each STARTED 500 g 300.
    1000 g: 1200. 1001 g: 1200 + ceil(1/500) = 1 x 300 = 1500. 1500 g: 1200 + 1 x 300 = 1500.
    1501 g: 1200 + ceil(501/500) = 2 x 300 = 1800.
    2 x 1800 g = 3600 g: 1200 + ceil(2600/500) = ceil(5.2) = 6 x 300 = 3000.
    Same to 新疆: 3000 + 6 x 1000 = 9000."""
    assert freight_quote([line(HEAVY, 1, weight_g=1000)], ZJ, "杭州市") == 1200
    assert freight_quote([line(HEAVY, 1, weight_g=1001)], ZJ, "杭州市") == 1500
    assert freight_quote([line(HEAVY, 1, weight_g=1500)], ZJ, "杭州市") == 1500
    assert freight_quote([line(HEAVY, 1, weight_g=1501)], ZJ, "杭州市") == 1800
    assert freight_quote([line(HEAVY, 2, weight_g=1800)], ZJ, "杭州市") == 3000
    assert freight_quote([line(HEAVY, 2, weight_g=1800)], XJ, "喀什地区") == 9000


def test_freight_by_volume():
    """BULKY: 3 x 6000 cm³ = 18000 cm³: 1000 + ceil(8000/5000) = 2 x 400 = 1800.
    An SKU without a weight in a weight template (0 g): the first fee only, 1200."""
    assert freight_quote([line(BULKY, 3, volume_cm3=6000)], ZJ, "杭州市") == 1800
    assert freight_quote([line(HEAVY, 4, weight_g=0)], ZJ, "杭州市") == 1200


def test_freight_lines_of_one_template_are_summed_before_charging():
    """Two SKUs of PIECES (2 + 1 pieces) are one group of 3 pieces: 1000 + 2 x 200 = 1400, not
    two first fees (1000 + 200 + 1000 = 2200). Two HEAVY SKUs, 1 x 800 g + 1 x 700 g = 1500 g:
    1200 + ceil(500/500) x 300 = 1500."""
    assert freight_quote([line(PIECES, 2), line(PIECES, 1)], ZJ, "杭州市") == 1400
    assert freight_quote([line(HEAVY, 1, weight_g=800), line(HEAVY, 1, weight_g=700)], ZJ, "杭州市") == 1500


def test_freight_several_templates_the_highest_first_fee_is_paid_once():
    """2 pieces of PIECES and 2 x 1800 g of HEAVY to 浙江:
    first fees: PIECES 1000, HEAVY 1200 -> HEAVY pays its first fee:
      HEAVY: 1200 + ceil((3600 - 1000)/500) = 6 x 300 = 1200 + 1800 = 3000
      PIECES, extra only, all its units: ceil(2/1) = 2 x 200 = 400
      total 3400.
    To 新疆 (both have region rules): first fees PIECES 2500, HEAVY 3000 -> HEAVY pays it:
      HEAVY: 3000 + 6 x 1000 = 9000; PIECES: 2 x 1000 = 2000; total 11000.
    To 深圳 (city rule for PIECES only): first fees 800 vs 1200 -> HEAVY: 3000; PIECES: 2 x 100 = 200;
      total 3200.
    Adding 3 x 6000 cm³ of BULKY (first 1000 < 1200) in 浙江: + ceil(18000/5000) = 4 x 400 = 1600 -> 5000."""
    lines = [line(PIECES, 2), line(HEAVY, 2, weight_g=1800)]
    assert freight_quote(lines, ZJ, "杭州市") == 3400
    assert freight_quote(lines, XJ, "乌鲁木齐市") == 11000
    assert freight_quote(lines, GD, "深圳市") == 3200
    assert freight_quote(lines + [line(BULKY, 3, volume_cm3=6000)], ZJ, "杭州市") == 5000


def test_freight_tie_on_the_first_fee_charges_the_higher_total():
    """A and B both have first fee 1000; 3 pieces of each.
    A pays first: A 1000 + (3-1) x 200 = 1400; B extra only: ceil(3/2) = 2 x 500 = 1000 -> 2400.
    B pays first: B 1000 + ceil((3-1)/2) = 1 x 500 = 1500; A extra only: 3 x 200 = 600 -> 2100.
    Charged: max(2400, 2100) = 2400, in either order of the lines."""
    a = TemplateTerms(id=10, mode="piece", first_unit=1, first_fee_fen=1000, extra_unit=1, extra_fee_fen=200)
    b = TemplateTerms(id=11, mode="piece", first_unit=1, first_fee_fen=1000, extra_unit=2, extra_fee_fen=500)
    assert freight_quote([line(a, 3), line(b, 3)], ZJ, "杭州市") == 2400
    assert freight_quote([line(b, 3), line(a, 3)], ZJ, "杭州市") == 2400


def test_freight_free_above_an_amount_per_region():
    """PIECES + free in 浙江/江苏/上海 from 5000 fen of its goods (no free rule elsewhere).
    浙江, 3 x 2000 = 6000 >= 5000: 0. 浙江, 2 x 2000 = 4000 < 5000: 1000 + 1 x 200 = 1200.
    新疆, 6000: the rule does not cover 新疆: 2500 + 2 x 1000 = 4500."""
    free = TemplateTerms(
        **{
            **_fields(PIECES),
            "free": (FreeTerms(provinces=frozenset({ZJ, JS, SH}), cities=frozenset(), min_amount_fen=5000),),
        }
    )
    assert freight_quote([line(free, 3, price_fen=2000)], ZJ, "杭州市") == 0
    assert freight_quote([line(free, 2, price_fen=2000)], ZJ, "杭州市") == 1200
    assert freight_quote([line(free, 3, price_fen=2000)], XJ, "乌鲁木齐市") == 4500


def test_freight_free_from_a_count_and_from_both_thresholds():
    """Free everywhere from 3 pieces: 3 pieces 0; 2 pieces 1000 + 200 = 1200.
    A rule with both 5000 fen and 2 pieces needs both: 1 x 6000 (1 piece): 1000; 2 x 3000: 0."""
    by_count = TemplateTerms(
        **{
            **_fields(PIECES),
            "regions": (),
            "free": (FreeTerms(provinces=frozenset(), cities=frozenset(), min_count=3),),
        }
    )
    assert freight_quote([line(by_count, 3)], ZJ, "杭州市") == 0
    assert freight_quote([line(by_count, 2)], ZJ, "杭州市") == 1200
    both = TemplateTerms(
        **{
            **_fields(PIECES),
            "regions": (),
            "free": (FreeTerms(provinces=frozenset(), cities=frozenset(), min_amount_fen=5000, min_count=2),),
        }
    )
    assert freight_quote([line(both, 1, price_fen=6000)], ZJ, "杭州市") == 1000
    assert freight_quote([line(both, 2, price_fen=3000)], ZJ, "杭州市") == 0


def test_freight_a_free_template_drops_out_and_the_next_highest_first_fee_pays():
    """HEAVY free in 浙江 from 50000 fen. 2 x 1800 g at 30000 (60000 fen) + 2 pieces of PIECES:
    HEAVY free (0); PIECES is now the only charged group, so it pays its first fee:
    1000 + 1 x 200 = 1200 (not 3400 as without the free rule). In 新疆 the rule does not
    apply: 11000 as in the several-templates example."""
    heavy_free = TemplateTerms(
        **{**_fields(HEAVY), "free": (FreeTerms(provinces=frozenset({ZJ}), cities=frozenset(), min_amount_fen=50000),)}
    )
    lines = [line(PIECES, 2), line(heavy_free, 2, weight_g=1800, price_fen=30000)]
    assert freight_quote(lines, ZJ, "杭州市") == 1200
    assert freight_quote(lines, XJ, "乌鲁木齐市") == 11000


def test_freight_free_rule_limited_to_a_city():
    """Free only in 杭州 (浙江) from 1 piece: 杭州 0; 宁波 (浙江) 1000."""
    city_free = TemplateTerms(
        **{**_fields(PIECES), "free": (FreeTerms(provinces=frozenset({ZJ}), cities=frozenset({"杭州"}), min_count=1),)}
    )
    assert freight_quote([line(city_free, 1)], ZJ, "杭州市") == 0
    assert freight_quote([line(city_free, 1)], ZJ, "宁波市") == 1000


def test_freight_nothing_to_charge():
    """No lines, or lines without any template (a shop without a default template): 0."""
    assert freight_quote([], ZJ, "杭州市") == 0
    assert freight_quote([FreightLine(template=None, quantity=2, amount_fen=100)], ZJ, "杭州市") == 0


def test_freight_the_migrated_default_is_the_old_flat_rule():
    """The data migration's default (by piece 1000 + 0 per further piece, free from 9900) is the
    removed FREIGHT_FEN=1000 / FREE_FREIGHT_MIN_FEN=9900: 1 or 5 pieces under 99 yuan: 1000;
    9900 fen or more: 0."""
    flat = TemplateTerms(
        id=1,
        mode="piece",
        first_unit=1,
        first_fee_fen=1000,
        extra_unit=1,
        extra_fee_fen=0,
        free=(FreeTerms(provinces=frozenset(), cities=frozenset(), min_amount_fen=9900),),
    )
    assert freight_quote([line(flat, 1, price_fen=3600)], XJ, "乌鲁木齐市") == 1000
    assert freight_quote([line(flat, 5, price_fen=1000)], ZJ, "杭州市") == 1000
    assert freight_quote([line(flat, 1, price_fen=9899)], ZJ, "杭州市") == 1000
    assert freight_quote([line(flat, 1, price_fen=9900)], ZJ, "杭州市") == 0


def _fields(terms: TemplateTerms) -> dict:
    return {name: getattr(terms, name) for name in terms.__dataclass_fields__}
