/* The header's jump box: "/" anywhere outside a text field focuses it, Escape leaves
 * it. Submitting goes to /search/, which redirects to the object when the query names one. */
(() => {
  "use strict";
  const box = document.getElementById("jumpbox");
  if (!box) return;
  const typing = (element) => element && (element.isContentEditable ||
    ["INPUT", "TEXTAREA", "SELECT"].includes(element.tagName));
  document.addEventListener("keydown", (event) => {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    event.preventDefault();
    box.focus();
    box.select();
  });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Escape") box.blur();
  });
})();
