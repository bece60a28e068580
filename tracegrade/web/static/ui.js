// tracegrade ui: the waterfall's click-to-show details. No HTML is built here: the details
// are rendered (escaped) by the server and only shown or hidden.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".wf-row[data-detail]").forEach(function (row) {
    row.addEventListener("click", function () {
      var detail = document.getElementById(row.getAttribute("data-detail"));
      if (!detail) { return; }
      detail.hidden = !detail.hidden;
      row.classList.toggle("open", !detail.hidden);
    });
  });
});
// The case editor: an argument key offers the keys seen for the call's tool.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".call-block").forEach(function (block) {
    var name = block.querySelector(".call-name");
    if (!name) { return; }
    name.addEventListener("change", function () {
      var list = document.getElementById("keys-" + name.value) ? "keys-" + name.value : "keys-_all";
      block.querySelectorAll(".arg-key").forEach(function (key) { key.setAttribute("list", list); });
    });
  });
});
