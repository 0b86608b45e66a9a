// 秒杀 / 拼团 / 砍价: after a product is chosen (the admin's autocomplete, select2), the SKU
// select [data-sku-picker] is filled with that product's live SKUs from ../sku-options/?product=<id>
// (JSON {"skus": [{"id", "label"}]}). No library of its own; select2 reports its change through
// django.jQuery, so both that and a plain "change" are listened to.
(function () {
  "use strict";

  function fill(select, skus, message) {
    var keep = select.value;
    select.textContent = "";
    var first = document.createElement("option");
    first.value = "";
    first.textContent = message || (skus.length ? "请选择规格" : "该商品没有启用的规格");
    select.appendChild(first);
    skus.forEach(function (sku) {
      var option = document.createElement("option");
      option.value = String(sku.id);
      option.textContent = sku.label;
      if (option.value === keep) { option.selected = true; }
      select.appendChild(option);
    });
  }

  function load(select, productId) {
    if (!productId) { fill(select, [], "请先选择商品"); return; }
    fill(select, [], "正在读取规格…");
    fetch("../sku-options/?product=" + encodeURIComponent(productId), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.json().then(function (body) { return { ok: response.ok, body: body }; }); })
      .then(function (answer) { fill(select, answer.ok ? answer.body.skus : [], answer.ok ? "" : answer.body.message); })
      .catch(function () { fill(select, [], "读取规格失败，请重试"); });
  }

  function start() {
    var select = document.querySelector("select[data-sku-picker]");
    var product = document.getElementById("id_product");
    if (!select || !product) { return; }
    var onChange = function () { load(select, product.value); };
    product.addEventListener("change", onChange);
    if (window.django && window.django.jQuery) { window.django.jQuery(product).on("change", onChange); }
    if (product.value && select.options.length <= 1) { onChange(); }
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
