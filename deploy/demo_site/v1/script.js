// Runs in the browser from the archive, and tells which logo and style sheet it found there.
window.addEventListener("load", function () {
  var logo = document.getElementById("logo");
  var style = getComputedStyle(document.body).getPropertyValue("--style-sheet").trim();
  document.getElementById("checks").textContent =
    "script.js ran; logo.png is " + logo.naturalWidth + "x" + logo.naturalHeight +
    "; style.css " + (style || "missing");
});
