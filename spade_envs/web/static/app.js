// spade-envs corpus browser: small progressive enhancements. Served from /static so the
// Content-Security-Policy can forbid every inline script. Pages work without it.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // Copy buttons: <button data-copy="ID"> copies the value or text of element ID.
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      const text = "value" in source ? source.value : source.textContent;
      try {
        await navigator.clipboard.writeText(text);
      } catch (err) {
        source.select && source.select();
        document.execCommand("copy");
      }
      const label = button.textContent;
      button.textContent = "Copied";
      setTimeout(() => { button.textContent = label; }, 1200);
    });
  }

  // Filters: a changed choice applies at once (the Apply button still works without JS).
  const filters = document.getElementById("filters");
  if (filters) {
    for (const select of filters.querySelectorAll("select")) {
      select.addEventListener("change", () => filters.requestSubmit());
    }
  }

  // Play: Enter sends the action, Shift+Enter adds a line; keep the newest turn in view.
  const action = document.getElementById("action");
  if (action) {
    action.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        action.form.requestSubmit();
      }
    });
    action.focus();
  }
  // Disable a form's buttons once sent, so a double click is not two moves.
  for (const form of document.querySelectorAll("form[method=post]")) {
    form.addEventListener("submit", () => {
      setTimeout(() => {
        for (const b of form.querySelectorAll("button")) b.disabled = true;
      }, 0);
    });
  }
});
