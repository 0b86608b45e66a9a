// The product editor's spec builder and SKU-matrix batch fill. No library, no build step.
//
// Builder: the hidden input [data-spec-input] holds the tree as JSON,
//   [{"name", "was", "values": [{"value", "was"}]}]  ("was": the name/value when the page opened, null = new);
// the box #spec-builder draws it: spec names and their values (rename in place, ← → to reorder,
// × to remove, a box to add values — "天青, 月白" adds two), ↑ ↓ / 删除规格 per spec, 添加规格.
// The server (apps.catalog.spec_plan) turns it into create / rename / switch-off of SKUs.
//
// Batch fill: a bar above the SKU table fills 价格 / 会员价 / 重量 and a target stock (written as
// 库存增减 = target − current stock: the server adds it relatively) into all or the ticked rows.
(function () {
  "use strict";

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function button(label, cls, title) {
    return el("button", { type: "button", "class": "bo-spec-btn " + cls, title: title || label, "aria-label": title || label }, label);
  }

  function splitValues(text) {
    return text.split(/[,，、;；]+/).map(function (v) { return v.trim(); }).filter(function (v) { return v; });
  }

  function move(list, index, step) {
    var to = index + step;
    if (to < 0 || to >= list.length) { return; }
    var item = list.splice(index, 1)[0];
    list.splice(to, 0, item);
  }

  function Builder(box, input) {
    this.box = box;
    this.input = input;
    try { this.tree = JSON.parse(input.value || "[]"); } catch (e) { this.tree = []; }
    if (!Array.isArray(this.tree)) { this.tree = []; }
    this.render();
  }

  Builder.prototype.sync = function () {
    this.input.value = JSON.stringify(this.tree);
    var total = this.tree.length ? 1 : 0;
    this.tree.forEach(function (spec) { total *= spec.values.length; });
    var summary = this.box.querySelector(".bo-spec-summary");
    if (summary) {
      summary.textContent = this.tree.length ? "共 " + total + " 个规格组合；保存后生成新组合的 SKU，删去的组合停用（不删除）。" : "无规格：商品只有一个 SKU。";
    }
  };

  Builder.prototype.render = function () {
    var self = this;
    this.box.textContent = "";
    this.tree.forEach(function (spec, i) { self.box.appendChild(self.renderSpec(spec, i)); });
    var add = button("+ 添加规格", "bo-spec-add-name");
    add.addEventListener("click", function () {
      self.tree.push({ name: "", was: null, values: [] });
      self.render();
      var names = self.box.querySelectorAll(".bo-spec-name");
      if (names.length) { names[names.length - 1].focus(); }
    });
    this.box.appendChild(add);
    this.box.appendChild(el("p", { "class": "bo-spec-summary bo-muted" }));
    this.sync();
  };

  Builder.prototype.renderSpec = function (spec, i) {
    var self = this;
    var card = el("div", { "class": "bo-spec", "data-spec": String(i) });
    var head = el("div", { "class": "bo-spec-head" });
    var name = el("input", { type: "text", "class": "bo-spec-name", maxlength: "20", placeholder: "规格名，如 颜色", "aria-label": "规格名" });
    name.value = spec.name;
    name.addEventListener("input", function () { spec.name = name.value; self.sync(); });
    head.appendChild(name);
    [["↑", "bo-spec-up", "上移规格", -1], ["↓", "bo-spec-down", "下移规格", 1]].forEach(function (b) {
      var btn = button(b[0], b[1], b[2]);
      btn.addEventListener("click", function () { move(self.tree, i, b[3]); self.render(); });
      head.appendChild(btn);
    });
    var remove = button("删除规格", "bo-spec-remove");
    remove.addEventListener("click", function () { self.tree.splice(i, 1); self.render(); });
    head.appendChild(remove);
    card.appendChild(head);
    var list = el("ul", { "class": "bo-spec-values" });
    spec.values.forEach(function (value, j) { list.appendChild(self.renderValue(spec, value, j)); });
    card.appendChild(list);
    card.appendChild(this.renderAdd(spec));
    return card;
  };

  Builder.prototype.renderValue = function (spec, value, j) {
    var self = this;
    var item = el("li", { "class": "bo-spec-value" + (value.was === null ? " bo-spec-new" : "") });
    var left = button("←", "bo-spec-left", "左移");
    left.addEventListener("click", function () { move(spec.values, j, -1); self.render(); });
    var text = el("input", { type: "text", "class": "bo-spec-value-input", maxlength: "30", "aria-label": "规格值" });
    text.value = value.value;
    text.size = Math.max(4, value.value.length + 2);
    text.addEventListener("input", function () { value.value = text.value; self.sync(); });
    var right = button("→", "bo-spec-right", "右移");
    right.addEventListener("click", function () { move(spec.values, j, 1); self.render(); });
    var remove = button("×", "bo-spec-value-remove", "删除此值");
    remove.addEventListener("click", function () { spec.values.splice(j, 1); self.render(); });
    [left, text, right, remove].forEach(function (node) { item.appendChild(node); });
    return item;
  };

  Builder.prototype.renderAdd = function (spec) {
    var self = this;
    var wrap = el("div", { "class": "bo-spec-add" });
    var input = el("input", { type: "text", "class": "bo-spec-add-input", placeholder: "添加规格值（可用逗号分隔多个）", "aria-label": "添加规格值" });
    var add = button("添加值", "bo-spec-add-value");
    function commit() {
      var known = spec.values.map(function (v) { return v.value; });
      splitValues(input.value).forEach(function (v) {
        if (known.indexOf(v) < 0) { spec.values.push({ value: v, was: null }); known.push(v); }
      });
      input.value = "";
      self.render();
      var again = self.box.querySelectorAll(".bo-spec-add-input")[self.tree.indexOf(spec)];
      if (again) { again.focus(); }
    }
    add.addEventListener("click", commit);
    input.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); commit(); } });
    wrap.appendChild(input);
    wrap.appendChild(add);
    return wrap;
  };

  // --- batch fill of the SKU matrix -------------------------------------------------------
  var BATCH = [
    ["price_fen", "价格（元）", "text"],
    ["member_price_fen", "会员价（元）", "text"],
    ["stock_target", "库存设为", "number"],
    ["weight_g", "重量（克）", "number"]
  ];

  function rowField(row, name) {
    return row.querySelector("input[name$='-" + name + "']");
  }

  function fillRow(row, values) {
    Object.keys(values).forEach(function (name) {
      if (values[name] === "") { return; }
      if (name === "stock_target") {
        var cell = row.querySelector("td.field-stock");
        var change = rowField(row, "stock_change");
        var current = cell ? parseInt(cell.textContent.replace(/[^0-9-]/g, ""), 10) : NaN;
        if (change && !isNaN(current)) { change.value = String(parseInt(values[name], 10) - current); }
        return;
      }
      var input = rowField(row, name);
      if (input) { input.value = values[name]; }
    });
  }

  function batchBar(group) {
    var rows = Array.prototype.filter.call(group.querySelectorAll("tr.form-row"), function (row) { return rowField(row, "price_fen"); });
    if (!rows.length || group.querySelector(".bo-batch")) { return; }
    var bar = el("div", { "class": "bo-batch", id: "sku-batch" });
    bar.appendChild(el("strong", {}, "批量填写"));
    var inputs = {};
    BATCH.forEach(function (f) {
      var label = el("label", {}, f[1] + " ");
      var input = el("input", { type: f[2], name: "batch-" + f[0], "class": "bo-batch-input", inputmode: f[2] === "number" ? "numeric" : "decimal" });
      if (f[2] === "number") { input.setAttribute("min", "0"); }
      label.appendChild(input);
      bar.appendChild(label);
      inputs[f[0]] = input;
    });
    function apply(onlyPicked) {
      var values = {};
      Object.keys(inputs).forEach(function (k) { values[k] = inputs[k].value.trim(); });
      rows.forEach(function (row) {
        var pick = rowField(row, "pick");
        if (!onlyPicked || (pick && pick.checked)) { fillRow(row, values); }
      });
    }
    var all = button("填入全部", "bo-batch-all");
    all.addEventListener("click", function () { apply(false); });
    var picked = button("填入勾选的行", "bo-batch-picked");
    picked.addEventListener("click", function () { apply(true); });
    bar.appendChild(all);
    bar.appendChild(picked);
    bar.appendChild(el("span", { "class": "bo-muted" }, "空着的项不改；库存按“设为”换算成库存增减，保存时相对执行。"));
    var table = group.querySelector("table");
    (table && table.parentNode ? table.parentNode : group).insertBefore(bar, table || null);
  }

  function start() {
    Array.prototype.forEach.call(document.querySelectorAll(".bo-specs[data-spec-for]"), function (box) {
      var input = document.getElementById(box.getAttribute("data-spec-for"));
      if (input) { box.builder = new Builder(box, input); }
    });
    var group = document.getElementById("skus-group");
    if (group) { batchBar(group); }
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
