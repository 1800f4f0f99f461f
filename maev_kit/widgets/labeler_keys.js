// Keyboard shortcuts for the maev-kit Labeler and FactReviewer (an anywidget front end).
//
// Keys pressed while the focus is inside the widget (its buttons, its text, the widget box
// itself: the nearest element of class `root_class`) are sent to the kernel and stopped
// *before* JupyterLab sees them: in command mode JupyterLab binds 1-6 (cell -> Markdown
// heading), arrows and others. Typing in a text field
// is left alone, except that Enter there sends {"type": "submit", "fields": {placeholder:
// value}} when `submit_on_enter` is set. The handler listens on `window` in the capture phase, the first place an event
// reaches, and is removed when the view goes away.
function render({ model, el }) {
  el.classList.add("maev-keys");
  const hint = document.createElement("div");
  hint.className = "maev-keys-hint";
  hint.textContent = model.get("hint");
  el.appendChild(hint);
  const keys = new Set(model.get("shortcuts"));
  const rootClass = model.get("root_class") || "maev-labeler";

  function root() {
    return el.closest("." + rootClass);
  }
  // Make the whole labeler focusable, so a click anywhere in it gives it the keyboard. The
  // view may not be in the page yet when render runs: retry for a few frames.
  let tries = 0;
  function makeFocusable() {
    const r = root();
    if (r) {
      if (!r.hasAttribute("tabindex")) r.setAttribute("tabindex", "0");
      r.style.outline = "none";
    } else if (tries++ < 120) {
      requestAnimationFrame(makeFocusable);
    }
  }
  makeFocusable();

  function onKeydown(event) {
    const r = root();
    if (!r || !(r.contains(event.target) || r.contains(document.activeElement))) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const t = event.target;
    const tag = t && t.tagName ? t.tagName.toLowerCase() : "";
    if (tag === "input" || tag === "textarea" || (t && t.isContentEditable)) {
      if (event.key === "Escape" && t.blur) { t.blur(); r.focus(); }
      if (event.key === "Enter" && model.get("submit_on_enter")) {
        event.preventDefault();
        event.stopPropagation();
        // the fields' values travel with the message: their own updates may still be queued
        const fields = {};
        r.querySelectorAll("input[placeholder], textarea[placeholder]").forEach((i) => {
          fields[i.placeholder] = i.value;
        });
        model.send({ type: "submit", fields });
      }
      return;
    }
    if (!keys.has(event.key)) return;
    event.preventDefault();
    event.stopPropagation();
    event.stopImmediatePropagation();
    if (event.repeat) return;
    model.send({ type: "key", key: event.key });
  }
  window.addEventListener("keydown", onKeydown, true);
  return () => window.removeEventListener("keydown", onKeydown, true);
}
export default { render };
