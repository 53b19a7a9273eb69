// Keyboard shortcuts for the annotation pages. No model text is ever read or written here: the
// server renders everything; this script only presses the page's own buttons and links.
(function () {
  "use strict";
  var shownAt = performance.now();
  var form = document.getElementById("label-form");
  var submitted = false;
  var labels = { a: "A", b: "B", t: "tie", s: "skip" };

  function press(value) {
    if (!form || submitted) return;
    var button = document.getElementById("press-" + value);
    if (button) form.requestSubmit(button);
  }

  function follow(id) {
    var link = document.getElementById(id);
    if (link) window.location.assign(link.getAttribute("href"));
  }

  if (form) {
    // One label per page view: a second key press while the first is on its way is dropped.
    form.addEventListener("submit", function (event) {
      if (submitted) {
        event.preventDefault();
        return;
      }
      submitted = true;
      document.getElementById("elapsed-ms").value = String(Math.round(performance.now() - shownAt));
    });
  }
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      submitted = false;
      shownAt = performance.now();
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    var target = event.target;
    var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" ||
                            target.tagName === "SELECT" || target.isContentEditable);
    if (typing) {
      if (event.key === "Escape") target.blur();
      return;
    }
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (labels[key]) {
      event.preventDefault();
      press(labels[key]);
    } else if (key === "n" || key === "ArrowRight") {
      event.preventDefault();
      follow("next-link");
    } else if (key === "p" || key === "ArrowLeft") {
      event.preventDefault();
      follow("prev-link");
    } else if (key === "g") {
      var jump = document.getElementById("jump-input");
      if (jump) {
        event.preventDefault();
        jump.focus();
      }
    } else if (key === "l") {
      event.preventDefault();
      follow("list-link");
    }
  });
})();
