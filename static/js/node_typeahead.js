/* Type-ahead for a node field (input[data-node-typeahead]): as you type, the nodes the portal's
 * search finds (GET /api/search/, the jump box's search: it takes gpu12 for gpu012) fill the
 * field's datalist. The server still checks the hostname. */
(() => {
  "use strict";
  document.querySelectorAll("input[data-node-typeahead]").forEach((input) => {
    const list = document.getElementById(input.getAttribute("list"));
    if (!list) return;
    let pending = null;
    let asked = "";
    const suggest = async () => {
      const query = input.value.trim();
      if (query.length < 2 || query === asked) return;
      asked = query;
      try {
        const response = await fetch(`/api/search/?q=${encodeURIComponent(query)}`, {
          credentials: "same-origin", headers: { Accept: "application/json" },
        });
        if (!response.ok || input.value.trim() !== query) return;
        const body = await response.json();
        const names = (body.results || []).filter((hit) => hit.kind === "node")
          .map((hit) => hit.label);
        list.replaceChildren(...names.map((name) => {
          const option = document.createElement("option");
          option.value = name;
          return option;
        }));
      } catch (error) {
        /* no suggestions; typing still works */
      }
    };
    input.addEventListener("input", () => {
      clearTimeout(pending);
      pending = setTimeout(suggest, 150);
    });
  });
})();
