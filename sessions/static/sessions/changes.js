// The Changes page (sessions/_changes.html) is sent anew when the session's branch moves:
// the files a person opened or closed stay as they were, by path.
(function () {
  let chosen = null;
  document.body.addEventListener("htmx:beforeSwap", (event) => {
    if (event.detail.target.id !== "session-changes") return;
    chosen = new Map([...event.detail.target.querySelectorAll("details.change-file")].map((d) => [d.dataset.path, d.open]));
  });
  document.body.addEventListener("htmx:afterSwap", () => {
    if (!chosen) return;
    document.querySelectorAll("#session-changes details.change-file").forEach((d) => {
      if (chosen.has(d.dataset.path)) d.open = chosen.get(d.dataset.path);
    });
    chosen = null;
  });
})();
