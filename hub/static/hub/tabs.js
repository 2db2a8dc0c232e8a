// Tabs: a [role=tablist] of [role=tab] buttons, each naming its [role=tabpanel] with
// aria-controls (arrow keys move between them, as the ARIA pattern has it). The tab a
// person chose is remembered per tablist id for the page's life, so a region htmx
// reloads (hx-swap="outerHTML") comes back on the tab that was open.
(() => {
  "use strict";

  const chosen = new Map();

  function select(tab) {
    const list = tab.closest("[role=tablist]");
    for (const other of list.querySelectorAll("[role=tab]")) {
      const on = other === tab;
      other.setAttribute("aria-selected", String(on));
      other.tabIndex = on ? 0 : -1;
      const panel = document.getElementById(other.getAttribute("aria-controls"));
      if (panel) panel.hidden = !on;
    }
    if (list.id) chosen.set(list.id, tab.id);
  }

  function restore() {
    for (const [listId, tabId] of chosen) {
      const list = document.getElementById(listId);
      const tab = document.getElementById(tabId);
      if (list && tab && list.contains(tab) && tab.getAttribute("aria-selected") !== "true") select(tab);
    }
  }

  document.addEventListener("click", (event) => {
    const tab = event.target.closest("[role=tab]");
    if (tab) select(tab);
  });

  const MOVES = { ArrowLeft: -1, ArrowRight: 1 };
  document.addEventListener("keydown", (event) => {
    const tab = event.target.closest && event.target.closest("[role=tab]");
    if (!tab || !(event.key in MOVES || event.key === "Home" || event.key === "End")) return;
    const tabs = [...tab.closest("[role=tablist]").querySelectorAll("[role=tab]")];
    const at = tabs.indexOf(tab);
    const next = event.key === "Home" ? 0 : event.key === "End" ? tabs.length - 1
      : (at + MOVES[event.key] + tabs.length) % tabs.length;
    select(tabs[next]);
    tabs[next].focus();
    event.preventDefault();
  });

  document.addEventListener("htmx:afterSwap", restore);
})();
