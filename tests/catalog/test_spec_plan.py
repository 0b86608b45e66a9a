"""The spec builder's plan (pure) and its application: create / keep / rename / revive / deactivate,
a SKU never deleted, a renamed value keeping its SKU, price asked only when something is created."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import PermissionDenied

from apps.catalog import sku_matrix
from apps.catalog.models import Product, Sku
from apps.catalog.spec_plan import OldSku, spec_plan, spec_tree_clean, tree_of_skus
from starmall.errors import InvalidInput


def spec(name, *values, was=...):
    """A spec of the editor's tree; values "new<-old" were renamed, "+v" are added."""
    items = []
    for v in values:
        if v.startswith("+"):
            items.append({"value": v[1:], "was": None})
        elif "<-" in v:
            new, old = v.split("<-")
            items.append({"value": new, "was": old})
        else:
            items.append({"value": v, "was": v})
    return {"name": name, "was": name if was is ... else was, "values": items}


MUGS = [
    OldSku(1, {"颜色": "天青", "容量": "60ml"}),
    OldSku(2, {"颜色": "月白", "容量": "60ml"}),
]


def test_unchanged_tree_keeps_every_sku():
    plan = spec_plan(MUGS, [spec("颜色", "天青", "月白"), spec("容量", "60ml")])
    assert (plan.keep, plan.rename, plan.create, plan.deactivate, plan.changes) == ([1, 2], [], [], [], False)
    assert plan.tree == [{"name": "颜色", "values": ["天青", "月白"]}, {"name": "容量", "values": ["60ml"]}]


def test_a_renamed_value_keeps_its_sku_and_a_new_value_creates_combinations():
    plan = spec_plan(MUGS, [spec("颜色", "天青", "雾白<-月白"), spec("容量", "60ml", "+120ml")])
    assert plan.keep == [1]
    assert plan.rename == [(2, {"颜色": "雾白", "容量": "60ml"})]
    assert plan.create == [{"颜色": "天青", "容量": "120ml"}, {"颜色": "雾白", "容量": "120ml"}]
    assert plan.deactivate == []


def test_a_removed_value_switches_its_skus_off_and_reordering_changes_nothing():
    plan = spec_plan(MUGS, [spec("颜色", "月白"), spec("容量", "60ml")])
    assert (plan.keep, plan.deactivate, plan.create) == ([2], [1], [])
    reordered = spec_plan(MUGS, [spec("容量", "60ml"), spec("颜色", "月白", "天青")])
    assert (reordered.keep, reordered.changes) == ([2, 1], False)
    assert reordered.tree[0] == {"name": "容量", "values": ["60ml"]}


def test_a_renamed_spec_name_renames_every_sku():
    plan = spec_plan(MUGS, [{**spec("色彩", "天青", "月白"), "was": "颜色"}, spec("容量", "60ml")])
    assert plan.rename == [(1, {"色彩": "天青", "容量": "60ml"}), (2, {"色彩": "月白", "容量": "60ml"})]


def test_an_added_spec_gives_old_skus_its_first_value():
    plan = spec_plan(MUGS, [spec("颜色", "天青", "月白"), spec("容量", "60ml"), spec("礼盒", "+有", "+无", was=None)])
    assert plan.rename == [
        (1, {"颜色": "天青", "容量": "60ml", "礼盒": "有"}),
        (2, {"颜色": "月白", "容量": "60ml", "礼盒": "有"}),
    ]
    assert plan.create == [
        {"颜色": "天青", "容量": "60ml", "礼盒": "无"},
        {"颜色": "月白", "容量": "60ml", "礼盒": "无"},
    ]


def test_a_removed_spec_collapses_to_the_first_live_sku():
    skus = [
        OldSku(5, {"颜色": "天青", "容量": "60ml"}, is_active=False),
        OldSku(6, {"颜色": "天青", "容量": "120ml"}),
        OldSku(7, {"颜色": "天青", "容量": "150ml"}),
    ]
    plan = spec_plan(skus, [spec("颜色", "天青")])
    assert plan.rename == [(6, {"颜色": "天青"})]
    assert plan.deactivate == [7]  # 5 was off already and stays off


def test_a_value_added_back_revives_its_switched_off_sku():
    skus = [OldSku(1, {"颜色": "天青"}), OldSku(2, {"颜色": "月白"}, is_active=False)]
    plan = spec_plan(skus, [spec("颜色", "天青", "+月白")])
    assert (plan.keep, plan.revive, plan.create) == ([1], [2], [])


def test_a_sku_staff_switched_off_inside_the_tree_stays_off():
    skus = [OldSku(1, {"颜色": "天青"}), OldSku(2, {"颜色": "月白"}, is_active=False)]
    plan = spec_plan(skus, [spec("颜色", "天青", "月白")])
    assert (plan.keep, plan.revive, plan.deactivate) == ([1, 2], [], [])


def test_no_specs_is_one_sku_without_specs():
    assert spec_plan([], []).create == [{}]
    plan = spec_plan([OldSku(3, {})], [])
    assert (plan.keep, plan.create) == ([3], [])


@pytest.mark.parametrize(
    "tree, message",
    [
        ([spec("颜色")], "至少要有一个值"),
        ([spec("颜色", "天青", "天青")], "重复"),
        ([spec("颜色", "天青"), spec("颜色", "月白", was=None)], "规格名「颜色」重复"),
        ([{"name": " ", "values": ["a"]}], "规格名不能为空"),
        ([{"name": "颜色", "values": ["x" * 31]}], "超过 30 字"),
        ([{"name": f"n{i}", "values": ["a", "b"]} for i in range(8)], "规格组合共 256 个，最多 200 个"),
        ("颜色: 天青", "格式不对"),
    ],
)
def test_bad_trees_are_refused_with_the_reason(tree, message):
    with pytest.raises(InvalidInput) as caught:
        spec_tree_clean(tree)
    assert message in caught.value.message


def test_tree_of_skus_reads_live_skus_in_id_order():
    skus = [*MUGS, OldSku(3, {"颜色": "墨黑", "容量": "60ml"}, is_active=False)]
    assert tree_of_skus(skus) == [{"name": "颜色", "values": ["天青", "月白"]}, {"name": "容量", "values": ["60ml"]}]


# --- applied to the database ------------------------------------------------------------------


@pytest.fixture
def editor(django_user_model):
    user = django_user_model.objects.create_user("editor", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="catalog", codename__in=["change_product", "add_sku"])
    )
    return django_user_model.objects.get(pk=user.pk)


@pytest.mark.django_db
def test_apply_renames_creates_and_switches_off_never_deleting(editor, make_sku):
    first = make_sku(price_fen=12800, stock=7, specs={"颜色": "天青", "容量": "60ml"})
    product = first.product
    second = Sku.objects.create(product=product, specs={"颜色": "月白", "容量": "60ml"}, price_fen=13000, stock=2)
    tree = sorted(sku_matrix.spec_tree_of(product), key=lambda s: s["name"] != "颜色")  # jsonb's key order aside
    assert tree[0] == {
        "name": "颜色",
        "was": "颜色",
        "values": [{"value": "天青", "was": "天青"}, {"value": "月白", "was": "月白"}],
    }
    edited = [spec("颜色", "雾白<-天青"), spec("容量", "60ml", "+120ml")]
    plan = sku_matrix.spec_tree_apply(product_id=product.pk, tree=edited, price_fen=9900, user=editor)
    assert (plan.rename, plan.deactivate) == ([(first.pk, {"颜色": "雾白", "容量": "60ml"})], [second.pk])
    rows = {s.pk: (s.specs, s.price_fen, s.stock, s.is_active) for s in Sku.objects.filter(product=product)}
    new = max(rows)
    assert rows == {
        first.pk: ({"颜色": "雾白", "容量": "60ml"}, 12800, 7, True),  # same id, price, stock
        second.pk: ({"颜色": "月白", "容量": "60ml"}, 13000, 2, False),  # off, not deleted
        new: ({"颜色": "雾白", "容量": "120ml"}, 9900, 0, True),
    }
    product.refresh_from_db()
    assert product.spec_tree == [{"name": "颜色", "values": ["雾白"]}, {"name": "容量", "values": ["60ml", "120ml"]}]
    again = sku_matrix.spec_tree_apply(
        product_id=product.pk, tree=sku_matrix.spec_tree_of(product), price_fen=None, user=editor
    )
    assert again.changes is False and Sku.objects.filter(product=product).count() == 3


@pytest.mark.django_db
def test_apply_asks_a_price_only_when_creating_and_checks_permissions(editor, make_sku, django_user_model):
    product = make_sku(specs={"颜色": "天青"}).product
    with pytest.raises(InvalidInput, match="将新增 1 个规格组合"):
        sku_matrix.spec_tree_apply(
            product_id=product.pk, tree=[spec("颜色", "天青", "+月白")], price_fen=None, user=editor
        )
    assert Sku.objects.filter(product=product).count() == 1 and Product.objects.get(pk=product.pk).spec_tree == []
    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    with pytest.raises(PermissionDenied):
        sku_matrix.spec_tree_apply(product_id=product.pk, tree=[spec("颜色", "天青")], price_fen=None, user=viewer)


@pytest.mark.django_db
def test_product_detail_lists_live_skus_with_their_picture(client, make_sku, settings):
    first = make_sku(specs={"颜色": "天青"})
    Sku.objects.filter(pk=first.pk).update(image_url="uploads/ab/c.png")
    Sku.objects.create(product=first.product, specs={"颜色": "月白"}, price_fen=100, stock=1, is_active=False)
    skus = client.get(f"/api/v1/products/{first.product_id}").json()["skus"]
    assert [(s["id"], s["image_url"]) for s in skus] == [(first.pk, f"{settings.SITE_URL}/media/uploads/ab/c.png")]


@pytest.mark.django_db
def test_a_sku_edited_outside_the_builder_stays_live_on_the_next_save(editor, make_sku):
    sku = make_sku(specs={"颜色": "天青"})
    product = sku.product
    Product.objects.filter(pk=product.pk).update(spec_tree=[{"name": "颜色", "values": ["天青"]}])
    Sku.objects.filter(pk=sku.pk).update(specs={"颜色": "湖蓝"})  # on the SKU's own page
    product.refresh_from_db()
    tree = sku_matrix.spec_tree_of(product)
    assert [v["value"] for v in tree[0]["values"]] == ["天青", "湖蓝"]
    plan = sku_matrix.spec_tree_apply(product_id=product.pk, tree=tree, price_fen=100, user=editor)
    assert Sku.objects.get(pk=sku.pk).is_active is True and plan.deactivate == []
