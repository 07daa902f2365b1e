// Keyboard triage (every page works without it; nothing here writes without a confirmation).
// Queue: j / k next / previous, o open, x select, a accept, r reject (the reason box), / filter.
// Proposal: a accept, r reject, e edit, j / k next / previous, u back to the queue.
// Confirmation: Enter confirms (the button has the focus), Escape cancels.
(function () {
  "use strict";
  function typing(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT");
  }
  function $(sel) { return document.querySelector(sel); }
  function follow(sel) { var a = $(sel); if (a) { a.click(); return true; } return false; }

  document.addEventListener("DOMContentLoaded", function () {
    // Before the load event, so a key pressed as soon as the page shows reaches it.
    var target = $("[data-focus]") || $("[autofocus]");
    if (target) {
      var link = target.querySelector ? target.querySelector("a.open") : null;
      (link || target).focus();
    }
  });

  function rows() { return Array.prototype.slice.call(document.querySelectorAll("ol.queue > li")); }
  function currentRow() {
    var el = document.activeElement;
    return el && el.closest ? el.closest("ol.queue > li") : null;
  }
  function chooseCurrent() {
    var here = currentRow();
    var picked = document.querySelectorAll("ol.queue input.select:checked").length;
    if (!picked && here) { var box = here.querySelector("input.select"); if (box) { box.checked = true; } }
    var scope = $("input[name=scope][value=selected]");
    if (scope) { scope.checked = true; }
  }

  function queueKey(ev) {
    var list = rows();
    var here = currentRow();
    var i = list.indexOf(here);
    if ((ev.key === "j" || ev.key === "k") && list.length) {
      var next = ev.key === "j" ? Math.min(i + 1, list.length - 1) : Math.max(i - 1, 0);
      if (i < 0) { next = 0; }
      list[next].querySelector("a.open").focus();
    } else if (ev.key === "o" && here) {
      here.querySelector("a.open").click();
    } else if (ev.key === "x" && here) {
      var box = here.querySelector("input.select");
      if (box) { box.checked = !box.checked; }
    } else if (ev.key === "a") {
      chooseCurrent();
      if (!follow("#decide button.accept")) { return false; }
    } else if (ev.key === "r") {
      chooseCurrent();
      var reason = $("#reason");
      if (!reason) { return false; }
      reason.focus();
    } else if (ev.key === "/") {
      $("#f-q").focus();
    } else { return false; }
    return true;
  }

  function proposalKey(ev) {
    if (ev.key === "a") { return follow("#accept"); }
    if (ev.key === "r") { var r = $("#reason"); if (r) { r.focus(); return true; } return false; }
    if (ev.key === "e") {
      var d = $("details"); var c = $("#content");
      if (d && c) { d.open = true; c.focus(); return true; }
      return false;
    }
    if (ev.key === "j") { return follow("a[rel=next]"); }
    if (ev.key === "k") { return follow("a[rel=prev]"); }
    if (ev.key === "u") { return follow("#to-queue"); }
    return false;
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && $("#cancel")) { $("#cancel").click(); ev.preventDefault(); return; }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(document.activeElement)) { return; }
    var handled = false;
    if ($("ol.queue")) { handled = queueKey(ev); } else if ($("article.proposal-page")) { handled = proposalKey(ev); }
    if (handled) { ev.preventDefault(); }
  });
})();
