/* The official account's menu editor: up to 3 top buttons of up to 5 sub-buttons, each type's
 * own fields, WeChat's byte limits counted as staff type, add / remove / reorder, and a preview
 * in a phone-shaped frame. It writes WeChat's JSON into the form's textarea; the server checks
 * it again (apps/wechat_official/menus.py) and its errors, keyed "0.name" / "1.sub.2.url", are
 * shown next to their field. Limits, types and labels come from the server (data-config). */
(function () {
  "use strict";
  const encoder = new TextEncoder();
  const bytes = (text) => encoder.encode(text).length;
  const APPID = /^wx[0-9a-f]{16}$/;
  const SUB = "__sub";

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([key, value]) => {
      if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (value !== false && value !== undefined) node.setAttribute(key, value === true ? "" : value);
    });
    (children || []).forEach((child) => child && node.appendChild(child));
    return node;
  }

  function Editor(root) {
    const cfg = JSON.parse(root.dataset.config);
    const form = root.closest("form");
    const textarea = form.querySelector("textarea.menu-editor-json");
    const panel = root.querySelector(".me-panel");
    const bar = root.querySelector(".me-phone-bar");
    const subsBox = root.querySelector(".me-phone-subs");
    const stash = new WeakMap(); // a top button's sub-buttons while it is switched to an action
    let serverErrors = cfg.errors || {};
    const touched = new Set();
    let menu;
    let selected = "0";
    try {
      menu = JSON.parse(textarea.value || "[]");
      if (!Array.isArray(menu)) throw new Error("not a list");
    } catch (error) {
      panel.textContent = "菜单 JSON 无法读取，请展开下方文本框修改后保存。";
      root.closest("form").querySelector(".me-raw").open = true;
      return;
    }

    const itemAt = (path) => {
      const parts = path.split(".");
      const top = menu[Number(parts[0])];
      return parts.length > 1 ? top && (top.sub_button || [])[Number(parts[2])] : top;
    };
    const isTop = (path) => !path.includes(".");

    function fieldError(path, field) {
      const item = itemAt(path);
      const value = ((item && item[field]) || "").trim();
      const label = cfg.labels[field];
      if (!value) return `请填写${label}。`;
      const limit = { name: isTop(path) ? cfg.limits.nameTop : cfg.limits.nameSub, key: cfg.limits.key,
        url: cfg.limits.url, pagepath: cfg.limits.pagepath }[field];
      if (limit && bytes(value) > limit) return `${label}最多 ${limit} 字节（一个汉字 3 字节），现在 ${bytes(value)} 字节。`;
      if (field === "url" && !/^https?:\/\//.test(value)) return "网页链接应以 http:// 或 https:// 开头。";
      if (field === "appid" && !APPID.test(value)) return "小程序 appid 应为 wx 加 16 位小写十六进制字符。";
      return "";
    }

    function showError(path, field) {
      const key = `${path}.${field}`;
      const box = panel.querySelector(`[data-error-for="${key}"]`);
      if (!box) return;
      const live = touched.has(key) ? fieldError(path, field) : "";
      const text = live || (touched.has(key) ? "" : serverErrors[key] || "");
      box.textContent = text;
      box.hidden = !text;
      box.closest(".me-field").classList.toggle("me-invalid", Boolean(text));
    }

    function counter(path, field) {
      const limit = field === "name" ? (isTop(path) ? cfg.limits.nameTop : cfg.limits.nameSub) : cfg.limits[field];
      const node = panel.querySelector(`[data-count-for="${path}.${field}"]`);
      if (!node || !limit) return;
      const used = bytes(((itemAt(path) || {})[field] || "").trim());
      node.textContent = `${used}/${limit} 字节`;
      node.classList.toggle("me-over", used > limit);
    }

    function write() {
      textarea.value = JSON.stringify(menu, null, 1);
      preview();
    }

    function structural() {
      serverErrors = {}; // paths moved: the server's errors no longer point at the right field
      touched.clear();
      write();
      render();
    }

    function input(path, field, type) {
      const key = `${path}.${field}`;
      return el("label", { class: "me-field" }, [
        el("span", { class: "me-label", text: cfg.labels[field] }),
        el("input", {
          type: type || "text", value: (itemAt(path) || {})[field] || "", "data-field": key,
          class: "me-input", autocomplete: "off",
          oninput: (event) => {
            itemAt(path)[field] = event.target.value;
            touched.add(key);
            counter(path, field);
            showError(path, field);
            write();
          },
          onfocus: () => select(path, false),
        }),
        el("span", { class: "me-count", "data-count-for": key }),
        el("span", { class: "me-error", "data-error-for": key, role: "alert", hidden: true }),
      ]);
    }

    function typeSelect(path, allowSub) {
      const item = itemAt(path);
      const current = allowSub && item.sub_button && item.sub_button.length ? SUB : item.type || "";
      const options = [el("option", { value: "", text: "请选择", disabled: true, selected: !current })];
      if (allowSub) options.push(el("option", { value: SUB, text: "展开子菜单", selected: current === SUB }));
      Object.entries(cfg.types).forEach(([kind, spec]) => {
        options.push(el("option", { value: kind, text: spec.label, selected: current === kind }));
      });
      return el("label", { class: "me-field" }, [
        el("span", { class: "me-label", text: "类型" }),
        el("select", { class: "me-input", "data-field": `${path}.type`, onchange: (event) => retype(path, event.target.value) }, options),
        el("span", { class: "me-error", "data-error-for": `${path}.type`, role: "alert", hidden: true }),
      ]);
    }

    function retype(path, kind) {
      const item = itemAt(path);
      Object.keys(item).forEach((key) => key !== "name" && key !== "sub_button" && delete item[key]);
      if (kind === SUB) {
        item.sub_button = stash.get(item) || [{ name: "", type: "click", key: "" }];
      } else {
        if (item.sub_button && item.sub_button.length) stash.set(item, item.sub_button);
        delete item.sub_button;
        item.type = kind;
        cfg.types[kind].fields.forEach((field) => (item[field] = ""));
      }
      structural();
    }

    function tools(list, index, path) {
      const move = (by) => () => {
        const [item] = list.splice(index, 1);
        list.splice(index + by, 0, item);
        selected = path.replace(/\d+$/, String(index + by));
        structural();
      };
      return el("span", { class: "me-tools" }, [
        el("button", { type: "button", class: "me-tool", title: "上移", "aria-label": "上移", text: "↑", disabled: index === 0, onclick: move(-1) }),
        el("button", { type: "button", class: "me-tool", title: "下移", "aria-label": "下移", text: "↓", disabled: index === list.length - 1, onclick: move(1) }),
        el("button", { type: "button", class: "me-tool me-remove", text: "删除", onclick: () => {
          list.splice(index, 1);
          selected = isTop(path) ? "0" : path.split(".")[0];
          structural();
        } }),
      ]);
    }

    function fields(path, node) {
      const item = itemAt(path);
      if (!item.type || !cfg.types[item.type]) return;
      cfg.types[item.type].fields.forEach((field) => node.appendChild(input(path, field, field === "url" ? "url" : "text")));
    }

    function subCard(i, j) {
      const path = `${i}.sub.${j}`;
      const card = el("div", { class: "me-card me-sub", "data-path": path }, [
        el("div", { class: "me-card-head" }, [el("strong", { text: `子菜单 ${j + 1}` }), tools(menu[i].sub_button, j, path)]),
        input(path, "name"),
        typeSelect(path, false),
      ]);
      fields(path, card);
      return card;
    }

    function topCard(i) {
      const path = String(i);
      const item = menu[i];
      const card = el("section", { class: "me-card me-top", "data-path": path }, [
        el("div", { class: "me-card-head" }, [el("strong", { text: `一级菜单 ${i + 1}` }), tools(menu, i, path)]),
        input(path, "name"),
        typeSelect(path, true),
      ]);
      if (item.sub_button && item.sub_button.length) {
        item.sub_button.forEach((_, j) => card.appendChild(subCard(i, j)));
        card.appendChild(el("span", { class: "me-error", "data-error-for": `${path}.sub`, role: "alert", hidden: true }));
        card.appendChild(el("button", {
          type: "button", class: "me-add", text: `＋ 添加子菜单（${item.sub_button.length}/${cfg.limits.sub}）`,
          disabled: item.sub_button.length >= cfg.limits.sub,
          onclick: () => {
            item.sub_button.push({ name: "", type: "click", key: "" });
            selected = `${i}.sub.${item.sub_button.length - 1}`;
            structural();
          },
        }));
      } else {
        fields(path, card);
      }
      return card;
    }

    function render() {
      panel.replaceChildren();
      if (serverErrors.menu) panel.appendChild(el("p", { class: "me-error", role: "alert", text: serverErrors.menu }));
      menu.forEach((_, i) => panel.appendChild(topCard(i)));
      panel.appendChild(el("button", {
        type: "button", class: "me-add me-add-top", text: `＋ 添加一级菜单（${menu.length}/${cfg.limits.top}）`,
        disabled: menu.length >= cfg.limits.top,
        onclick: () => {
          menu.push({ name: "", type: "click", key: "" });
          selected = String(menu.length - 1);
          structural();
        },
      }));
      panel.querySelectorAll("[data-field]").forEach((node) => {
        const key = node.dataset.field;
        const cut = key.lastIndexOf(".");
        counter(key.slice(0, cut), key.slice(cut + 1));
        showError(key.slice(0, cut), key.slice(cut + 1));
      });
      panel.querySelectorAll("[data-error-for$='.sub']").forEach((box) => {
        box.textContent = serverErrors[box.dataset.errorFor] || "";
        box.hidden = !box.textContent;
      });
      select(selected, false);
    }

    function select(path, focus) {
      selected = path;
      panel.querySelectorAll(".me-card").forEach((card) => card.classList.toggle("me-selected", card.dataset.path === path));
      if (focus) {
        const card = panel.querySelector(`.me-card[data-path="${path}"]`);
        if (card) {
          card.scrollIntoView({ block: "nearest" });
          card.querySelector("input").focus({ preventScroll: true });
        }
      }
      preview();
    }

    function preview() {
      bar.replaceChildren(el("span", { class: "me-kbd", "aria-hidden": "true", text: "⌨" }));
      const open = selected.split(".")[0];
      menu.forEach((item, i) => {
        const hasSubs = item.sub_button && item.sub_button.length;
        bar.appendChild(el("button", {
          type: "button", class: `me-phone-button${String(i) === open ? " me-on" : ""}`,
          text: `${hasSubs ? "≡ " : ""}${(item.name || "").trim() || "（未命名）"}`, onclick: () => select(String(i), true),
        }));
      });
      const top = menu[Number(open)];
      const subs = (top && top.sub_button) || [];
      subsBox.replaceChildren(...subs.map((sub, j) => el("button", {
        type: "button", class: `me-phone-sub${selected === `${open}.sub.${j}` ? " me-on" : ""}`,
        text: (sub.name || "").trim() || "（未命名）", onclick: () => select(`${open}.sub.${j}`, true),
      })));
      subsBox.hidden = !subs.length;
      if (subs.length) {
        const n = Math.max(menu.length, 1); // the bar: a 36 px keyboard key, then n equal buttons
        subsBox.style.width = `calc((100% - 36px) / ${n} - 8px)`;
        subsBox.style.left = `calc(36px + (100% - 36px) * ${Number(open)} / ${n} + 4px)`;
      }
    }

    if (!menu.length) menu.push({ name: "", type: "click", key: "" });
    textarea.value = JSON.stringify(menu, null, 1);
    render();
  }

  document.addEventListener("DOMContentLoaded", () => document.querySelectorAll(".menu-editor").forEach(Editor));
})();
