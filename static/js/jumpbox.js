/* The header's jump box: "/" anywhere outside a text field focuses it, Escape leaves it.
 * As you type it suggests what the search finds (GET /api/search/, the same search the page
 * uses, scoped by role); arrows move through the suggestions, Enter opens one. Submitting the
 * box goes to /search/, which redirects to the object when the query names exactly one. */
(() => {
  "use strict";
  const box = document.getElementById("jumpbox");
  if (!box) return;
  const form = box.form;
  const list = document.createElement("ul");
  list.id = "jumpbox-suggestions";
  list.className = "jumpbox-suggestions";
  list.setAttribute("role", "listbox");
  list.setAttribute("aria-label", "Suggestions");
  list.hidden = true;
  form.appendChild(list);
  box.setAttribute("role", "combobox");
  box.setAttribute("aria-controls", list.id);
  box.setAttribute("aria-autocomplete", "list");
  box.setAttribute("aria-expanded", "false");

  const typing = (element) => element && (element.isContentEditable ||
    ["INPUT", "TEXTAREA", "SELECT"].includes(element.tagName));
  document.addEventListener("keydown", (event) => {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    event.preventDefault();
    box.focus();
    box.select();
  });

  let active = -1;
  let pending = null;
  let asked = "";
  const options = () => Array.from(list.querySelectorAll("[role=option]"));
  const close = () => {
    list.hidden = true;
    active = -1;
    box.setAttribute("aria-expanded", "false");
    box.removeAttribute("aria-activedescendant");
  };
  const highlight = (index) => {
    const items = options();
    if (!items.length) return;
    active = (index + items.length) % items.length;
    items.forEach((item, position) => item.setAttribute("aria-selected", String(position === active)));
    box.setAttribute("aria-activedescendant", items[active].id);
  };
  const show = (query, results) => {
    list.replaceChildren();
    results.slice(0, 8).forEach((hit, position) => {
      const item = document.createElement("li");
      item.id = `jumpbox-option-${position}`;
      item.setAttribute("role", "option");
      item.setAttribute("aria-selected", "false");
      item.dataset.url = hit.url;
      const label = document.createElement("span");
      label.className = "suggestion-label";
      label.textContent = hit.label;
      const detail = document.createElement("span");
      detail.className = "suggestion-detail";
      detail.textContent = `${hit.kind} · ${hit.detail}`;
      item.append(label, detail);
      item.addEventListener("mousedown", (event) => {  // before the box's blur closes the list
        event.preventDefault();
        window.location.assign(hit.url);
      });
      list.appendChild(item);
    });
    if (!results.length) {
      const item = document.createElement("li");
      item.className = "suggestion-none";
      item.textContent = `Nothing found for “${query}”`;
      list.appendChild(item);
    }
    active = -1;
    list.hidden = false;
    box.setAttribute("aria-expanded", "true");
  };
  const suggest = async () => {
    const query = box.value.trim();
    if (query.length < 2) { close(); return; }
    if (query === asked) return;
    asked = query;
    try {
      const response = await fetch(`/api/search/?q=${encodeURIComponent(query)}`, {
        credentials: "same-origin", headers: { Accept: "application/json" },
      });
      if (box.value.trim() !== query) return;  // a newer query is on its way
      if (!response.ok) { close(); return; }
      const body = await response.json();
      show(query, body.results || []);
    } catch (error) {
      close();
    }
  };
  box.addEventListener("input", () => {
    clearTimeout(pending);
    pending = setTimeout(suggest, 150);
  });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      if (!list.hidden) { close(); } else { box.blur(); }
    } else if (event.key === "ArrowDown" && !list.hidden) {
      event.preventDefault();
      highlight(active + 1);
    } else if (event.key === "ArrowUp" && !list.hidden) {
      event.preventDefault();
      highlight(active - 1);
    } else if (event.key === "Enter" && active >= 0) {
      event.preventDefault();
      window.location.assign(options()[active].dataset.url);
    }
  });
  box.addEventListener("blur", () => setTimeout(close, 100));
  box.addEventListener("focus", () => { asked = ""; });
})();
