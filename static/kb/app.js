/* errorkb page behaviour. Loaded with the CSP nonce; no eval, no inline handlers.
   - paste page: Ctrl/Cmd+Enter matches now; a file (chosen, dropped, or a paste too large
     for the text field) is read into the textarea when small, else sent as a log upload;
   - copy buttons on code blocks;
   - htmx errors: 400, 413 and 429 carry a friendly fragment and swap (templates/kb/_htmx_head.html);
     other error statuses (403, 404, 5xx) do not, so show a plain message in the request's
     target instead of failing silently (docs/reliability.md#r28-friendly-failure). */
(function () {
  "use strict";

  function byteLength(text) {
    return new Blob([text]).size;
  }

  function formatBytes(n) {
    if (n >= 1048576) return (n / 1048576).toFixed(1) + " MB";
    if (n >= 1024) return Math.round(n / 1024) + " KB";
    return n + " bytes";
  }

  function showNote(text) {
    var note = document.getElementById("paste-note");
    if (!note) return;
    note.textContent = text;
    note.hidden = !text;
  }

  function submitPaste(form) {
    if (window.htmx) {
      window.htmx.trigger(form, "kb:submit");
    } else {
      form.requestSubmit();
    }
  }

  function setupPaste() {
    var form = document.getElementById("paste-form");
    if (!form) return;
    var textarea = document.getElementById("paste-text");
    var fileInput = document.getElementById("log-file");
    var zone = document.getElementById("drop-zone");
    var maxPaste = parseInt(form.dataset.maxPaste, 10) || 262144;
    var maxLog = parseInt(form.dataset.maxLog, 10) || 67108864;

    // The text field's maxlength would silently cut a long paste: send those as a log.
    textarea.removeAttribute("maxlength");

    function useFile(file) {
      if (!file) return;
      if (file.size > maxLog) {
        fileInput.value = "";
        showNote(file.name + " is " + formatBytes(file.size) + "; the limit is " +
          formatBytes(maxLog) + ". Upload the part of the log around the error.");
        return;
      }
      if (file.size <= maxPaste) {
        file.text().then(function (text) {
          fileInput.value = "";
          textarea.value = text;
          showNote("Loaded " + file.name + " (" + formatBytes(file.size) + ").");
          submitPaste(form);
        }, function () {
          showNote("Could not read " + file.name + ".");
        });
        return;
      }
      var dt = new DataTransfer();
      dt.items.add(file);
      fileInput.files = dt.files;
      textarea.value = "";
      showNote("Matching " + file.name + " (" + formatBytes(file.size) + ") as a log file.");
      submitPaste(form);
    }

    textarea.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        submitPaste(form);
      }
    });
    textarea.addEventListener("input", function () {
      if (fileInput.value) {
        fileInput.value = "";
        showNote("");
      }
    });
    textarea.addEventListener("paste", function (e) {
      var text = e.clipboardData && e.clipboardData.getData("text/plain");
      if (text && byteLength(textarea.value) + byteLength(text) > maxPaste) {
        e.preventDefault();
        useFile(new File([textarea.value + text], "pasted text", { type: "text/plain" }));
      }
    });
    fileInput.addEventListener("change", function () {
      useFile(fileInput.files && fileInput.files[0]);
    });
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (e) {
        if (e.dataTransfer && Array.prototype.indexOf.call(e.dataTransfer.types, "Files") >= 0) {
          e.preventDefault();
          zone.classList.add("dragging");
        }
      });
    });
    ["dragleave", "dragend"].forEach(function (name) {
      zone.addEventListener(name, function () { zone.classList.remove("dragging"); });
    });
    zone.addEventListener("drop", function (e) {
      zone.classList.remove("dragging");
      if (e.dataTransfer && e.dataTransfer.files && e.dataTransfer.files.length) {
        e.preventDefault();
        useFile(e.dataTransfer.files[0]);
      }
    });
  }

  function setupCopyButtons(root) {
    var buttons = (root || document).querySelectorAll("button.copy-btn[data-copy-target]");
    Array.prototype.forEach.call(buttons, function (button) {
      if (!navigator.clipboard) return;  // insecure context: leave the button hidden
      button.hidden = false;
    });
  }

  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button.copy-btn[data-copy-target]");
    if (!button) return;
    var target = document.getElementById(button.dataset.copyTarget);
    if (!target) return;
    var code = target.querySelector("code") || target;
    // Line numbers are aria-hidden spans: copy only the code.
    var clone = code.cloneNode(true);
    Array.prototype.forEach.call(clone.querySelectorAll(".ln, .visually-hidden"), function (n) {
      n.remove();
    });
    navigator.clipboard.writeText(clone.textContent).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    }, function () {
      button.textContent = "Copy failed";
    });
  });

  function errorMessage(status) {
    if (status === 0) return "Could not reach the server. Check your connection and try again.";
    if (status === 403) return "Your session expired. Reload the page and try again.";
    if (status === 404) return "Not found. Reload the page.";
    return "Something went wrong on our side. Please try again in a moment.";
  }

  function showRequestError(e, status) {
    var target = (e.detail && e.detail.target) || document.getElementById("results");
    if (!target) return;
    var box = document.createElement("div");
    box.className = "notice notice-error";
    box.setAttribute("role", "alert");
    var p = document.createElement("p");
    p.textContent = errorMessage(status);
    box.appendChild(p);
    target.replaceChildren(box);
  }

  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail && e.detail.xhr;
    showRequestError(e, xhr ? xhr.status : 500);
  });
  document.addEventListener("htmx:sendError", function (e) { showRequestError(e, 0); });
  document.addEventListener("htmx:load", function (e) { setupCopyButtons(e.target); });

  function init() {
    setupPaste();
    setupCopyButtons(document);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
