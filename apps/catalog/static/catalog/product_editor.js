// The product editor's gallery: drag thumbnails to reorder, × to remove; the hidden JSON list
// (the form's "images" field) is rewritten after each change. No library.
(function () {
  function sync(list) {
    var input = document.getElementById(list.getAttribute("data-gallery-for"));
    if (!input) { return; }
    var names = Array.prototype.map.call(list.querySelectorAll(".bo-thumb"), function (li) { return li.getAttribute("data-name"); });
    input.value = JSON.stringify(names);
  }
  function init(list) {
    var dragged = null;
    list.addEventListener("dragstart", function (e) { dragged = e.target.closest(".bo-thumb"); if (dragged) { dragged.classList.add("bo-dragging"); } });
    list.addEventListener("dragend", function () { if (dragged) { dragged.classList.remove("bo-dragging"); } dragged = null; sync(list); });
    list.addEventListener("dragover", function (e) {
      e.preventDefault();
      var over = e.target.closest(".bo-thumb");
      if (!dragged || !over || over === dragged) { return; }
      var box = over.getBoundingClientRect();
      list.insertBefore(dragged, (e.clientX - box.left) > box.width / 2 ? over.nextSibling : over);
    });
    list.addEventListener("click", function (e) {
      if (e.target.classList.contains("bo-thumb-remove")) { e.target.closest(".bo-thumb").remove(); sync(list); }
    });
  }
  function start() { Array.prototype.forEach.call(document.querySelectorAll(".bo-gallery"), init); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
