// Buttons that act on the saved object (Publish) go off as soon as the page's form is edited:
// what they would act on is then no longer what the page shows. The server refuses them too
// (the digest they send is cleared here), so this is the courtesy, not the guard.
"use strict";
document.querySelectorAll("form[data-toolhub-only-as-shown]").forEach((buttonForm) => {
  const pageForm = document.getElementById(buttonForm.dataset.toolhubOnlyAsShown);
  if (!pageForm) {
    return;
  }
  const holdEdits = () => {
    buttonForm.querySelector("input[name=shown]").value = "";
    buttonForm.querySelector("button[type=submit]").disabled = true;
    buttonForm.querySelector(".toolhub-unsaved-note").hidden = false;
  };
  pageForm.addEventListener("input", holdEdits, { once: true });
  pageForm.addEventListener("change", holdEdits, { once: true });
});
