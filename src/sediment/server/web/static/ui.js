// Keyboard navigation through the review queue (the page works without it):
// j / k move to the next / previous proposal, x toggles its selection, a accepts it,
// r moves to its reason box to reject it.
(function () {
  "use strict";
  function items() { return Array.prototype.slice.call(document.querySelectorAll("article.proposal")); }
  function current() {
    var el = document.activeElement;
    return el && el.closest ? el.closest("article.proposal") : null;
  }
  function typing(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT");
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(document.activeElement)) { return; }
    var list = items();
    if (!list.length) { return; }
    var here = current();
    var i = list.indexOf(here);
    if (ev.key === "j" || ev.key === "k") {
      var next = ev.key === "j" ? Math.min(i + 1, list.length - 1) : Math.max(i - 1, 0);
      if (i < 0) { next = 0; }
      list[next].focus();
      list[next].scrollIntoView({ block: "start" });
      ev.preventDefault();
    } else if (here && ev.key === "x") {
      var box = here.querySelector("input.select");
      if (box) { box.checked = !box.checked; }
      ev.preventDefault();
    } else if (here && ev.key === "a") {
      var accept = here.querySelector("button.accept");
      if (accept) { accept.click(); }
      ev.preventDefault();
    } else if (here && ev.key === "r") {
      var reason = here.querySelector("textarea");
      if (reason) { reason.focus(); }
      ev.preventDefault();
    }
  });
})();
